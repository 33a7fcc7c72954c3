// The training widget: a two-layer attention-only transformer trained by mha_core. The page arrives with
// the run trained at build time (its history and last checkpoint; its grid of heads and charts rendered from its
// view), and fetches the asset with every checkpoint (runtime/asset.js) when the widget is about to be seen, for
// the step slider. Knock-outs and the reader's own run call Python in the worker (runtime/bridge.js). Both go
// through the one life cycle (runtime/live.js): what the slider, the knock-outs and the reader's text ask for is one
// request (the asset fetched first if its weights are needed); the reader's own run is a stream (own_run.js). What is
// drawn is view.js's: the checkpoint's view bound, the thumbnails and the heatmap.
import { fill } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { fetchAsset } from "../runtime/asset.js";
import { InputError, live, shared } from "../runtime/live.js";
import { mountEach, whenNear } from "../runtime/page.js";
import { output, setText } from "../runtime/dom.js";
import "../runtime/status.js";
import { adoptGrid, followCells } from "../shared/grid.js";
import { makePalette } from "../shared/palette.js";
import { liveTraining, setForm, takeLeft, train } from "./own_run.js";
import { announce, knockoutMessage, show, viewKey } from "./view.js";

/** The built run with every checkpoint, fetched once (about 0.9 MB): a run (runtime/live.js's shared) that the
    widget starts when it is about to be seen, and that a request needing its weights follows. */
function builtRun(w) {
  return shared(async () => {
    const full = await fetchAsset(w.root, import.meta.url);
    w.built = full;
    if (w.runId === "built") {
      w.run = full;
      show(w, w.index);
    }
    return full;
  });
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
  const { params, step } = checkpoints[asked.index];
  return call("training_evaluate", { config, seed, params, ablate: asked.ablate, text: asked.text, step });
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

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-training-data]").content.textContent);
  const last = data.checkpoint_steps.length - 1; // until the asset arrives, only the last checkpoint is in hand
  const run = { config: data.config, seed: data.seed, labels: data.labels, names: data.names,
    history: data.history, checkpoints: data.checkpoint_steps.map((_, i) => (i === last ? data.last : null)) };
  const w = {
    root, data, words: data.words, run, built: run, runId: "built", index: 0, ablate: new Set(), text: null, view: null,
    selected: data.selected, knockout: root.querySelector('button[name="knockout"]'),
    seed: null, // the reader's run's, chosen when Train is pressed
    palette: makePalette(data.palette, data.paletteSteps), slider: root.querySelector('input[name="step"]'),
    form: root.querySelector(".mha-training__form"), grid: adoptGrid(root.querySelector("table")),
    knockoutHelp: output(root, "knockout").textContent, builtShown: output(root, "run").textContent,
  };
  show(w, last);
  setText(output(root, "run"), takeLeft() ?? w.builtShown);
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
  w.knockout.addEventListener("click", (event) => {
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
  followCells(w.grid, (td) => setText(output(root, "cell"), td.ariaLabel)); // its name, Python's words joined by paint
}

/** One of the suggested experiments: the form set to the built run's settings changed by the button's
    data-set, then a run from the built run's seed (the numbers the lesson quotes are that seed's); or, for
    "knockout", the built run's last step without one induction head. */
function experiment(w, button) {
  if (button.value === "knockout") return knockOutInduction(w, button);
  setForm(w.form, { ...w.data.config, ...JSON.parse(button.dataset.set) });
  return train(w, button, true);
}

/** Show the built run at its last checkpoint with its best layer-1 induction head knocked out, and select that
    head; the form shows the built run's settings, those of what is shown. */
function knockOutInduction(w, button) {
  setForm(w.form, w.built.config);
  if (w.runId !== "built") {
    Object.assign(w, { run: w.built, runId: "built", view: null });
    w.root.dataset.run = "built";
    fill(w.root, w.data.charts);
    setText(output(w.root, "run"), w.builtShown);
  }
  const [layer, head] = w.data.knockout;
  Object.assign(w, { ablate: new Set([`${layer},${head}`]), text: null, selected: [layer, head] });
  show(w, w.run.checkpoints.length - 1);
  measure(w, button);
}

mountEach('[data-mha-widget="training"]', mount);
