// The training widget: a two-layer attention-only transformer trained by mha_core. The page arrives with
// the run trained at build time (its history and last checkpoint); the asset with every checkpoint is
// fetched when the widget is about to be seen, and checked by sha256, for the step slider. Knock-outs and the
// reader's own run call Python in the worker (runtime/bridge.js). Both go through the one life cycle
// (runtime/live.js): what the slider, the knock-outs and the reader's text ask for is one request (the asset
// fetched first if its weights are needed); the reader's own run is a stream of slices of at most SLICE_MS (the
// page stays responsive), each drawn as it comes, which Stop, or leaving the page, ends between two slices.
import { fill } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { InputError, live, shared } from "../runtime/live.js";
import { mountEach, whenNear } from "../runtime/page.js";
import { fillIn, output, setData, setText } from "../runtime/dom.js";
import "../runtime/status.js";
import { adoptGrid, cellAt, moveFrom, setActive } from "../shared/grid.js";
import { readWhole } from "../shared/numbers.js";
import { makePalette } from "../shared/palette.js";
import { sha256 } from "../shared/sha256.js";
import { drawCharts } from "./charts.js";
import { decodePatterns, drawGrid, drawHead, layoutGrid } from "./view.js";

const SLICE_MS = 80; // Python's share of each slice of a live run
let leftRun = null; // the reader's run that leaving its page stopped: the next training widget says so

/** The built run with every checkpoint, if the asset is the one the page was built with (words: the widget's). */
async function loadAsset(root, words) {
  const response = await fetch(new URL(`./${root.dataset.asset}`, import.meta.url));
  if (!response.ok) throw new Error(`${root.dataset.asset}: HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  if (crypto.subtle && (await sha256(bytes)) !== root.dataset.sha256) {
    throw new Error(fillIn(words["asset-changed"], { asset: root.dataset.asset }));
  }
  return JSON.parse(new TextDecoder().decode(bytes));
}

/** The built run with every checkpoint, fetched once (about 0.9 MB): a run (runtime/live.js's shared) that the
    widget starts when it is about to be seen, and that a request needing its weights follows. */
function builtRun(w) {
  return shared(async () => {
    let full;
    try {
      full = await loadAsset(w.root, w.words);
    } catch (err) {
      throw new Error(fillIn(w.words["asset-failed"], { error: err.message }));
    }
    w.built = full;
    if (w.runId === "built") {
      w.run = full;
      show(w, w.index);
    }
    return full;
  });
}

const entryAt = (run, step) => run.history.find((h) => h.step === step);

/** The checkpoint index shown, its patterns decoded once (ablated ones come from Python). */
function patternsOf(w, index) {
  const checkpoint = w.run.checkpoints[index];
  checkpoint.decoded ||= decodePatterns(checkpoint.patterns, w.run.config, w.run.labels.length);
  return checkpoint.decoded;
}

const viewKey = (w, index = w.index) => JSON.stringify([w.runId, index, [...w.ablate].sort(), w.text]);

/** Draw checkpoint index of the run shown: readouts, grid, heatmap, curves' marker. With heads knocked out
    or the reader's text, the patterns (and, knocked out, the loss and scores) are Python's answer, once in. */
function show(w, index) {
  w.index = index;
  const { run } = w;
  const checkpoint = run.checkpoints[index];
  const view = (w.ablate.size || w.text !== null) && w.view?.key === viewKey(w) ? w.view.result : null;
  const patterns = view ? decodePatterns(view.patterns, run.config, view.labels.length) : patternsOf(w, index);
  const { labels, names } = view ?? run; // the axes' and the cells' words, Python's (shown_as)
  w.slider.max = String(run.checkpoints.length - 1);
  w.slider.value = String(index);
  fill(w.root, checkpoint.outputs); // Python's view of the checkpoint: step, loss, every head's scores, the summary
  if (view && w.ablate.size) fill(w.root, view.outputs); // the loss and scores measured with the knock-out
  setText(output(w.root, "total"), String(run.steps));
  setData(w.root, "checkpoints", String(run.checkpoints.filter(Boolean).length));
  w.root.style.setProperty("--n", String(labels.length));
  drawGrid(w, patterns);
  const sequence = view && w.text !== null ? w.words["your-text"] : run.sequence;
  drawHead(w, patterns, { labels, names }, checkpoint.outputs.step.text, sequence);
  setText(output(w.root, "knockout"), knockoutMessage(w, view));
  drawCharts(w.root, run, checkpoint.step, reference(w));
}

/** What the knock-out says about the selected head: Python's readout while that head is knocked out (a
    message about another head's knock-out would read as this one's), else what a knock-out does. */
function knockoutMessage(w, view) {
  if (!w.ablate.has(w.selected.join(","))) return w.knockoutHelp;
  if (view?.readout) return view.readout;
  return w.root.dataset.state === "busy" ? w.words.measuring : w.knockoutHelp;
}

/** The built run's loss on repeats, drawn beside the reader's run for comparison (none for the built run). */
function reference(w) {
  if (w.runId === "built") return null;
  return { history: w.data.history, label: w.data.reference };
}

/** What the slider, the knock-outs and the reader's text ask for: {index, key, ablate, text}. */
function viewArgs(w) {
  if (w.text !== null && !w.text.trim()) throw new InputError(w.words["no-text"]);
  const index = Number(w.slider.value);
  return { index, key: viewKey(w, index), ablate: [...w.ablate].map((k) => k.split(",").map(Number)), text: w.text };
}

const measures = (asked) => asked.ablate.length > 0 || asked.text !== null;

/** The work for viewArgs: the checkpoint's weights (the asset's, for the built run), then training_evaluate's
    answer with the heads knocked out and on the reader's text (null when there is nothing to measure). */
async function* evaluated(w, asked) {
  if (!w.run.checkpoints[asked.index]?.params) yield* w.asset();
  if (!measures(asked)) return null;
  const { config, seed, checkpoints } = w.run;
  return call("training_evaluate", { config, seed, params: checkpoints[asked.index].params, ablate: asked.ablate, text: asked.text });
}

/** The shared life cycle (runtime/live.js) for what the slider, the knock-outs and the reader's text show: the
    latest request wins, busy and stale states, the error beside the controls, and a recompute after Retry. */
function liveView(w) {
  return live(w.root, {
    args: () => viewArgs(w), ask: (asked) => evaluated(w, asked), python: measures, failure: (error) => error.message,
    show: (result, asked) => {
      w.view = result && { key: asked.key, result };
      show(w, asked.index); // drawn only if it is still what the reader asks for (show compares the keys)
      announce(w);
    },
    settled: (error) => { if (error && w.run.checkpoints[w.index]) show(w, w.index); },
  });
}

/** Ask for what the shown checkpoint gives with the heads knocked out and on the reader's text (cause: the
    control that asks, beside which an error is shown). */
function measure(w, cause = w.root) {
  const done = w.request(cause);
  setText(output(w.root, "knockout"), knockoutMessage(w, null));
  return done;
}

/** [layer, head] of the head with the highest induction score outside layer 0 (or in it, for one layer). */
function bestInduction(scores) {
  let best = [0, 0];
  scores.induction.forEach((row, l) => row.forEach((s, h) => {
    if ((l > 0 || scores.induction.length === 1) && s > (scores.induction[best[0]][best[1]] ?? -1)) best = [l, h];
  }));
  return best;
}

/** {config} of the reader's settings as TrainConfig fields, or {error} in the fields' own words when a block
 * length is not a whole number the fields allow (a block holds distinct tokens: at most the vocabulary) or
 * the shortest is longer than the longest (said with the fields' text as typed). How the rest fits together
 * is Python's check. */
function settings(form, words) {
  const choice = (name) => Number(form.elements[name].value);
  const [from, to] = [readWhole(form.elements.min_period), readWhole(form.elements.max_period)];
  const errors = [from.error, to.error].filter(Boolean);
  if (!errors.length && from.value > to.value) {
    const typed = (name) => form.elements[name].value.trim();
    errors.push(fillIn(words["block-order"], { from: typed("min_period"), to: typed("max_period") }));
  }
  if (errors.length) return { error: errors.join(" ") };
  return { config: { n_layers: choice("n_layers"), n_heads: choice("n_heads"), lr: choice("lr"),
    min_period: from.value, max_period: to.value } };
}

/** training_start's arguments: the form's settings (an InputError in the fields' words when they cannot be
    trained) and the seed chosen when Train was pressed. */
function trainArgs(w) {
  const { config, error } = settings(w.form, w.words);
  if (error) throw new InputError(error);
  return { config, seed: w.seed };
}

/** A fresh model trained in slices until done (a stream, runtime/live.js): yields {run} once started, then each
    {slice}; returns {done}. Ended early (Stop, a newer run, the page left), it tells Python to stop the run. */
async function* training(w, { config, seed }) {
  const said = output(w.root, "run");
  const shownBefore = said.textContent; // what is still shown if no run starts
  setText(said, w.words.starting);
  let run;
  try {
    run = await call("training_start", { config, seed });
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
    fill(w.root, run.outputs); // the run's status line, progress and clock, in Python's words
    Object.assign(w, { run, runId: `seed ${seed}`, ablate: new Set(), text: null, view: null });
    setText(output(w.root, "knockout"), w.knockoutHelp);
    w.root.dataset.run = "reader";
    layoutGrid(w.root.querySelector(".mha-training__grid"), run, w.words);
    w.selected = [Math.min(1, run.config.n_layers - 1), 0];
    w.form.querySelector("progress").value = 0;
    return show(w, 0);
  }
  w.run.history.push(...slice.history);
  w.run.checkpoints.push(...slice.checkpoints);
  w.run.axes = slice.axes;
  w.form.querySelector("progress").value = slice.step;
  fill(w.root, slice.outputs);
  if (slice.checkpoints.length) show(w, w.run.checkpoints.length - 1);
  else drawCharts(w.root, w.run, w.run.checkpoints[w.index].step, reference(w));
}

/** The reader's own run's life cycle: Train and the buttons that measure a run or start one are off while it
    trains, Stop on (the focus moves to whichever of Train and Stop now acts); an error beside them. */
function liveTraining(w) {
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
function train(w, cause, recordedSeed = false) {
  w.seed = recordedSeed ? w.data.seed : Math.floor(Math.random() * 2 ** 31);
  return w.train(cause);
}

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-training-data]").content.textContent);
  const last = data.checkpoint_steps.length - 1; // until the asset arrives, only the last checkpoint is in hand
  const run = { config: data.config, seed: data.seed, steps: data.steps, labels: data.labels, names: data.names,
    sequence: data.sequence, heads: data.heads, history: data.history, axes: data.axes,
    checkpoints: data.checkpoint_steps.map((_, i) => (i === last ? data.last : null)) };
  const w = {
    root, data, words: data.words, run, built: run, runId: "built", index: 0, ablate: new Set(), text: null, view: null,
    seed: null, // the reader's run's, chosen when Train is pressed
    palette: makePalette(data.palette, data.paletteSteps), slider: root.querySelector('input[name="step"]'),
    form: root.querySelector(".mha-training__form"), grid: adoptGrid(root.querySelector("table")),
    knockoutHelp: output(root, "knockout").textContent, builtShown: output(root, "run").textContent,
  };
  const induction = data.last.roles.flatMap((row, l) => row.map((role, h) => [role, l, h])).find(([role]) => role === "induction");
  w.selected = induction ? induction.slice(1) : [data.config.n_layers - 1, 0];
  show(w, last);
  setActive(w.grid, 0, 0);
  if (leftRun) {
    setText(output(root, "run"), fillIn(data.words.left, { left: leftRun, shown: output(root, "run").textContent }));
    leftRun = null;
  }
  Object.assign(w, { asset: builtRun(w), request: liveView(w), train: liveTraining(w) });
  whenNear(root, () => w.asset().next().catch(() => {})); // fetched ahead; a request that needs it says a failure

  w.slider.addEventListener("input", () => {
    const index = Number(w.slider.value);
    if (w.run.checkpoints[index]) { // in hand: drawn at once
      show(w, index);
      announce(w);
    }
    if (!w.run.checkpoints[index] || w.ablate.size || w.text !== null) measure(w, w.slider); // the asset brings it, Python measures it
  });
  root.querySelector(".mha-training__grid").addEventListener("click", (event) => {
    const cell = event.target.closest("button[data-layer]");
    if (!cell) return;
    w.selected = [Number(cell.dataset.layer), Number(cell.dataset.head)];
    show(w, w.index);
  });
  root.querySelector('button[name="knockout"]').addEventListener("click", (event) => {
    const key = w.selected.join(",");
    if (!w.ablate.delete(key)) w.ablate.add(key);
    show(w, w.index);
    measure(w, event.currentTarget);
  });
  w.form.addEventListener("submit", (event) => {
    event.preventDefault();
    train(w, w.form.elements.train);
  });
  const sequence = root.querySelector(".mha-training__sequence");
  sequence.addEventListener("submit", (event) => {
    event.preventDefault();
    w.text = sequence.elements.text.value;
    measure(w, sequence.elements.show);
  });
  sequence.elements.reset.addEventListener("click", () => {
    w.text = null;
    sequence.elements.text.value = "";
    measure(w, sequence.elements.reset);
  });
  w.root.querySelector(".mha-training__experiments").addEventListener("click", (event) => {
    const button = event.target.closest('button[name="experiment"]');
    if (button) experiment(w, button);
  });
  const table = root.querySelector("table");
  table.addEventListener("focusin", (event) => {
    const td = event.target.closest("td[data-q]");
    if (td) { setActive(w.grid, Number(td.dataset.q), Number(td.dataset.k)); readCell(w, td); }
  });
  table.addEventListener("mouseover", (event) => { const td = event.target.closest("td[data-q]"); if (td) readCell(w, td); });
  table.addEventListener("keydown", (event) => {
    const td = event.target.closest("td[data-q]");
    const to = td && moveFrom(w.grid, Number(td.dataset.q), Number(td.dataset.k), event);
    if (to) { event.preventDefault(); cellAt(w.grid, ...to).focus(); }
  });
}

/** Tell the page which run and checkpoint step the slider shows: the document-level event "mha-training-step", the
 * one the circuits widget (widgets/circuits/circuits.js) follows. detail {run: "built" or the reader's run's id,
 * step}, and once the reader's run has ended, finished: {config, seed, steps, params} (its checkpoints). */
function announce(w, finished = false) {
  const { config, seed, checkpoints } = w.run;
  const detail = { run: w.runId, step: checkpoints[w.index].step };
  if (finished) {
    detail.finished = { config, seed, steps: checkpoints.map((c) => c.step), params: checkpoints.map((c) => c.params) };
  }
  document.dispatchEvent(new CustomEvent("mha-training-step", { detail }));
}

/** One of the suggested experiments: the form set to the built run's settings changed by the button's
    data-set, then a run from the built run's seed (the numbers the lesson quotes are that seed's); or, for
    "knockout", the built run's last step without one induction head. */
function experiment(w, button) {
  if (button.value === "knockout") return knockOutInduction(w, button);
  setForm(w.form, { ...w.data.config, ...JSON.parse(button.dataset.set) });
  return train(w, button, true);
}

/** The form's fields set to values (TrainConfig's fields). */
function setForm(form, values) {
  for (const name of ["n_layers", "n_heads", "lr", "min_period", "max_period"]) {
    const field = form.elements[name]; // a select's option "1.0" is the number 1
    field.value = field.tagName === "SELECT" ? [...field.options].find((o) => Number(o.value) === values[name]).value :
      String(values[name]);
  }
}

/** Show the built run at its last checkpoint with its best layer-1 induction head knocked out, and select that
    head; the form shows the built run's settings, those of what is shown. */
function knockOutInduction(w, button) {
  setForm(w.form, w.built.config);
  if (w.runId !== "built") {
    Object.assign(w, { run: w.built, runId: "built", view: null });
    w.root.dataset.run = "built";
    layoutGrid(w.root.querySelector(".mha-training__grid"), w.run, w.words);
    setText(output(w.root, "run"), w.builtShown);
  }
  const last = w.run.checkpoints.length - 1;
  const [layer, head] = bestInduction(entryAt(w.run, w.run.checkpoints[last].step).scores);
  Object.assign(w, { ablate: new Set([`${layer},${head}`]), text: null, selected: [layer, head] });
  show(w, last);
  measure(w, button);
}

function readCell(w, td) {
  setText(output(w.root, "cell"), td.ariaLabel); // its name, Python's words joined by paint
}

mountEach('[data-mha-widget="training"]', mount);
