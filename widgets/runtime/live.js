// One life cycle for every live widget: a request for the controls' values goes to Python through
// latestWins; the root's data-state says where it is (initial, as built; busy; live; error); an error is
// shown in the error slot nearest the control that caused it, and what it leaves on the page is marked
// stale (data-stale on each [data-results]); after Retry brings Python up, the last request is made again.
import { call } from "./bridge.js";
import { bind } from "./bind.js";
import { setData } from "./dom.js";
import { latestWins } from "./latest.js";
import { recomputeOnReady } from "./status.js";

const ERROR_SLOT = '[data-message="error"]';

/** The error slot nearest el: the first that el's closest ancestor holding one holds. */
export function errorSlotNear(root, el) {
  for (let at = el; at && root.contains(at); at = at.parentElement) {
    const slot = at.querySelector(ERROR_SLOT);
    if (slot) return slot;
  }
  return root.querySelector(ERROR_SLOT);
}

/** Show text in slot (hidden when empty); clear every other error slot of root. */
function showError(root, slot, text) {
  for (const el of root.querySelectorAll(ERROR_SLOT)) {
    const shown = el === slot ? text : "";
    el.hidden = !shown;
    if (el.textContent !== shown) el.textContent = shown;
  }
}

function markStale(root, stale) {
  for (const el of root.querySelectorAll("[data-results]")) setData(el, "stale", String(stale));
}

/** Make root live: returns request(control), which asks fn with args() and binds the view it answers.
 *   fn       the bridge's view function; args() its arguments, read from the controls now
 *   show     what to do with a view (bind it into root by default)
 *   failure  the reader's words for a failed call ("Could not compute this" by default) */
export function live(root, { fn, args, show = (view) => bind(root, view), failure = "Could not compute this" }) {
  let cause = root;
  const request = latestWins({
    ask: () => call(fn, args()),
    show: (view) => show(view),
    settle: (error) => {
      showError(root, errorSlotNear(root, cause), error ? `${failure}: ${error.message}` : "");
      markStale(root, Boolean(error));
      root.dataset.state = error ? "error" : "live";
    },
  });
  recomputeOnReady(root, () => request());
  return (control = root) => {
    cause = control;
    root.dataset.state = "busy";
    return request();
  };
}
