// One life cycle for every live widget, whatever its work (STYLE.md 12: TanStack Query's "latest request wins",
// RxJS's switchMap, Observable's generator cells). live(root, {args, ask, ...}) returns request(control); the
// work ask(args) does is one of:
//   one call   a Promise of the answer: call(fn, args) to the page's Python by default
//   a run      an async generator: each yield is a step, its value the progress the widget shows meanwhile (a
//              string goes into the root's [data-output="progress"], an object is a view bound into the slots);
//              its return value is the answer. A newer request ends it at its next yield (its finally blocks
//              run: where the widget tells Python to drop the run), and the newest then starts.
//   a stream   the same generator, whose yields are partial answers, drawn as they come by the widget's
//              progress() (training's slices); Stop ends it between two
//   a fetch    a run that follows shared(work) (latest.js): an asset fetched once, or the model's download,
//              with its byte progress; a run ended early leaves it going for the next one to follow
//       const model = shared((report) => download(folder, store, files, (arrived, total) => report(...)));
//       live(root, {
//         args: () => ({ text: text.value }),
//         ask: async function* ({ text }) {
//           yield* model();                                     // the model's files, fetched once: their bytes
//           const { run, view } = yield* calls("real_model_start", { text }, "real_model_advance");  // each layer's
//           const more = await call("real_model_more", { run }); // words; then any call on the run it made
//           return { ...view, outputs: { ...view.outputs, ...more.outputs } };
//         },
//       });
// Whatever the work, the same behaviour: the root's data-state says where it is (as built: initial or idle;
// busy; live; error). What no longer matches the controls is marked stale (data-stale="true" on each
// [data-results]): at once while the Python the work waits for is not ready, after STALE_AFTER_MS otherwise (no
// flash on a quick answer), and after an error. An error is shown in the error slot ([data-message="error"])
// nearest the control that caused it, in the controls' words, and cleared when the next request starts. A failure the
// widget's own Retry (its button[name="retry"]) can mend shows that button instead of the widget's busy
// controls (never both); Retry asks again, and so does the status line's Retry once it has brought Python up.
// While busy, the widget's busy controls (Load, Run, Train) are off and its Stop (if any) on; the focus never
// falls to the page: a control that disables or hides itself hands it to the one that now acts (Stop while
// busy, the control pressed once settled, else the widget's home control).
import { AssetError } from "./asset.js";
import { call, Refusal, retry as restartPython } from "./bridge.js";
import { bind } from "./bind.js";
import { firstControl, output, setData, setDisabled, setHidden, setText } from "./dom.js";
import { latestWins } from "./latest.js";
import { recomputeOnReady } from "./status.js";

export { reported, shared } from "./latest.js";
export { setDisabled } from "./dom.js";

const ERROR_SLOTS = '[data-message="error"]';
const STALE_AFTER_MS = 250; // with Python ready an answer takes tens of ms

/** What the controls hold cannot be asked (args() throws it): its message is shown as it is, no call made. */
export class InputError extends Error {}

/** Input the controls or Python refused: said as it is, without Retry (asking again cannot help). */
const refused = (error) => error instanceof InputError || error instanceof Refusal;

/** The error slot (one of root's slots) nearest el: the first that el's closest ancestor holding one holds. */
function errorSlotNear(root, slots, el) {
  for (let at = el; at && root.contains(at); at = at.parentElement) {
    const slot = at.querySelector(slots);
    if (slot) return slot;
  }
  return root.querySelector(slots);
}

/** Show text in slot (hidden when empty); clear every other of root's slots. */
function showError(root, slots, slot, text) {
  for (const el of root.querySelectorAll(slots)) {
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

/** A run of the bridge's calls, for ask: start(args) answers {run, progress, ...}, then advance({run}) answers each
 * next step ({progress} while there are more, {view} at the last), and each progress (Python's words for the step
 * that runs next) is yielded. Returns the start's answer and the last step's together: {run, view, ...}. A newer
 * request ends it between two calls; Python keeps one run of a kind and drops the older when a newer starts. */
export async function* calls(start, args, advance) {
  const started = await call(start, args);
  let step = started;
  while (!step.view) {
    yield step.progress;
    step = await call(advance, { run: started.run });
  }
  return { ...started, ...step };
}

// How many of a root's life cycles are working: a widget holding several (the real model's text, position and
// knock-out) stays busy until the last of them settles.
const working = new WeakMap();
const count = (root, by) => working.set(root, (working.get(root) ?? 0) + by).get(root);

const pythonReady = () => document.documentElement.dataset.mhaRuntime === "ready";

/** Make root live: returns request(control), which asks for args() and shows the answer; request.stop() ends a run
 * at its next step.
 *   fn        the bridge's view function; args() its arguments read from the controls now (throws InputError
 *             when they cannot be asked)
 *   ask       ask(args): the work (above; call(fn, args) by default)
 *   show      show(answer, args): what to do with an answer (bind it into root by default)
 *   progress  progress(value, args): each step of a run (by default, a string into the output progressSlot
 *             names, [data-output="progress"] by default, which is emptied once settled; and an object bound)
 *   failure   the reader's words for a failure: a start that the error's message follows (by default the root's
 *             data-failure, the template's words, else "Could not compute this"), or failure(error, args) for
 *             words of its own; a refusal (InputError, or Python's Refusal) is said as it is
 *   settled   settled(error): after the latest request is answered (error null), stopped or refused
 *   marked    marked(stale): each time the results are marked stale or not (a widget that says why)
 *   busy      the controls that start work (Load, Run, Train): off while busy, hidden while Retry is shown
 *   stop      the control that stops a run: on only while busy; pressed, it calls stopping(), which ends the run at
 *             its next step by default (request.stop()); a call that cannot wait for a step (the reader's code in
 *             an endless loop) is ended the widget's way, and its answer says so
 *   home      where the focus goes when nothing else acts (the widget's first usable control by default)
 *   python    python(args): whether the work for args waits for the page's Python (by default it does)
 *   stale     false for work whose controls do not describe the results shown (the settings of a run to come):
 *             its requests leave the results' stale marks as they are
 *   errors    the selector of this work's error slots ('[data-message="error"]' by default), for a second life
 *             cycle inside a widget that says its errors apart
 *   retry     the Retry button this work's failures show (the widget's button[name="retry"] by default; null for
 *             a second life cycle whose failures the reader mends in its own controls) */
export function live(root, {
  fn, args, ask = (asked) => call(fn, asked), show = (view) => bind(root, view), progress, failure,
  settled = () => {}, marked = () => {}, busy = [], stop = null, stopping = null, home = null, python = () => true,
  stale = true, errors = ERROR_SLOTS, retry = root.querySelector('button[name="retry"]'), progressSlot = "progress",
}) {
  const progressOutput = output(root, progressSlot);
  let said = false; // a run's words are in the progress slot, to be emptied once settled
  const step = progress ?? ((value) => {
    if (typeof value !== "string") return bind(root, value);
    said = true;
    setText(progressOutput, value);
  });
  const mark = (marking) => {
    if (!stale) return;
    markStale(root, marking);
    marked(marking);
  };
  let cause = root;
  let asked = null;
  let staleTimer = null;
  let failed = false; // this request's last work failed (a widget may hold several): the one Retry asks again
  let running = false; // this life cycle counts among its root's working ones
  const homeControl = () => home ?? firstControl(root);
  const say = (error) => {
    if (!error) return "";
    if (refused(error) || error instanceof AssetError) return error.message; // already the reader's words
    if (typeof failure === "function") return failure(error, asked);
    return `${failure ?? root.dataset.failure ?? "Could not compute this"}: ${error.message}`;
  };
  let replaced = []; // the busy controls Retry stands in for
  /** Busy or not: the controls that start work off and Stop on, or the reverse; after a failure Retry can mend,
   * Retry in the place of the busy controls. */
  const setBusy = (on, failed = false) => {
    if (on && stop) stop.disabled = false; // first: the focus goes there from the control pressed
    setDisabled(busy, on, stop, homeControl);
    if (!on && stop) setDisabled([stop], true, cause, ...busy, homeControl);
    if (retry && failed) {
      retry.hidden = false;
      replaced = busy.filter((control) => !control.hidden);
      for (const control of replaced) setHidden(control, true, retry);
    } else {
      for (const control of replaced) control.hidden = false;
      replaced = [];
      setHidden(retry, true, cause, ...busy, homeControl);
    }
  };
  const request = latestWins({
    ask: () => {
      asked = args();
      return ask(asked);
    },
    step: (value) => step(value, asked),
    show: (answer, latest) => {
      if (latest) {
        clearTimeout(staleTimer);
        mark(false);
      }
      show(answer, asked);
    },
    settle: (error) => {
      clearTimeout(staleTimer);
      showError(root, errors, errorSlotNear(root, errors, cause), say(error));
      if (error) mark(true);
      if (said) setText(progressOutput, "");
      said = false;
      failed = Boolean(error) && !refused(error);
      const others = running ? count(root, -1) : working.get(root) ?? 0;
      running = false;
      setData(root, "state", error ? "error" : others ? "busy" : "live");
      setBusy(false, failed);
      settled(error);
    },
  });
  recomputeOnReady(root, () => failed && request());
  retry?.addEventListener("click", () => {
    if (document.documentElement.dataset.mhaRuntime === "error") restartPython();
    start(cause);
  });
  stop?.addEventListener("click", () => (stopping ?? request.stop)());
  function start(control = root) {
    cause = control;
    if (!running) count(root, 1);
    running = true;
    setData(root, "state", "busy");
    setBusy(true);
    const { args: now, error } = tryArgs(args); // the controls' words at once, before any answer; an old error goes
    showError(root, errors, errorSlotNear(root, errors, cause), say(error));
    clearTimeout(staleTimer);
    if (error || (!pythonReady() && python(now))) mark(true);
    else staleTimer = setTimeout(() => mark(true), STALE_AFTER_MS);
    return request();
  }
  start.stop = request.stop;
  return start;
}
