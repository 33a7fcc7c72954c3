// One life cycle for every live widget. A request for the controls' values goes to Python through
// latestWins (latest.js); the root's data-state says where it is (initial, as built; busy; live; error).
// What no longer matches the controls is marked stale (data-stale="true" on each [data-results]): at once
// while Python is not ready, after STALE_AFTER_MS while it computes (no flash on a quick answer), and
// after an error. An error is shown in the error slot ([data-message="error"]) nearest the control that
// caused it, in the controls' words; after Retry brings Python up, the last request is made again.
import { call } from "./bridge.js";
import { bind } from "./bind.js";
import { setData } from "./dom.js";
import { latestWins } from "./latest.js";
import { recomputeOnReady } from "./status.js";

const ERROR_SLOT = '[data-message="error"]';
const STALE_AFTER_MS = 250; // with Python ready an answer takes tens of ms

/** What the controls hold cannot be asked (args() throws it): its message is shown as it is, no call made. */
export class InputError extends Error {}

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

/** Mark every [data-results] of root stale or not. */
export function markStale(root, stale) {
  for (const el of root.querySelectorAll("[data-results]")) setData(el, "stale", String(stale));
}

/** args() as {args}, or {error} when it throws an InputError. */
function tryArgs(args) {
  try {
    return { args: args() };
  } catch (error) {
    if (error instanceof InputError) return { error };
    throw error;
  }
}

/** Disable or enable controls; when one that holds the focus is disabled, the focus moves to fallback (the
 * control that now acts, e.g. Stop once Train is pressed) instead of falling to the page, where its ring vanishes. */
export function setDisabled(controls, disabled, fallback) {
  const focused = [...controls].includes(document.activeElement);
  for (const control of controls) control.disabled = disabled;
  if (focused && disabled && fallback && !fallback.disabled) fallback.focus({ focusVisible: true });
}

/** Make root live: returns request(control), which asks fn with args() and shows the view it answers.
 *   fn       the bridge's view function; args() its arguments read from the controls now (throws InputError
 *            when they cannot be asked)
 *   ask      ask(args): the answer's Promise, for a widget whose answer takes more than one call (fn's by default)
 *   show     show(view, args): what to do with an answer (bind it into root by default)
 *   failure  the reader's words for a failed call: a start ("Could not compute this" by default) that the
 *            error's message follows, or failure(error, args) for words of its own
 *   settled  settled(error): after the latest request is answered (error null) or refused
 *   marked   marked(stale): each time the results are marked stale or not (a widget that says why) */
export function live(root, {
  fn, args, ask = (asked) => call(fn, asked), show = (view) => bind(root, view), failure, settled = () => {},
  marked = () => {},
}) {
  const mark = (stale) => {
    markStale(root, stale);
    marked(stale);
  };
  let cause = root;
  let asked = null;
  let staleTimer = null;
  const say = (error) => {
    if (!error) return "";
    if (error instanceof InputError) return error.message;
    if (typeof failure === "function") return failure(error, asked);
    return `${failure ?? "Could not compute this"}: ${error.message}`;
  };
  const request = latestWins({
    ask: () => {
      asked = args();
      return ask(asked);
    },
    show: (view, latest) => {
      if (latest) {
        clearTimeout(staleTimer);
        mark(false);
      }
      show(view, asked);
    },
    settle: (error) => {
      clearTimeout(staleTimer);
      showError(root, errorSlotNear(root, cause), say(error));
      if (error) mark(true);
      root.dataset.state = error ? "error" : "live";
      settled(error);
    },
  });
  recomputeOnReady(root, () => request());
  return (control = root) => {
    cause = control;
    root.dataset.state = "busy";
    const { error } = tryArgs(args); // the controls' words at once, before any answer
    showError(root, errorSlotNear(root, cause), say(error));
    clearTimeout(staleTimer);
    const ready = document.documentElement.dataset.mhaRuntime === "ready";
    if (error || !ready) mark(true);
    else staleTimer = setTimeout(() => mark(true), STALE_AFTER_MS);
    return request();
  };
}
