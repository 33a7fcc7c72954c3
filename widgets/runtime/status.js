// The runtime's status for the reader, in every [data-mha-status] element: starting, ready, or
// failed with the reason and a Retry button. Importing this module mounts it once in the page; it also
// holds the two status-related steps both widgets take.
import { onStatus, retry } from "./bridge.js";
import { showMessage } from "./dom.js";

function mount(el) {
  if (el.dataset.mounted) return;
  el.dataset.mounted = "true";
  const text = document.createElement("span");
  const button = document.createElement("button");
  button.type = "button";
  button.className = "mha-status__retry";
  button.textContent = "Retry";
  button.addEventListener("click", retry);
  el.replaceChildren(text, button);
  onStatus(({ state, message }) => {
    el.dataset.state = state;
    text.textContent = message;
    button.hidden = state !== "error";
  });
}

document.querySelectorAll("[data-mha-status]").forEach(mount);

/** After a failed start, the Retry that brings Python up recomputes what the reader last asked for. */
export function recomputeOnReady(root, recompute) {
  onStatus(({ state }) => state === "ready" && root.dataset.state === "error" && recompute());
}

/** Note the link's entries that were not used (ignored: ["key=value", ...]). */
export function noteIgnored(root, ignored) {
  if (ignored.length) showMessage(root, "note", `Ignored in the link: ${ignored.join(", ")}.`);
}
