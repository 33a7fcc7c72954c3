// The runtime's status for the reader, in every [data-mha-status] element of every page: not started (with
// "Load live Python" where the connection asks to save data; in a widget ON_REQUEST, its own words as built),
// downloading with the bytes that arrived, ready, or failed with the reason and a Retry button. It also holds the
// two status-related steps the widgets share.
import { downloadMB, ON_REQUEST, onStatus, retry, savesData, start } from "./bridge.js";
import { clip, firstControl, setHidden, showMessage } from "./dom.js";
import { mountEach } from "./page.js";

function button(label, onClick) {
  const el = document.createElement("button");
  el.type = "button";
  el.className = "mha-status__button";
  el.textContent = label;
  el.addEventListener("click", onClick);
  return el;
}

function mount(el) {
  const asBuilt = el.closest(ON_REQUEST) && el.textContent; // what its widget computes without Python, and when it asks
  const text = document.createElement("span");
  const load = button(`Load live Python (${downloadMB()} MB)`, start);
  const again = button("Retry", retry);
  el.replaceChildren(text, load, again);
  whileShown(el, ({ state, message }) => {
    el.dataset.state = state;
    text.textContent = (state === "idle" && !savesData() && asBuilt) || message;
    // a button that hides itself once pressed hands the focus to the widget's first control, not to the page
    const home = () => firstControl(el.closest("[data-mha-widget]") ?? document.body);
    setHidden(load, !(state === "idle" && savesData()), home);
    setHidden(again, state !== "error", home);
  });
}

mountEach("[data-mha-status]", mount);

/** listener(status) while root is on the page (onStatus, dropped once the reader has left root's page). */
export function whileShown(root, listener) {
  let unsubscribe = null;
  unsubscribe = onStatus((status) => {
    if (root.isConnected) listener(status);
    else unsubscribe?.();
  });
}

/** After a failed start, the Retry that brings Python up recomputes what the reader last asked for. */
export function recomputeOnReady(root, recompute) {
  whileShown(root, ({ state }) => state === "ready" && root.dataset.state === "error" && recompute());
}

const IGNORED_CHARS = 40; // of each entry the note shows: a link may carry anything, of any length

/** Note the link's entries that were not used (ignored: ["key=value", ...]). */
export function noteIgnored(root, ignored) {
  const shown = ignored.map((entry) => clip(entry, IGNORED_CHARS));
  if (shown.length) showMessage(root, "note", `Ignored in the link: ${shown.join(", ")}.`);
}
