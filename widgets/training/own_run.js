// The reader's own run: a fresh model trained in the page's Python from the form's settings, a stream of slices of
// at most SLICE_MS (the page stays responsive) in the one life cycle (runtime/live.js), each bound as it comes;
// Stop, a newer run or leaving the page ends it between two slices, and Python is told to stop it.
import { fill } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { output, setText } from "../runtime/dom.js";
import { InputError, live } from "../runtime/live.js";
import { readWhole } from "../shared/numbers.js";
import { announce, show } from "./view.js";

const SLICE_MS = 80; // Python's share of each slice of a live run
let leftRun = null; // Python's words for the reader's run that leaving its page stopped: the next training widget says them

/** What a run stopped by leaving the page says on the next page's widget, once (null if none was). */
export function takeLeft() {
  const left = leftRun;
  leftRun = null;
  return left;
}

/** training_start's arguments: the form's settings as TrainConfig fields (an InputError in the fields' own words
    when a block length is not a whole number they allow; how the rest fits together is Python's check), the seed
    chosen when Train was pressed, and the built run's loss on repeats, which its charts draw beside it. */
function trainArgs(w) {
  const { elements } = w.form;
  const [from, to] = [readWhole(elements.min_period), readWhole(elements.max_period)];
  const errors = [from.error, to.error].filter(Boolean);
  if (errors.length) throw new InputError(errors.join(" "));
  const choice = (name) => Number(elements[name].value);
  const config = { n_layers: choice("n_layers"), n_heads: choice("n_heads"), lr: choice("lr"), min_period: from.value,
    max_period: to.value };
  return { config, seed: w.seed, reference: w.data.reference };
}

/** A fresh model trained in slices until done (a stream, runtime/live.js): yields {run} once started, then each
    {slice}; returns {done}. Ended early (Stop, a newer run, the page left), it tells Python to stop the run. */
async function* training(w, { config, seed, reference }) {
  const said = output(w.root, "run");
  const shownBefore = said.textContent; // what is still shown if no run starts
  setText(said, w.words.starting);
  let run;
  try {
    run = await call("training_start", { config, seed, reference });
  } catch (err) {
    setText(said, shownBefore);
    throw err;
  }
  const advance = () => call("training_advance", { run: run.run, budget_ms: SLICE_MS });
  let slice = { done: false };
  let next = advance(); // asked for before each slice is drawn, so Python trains meanwhile
  let failed = false;
  try {
    yield { run, seed }; // ended here (Stop pressed at once), the run is stopped in Python too
    while (!slice.done && w.root.isConnected) { // a page swapped out (instant navigation) stops the run as Stop does
      slice = await next;
      next = slice.done ? null : advance();
      yield { slice };
    }
    return { done: slice.done };
  } catch (err) {
    failed = true;
    setText(said, w.words.partial);
    throw err;
  } finally {
    if (!slice.done && !failed) await stopTraining(w, run, next);
  }
}

/** Stop the run in Python once its last slice asked for is in, and say where it stopped. */
async function stopTraining(w, run, next) {
  await next?.catch(() => {});
  const stopped = await call("training_stop", { run: run.run });
  if (!stopped.stopped) return;
  fill(w.root, stopped.outputs);
  if (!w.root.isConnected) leftRun = stopped.left; // Python's words for the next widget
}

/** Draw a step of the reader's run: the run started ({run, seed}), or a slice of it ({slice}). */
function drawTraining(w, { run, seed, slice }) {
  if (run) {
    fill(w.root, run.outputs); // the run's status line, progress bar and clock, in Python's words
    fill(w.root, run.charts);
    Object.assign(w, { run, runId: `seed ${seed}`, ablate: new Set(), text: null, view: null });
    setText(output(w.root, "knockout"), w.knockoutHelp);
    w.root.dataset.run = "reader";
    w.selected = [Math.min(1, run.config.n_layers - 1), 0];
    return show(w, 0, true); // it renews every cell: the heatmap in a frame after the rest, so that neither is long
  }
  w.run.history.push(...slice.history);
  w.run.checkpoints.push(...slice.checkpoints);
  fill(w.root, slice.outputs); // the status line, the progress bar and both charts
  if (slice.checkpoints.length) show(w, w.run.checkpoints.length - 1);
}

/** The reader's own run's life cycle: Train and the buttons that measure a run or start one are off while it
    trains, Stop on (the focus moves to whichever of Train and Stop now acts); an error beside them. */
export function liveTraining(w) {
  const { train, stop } = w.form.elements;
  const others = w.root.querySelectorAll('button:is([name="knockout"], [name="show"], [name="reset"], [name="experiment"])');
  return live(w.root, {
    args: () => trainArgs(w), ask: (asked) => training(w, asked), progress: (step) => drawTraining(w, step),
    show: ({ done }) => done && announce(w, true), failure: (error) => error.message,
    busy: [train, ...others], stop, stale: false, // the settings are the next run's, not the one shown
  });
}

/** Train a fresh model from the form's settings (from the recorded run's seed, whose numbers the lesson quotes,
    or a new one); cause: the button pressed. */
export function train(w, cause, recordedSeed = false) {
  w.seed = recordedSeed ? w.data.seed : Math.floor(Math.random() * 2 ** 31);
  return w.train(cause);
}

/** The form's fields set to values (TrainConfig's fields). */
export function setForm(form, values) {
  for (const name of ["n_layers", "n_heads", "lr", "min_period", "max_period"]) {
    const field = form.elements[name]; // a select's option "1.0" is the number 1
    field.value = field.tagName === "SELECT" ? [...field.options].find((o) => Number(o.value) === values[name]).value :
      String(values[name]);
  }
}

