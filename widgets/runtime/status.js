// The runtime's status for the reader, in every [data-mha-status] element: starting, ready, or
// failed with the reason and a Retry button. Importing this module mounts it once in the page.
import { onStatus, retry } from "./bridge.js";

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

/** Mount the status into each [data-mha-status] element under root. */
export function mountStatus(root = document) {
  root.querySelectorAll("[data-mha-status]").forEach(mount);
}

mountStatus();
