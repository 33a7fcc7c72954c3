// The laboratory of the real model's widget: the position picked (its predictions, which heads wrote its next token,
// the logit lens there), the heads knocked out (typed, toggled in the grid, or a one-click set) and the first token
// hidden. Each is a life cycle of its own (runtime/live.js) with its own error slot and no Retry: a position is two
// calls of the page's Python (or, for one of the page's texts, a view of its positions asset: read without the
// model); a knock-out is a run of calls, a layer a call, a newer one ending the older between two layers; so is the
// measure of how many heads can go (its button's), a slice a call, which a knock-out or a new text ends. Every
// word and number shown is Python's: the views are bound as they come (mha_page.bridge.real_model).
import { bind } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { calls, InputError, live } from "../runtime/live.js";

const ERRORS = '[data-message="lab-error"]';
const HEAD = /l\s*(\d+)\s*h\s*(\d+)/gi; // a head as mha_core.llama.lab.parse_heads reads it

/** A knock-out (args: real_model_knockout_start's), a layer a call: yields Python's words for the layer that runs
 * next; returns the knock-out's view. */
async function* knockOut(args) {
  const started = await call("real_model_knockout_start", args);
  let step = started;
  while (!step.view) {
    yield step.progress;
    step = await call("real_model_knockout_advance", { run: args.run, knock: started.knock });
  }
  return step.view;
}

/** A position of a finished run, a run of two calls: its predictions and attribution, bound as they come (a step);
 * then the lens, a pass over the unembedding, the answer. */
async function* positionOf(run, position) {
  yield await call("real_model_position", { run, position });
  return await call("real_model_lens", { run, position });
}

/** Wire root's laboratory. source() is the text shown ({run} once the model ran it, else {name} of a page's text);
 * positions(name) a Promise of that text's views, one a position; words: the widget's sentences. Returns
 * {toggle(cell), shown(), stop()}: a grid cell knocked out or back in; a new text shown; its knock-out and its
 * measure of how many heads can go ended. */
export function mountLab(root, { source, positions, words }) {
  const form = root.querySelector("[data-lab]");
  const { position, knockout } = form.elements;
  const hideFirst = form.elements["hide-first"];
  const at = live(root, {
    args: () => {
      const p = Number(position.value);
      if (!(Number.isInteger(p) && p >= 0 && p <= Number(root.dataset.positionMax))) {
        throw new InputError(root.dataset.positionError); // the view's words for this text's positions
      }
      return { position: p };
    },
    ask: ({ position: p }) => {
      const from = source();
      return from.run ? positionOf(from.run, p) : positions(from.name).then((views) => views[p]);
    },
    python: () => Boolean(source().run),
    failure: words["position-failed"],
    errors: ERRORS,
    stale: false, // the results say which position and which heads they are for (position-words, knocked)
    retry: null, // the text's Retry is the model's: a position or heads are mended in their own fields
  });
  const knock = live(root, {
    args: () => {
      const { run } = source();
      if (!run) throw new InputError(words["knockout-load"]);
      return { run, knockout: knockout.value, hide_first: hideFirst.checked, position: Number(root.dataset.position) };
    },
    ask: knockOut,
    show: (view, asked) => {
      bind(root, view);
      if (String(asked.position) !== root.dataset.position) at(position); // picked meanwhile: its knocked predictions
    },
    failure: words["knockout-failed"],
    errors: ERRORS,
    stale: false, // the results say which position and which heads they are for (position-words, knocked)
    retry: null, // the text's Retry is the model's: a position or heads are mended in their own fields
  });

  const prune = live(root, { // how many heads can go on the reader's text: a run of calls, a slice of the work each
    args: () => ({ run: source().run }),
    ask: async function* (asked) {
      return (yield* calls("real_model_pruning_start", asked, "real_model_pruning_advance")).view;
    },
    progressSlot: "pruning-progress", // its words beside its button, the text's own progress slot left as it is
    failure: words["pruning-failed"],
    busy: [root.querySelector('button[name="prune"]')],
    stop: root.querySelector('button[name="prune-stop"]'),
    errors: ERRORS,
    stale: false, // its words say which text they are for; a new text hides them
    retry: null,
  });
  const knockNow = (control) => { // one run in the worker at a time: the newest
    prune.stop();
    return knock(control);
  };
  root.querySelector('button[name="prune"]').addEventListener("click", (event) => {
    knock.stop();
    prune(event.currentTarget);
  });

  form.addEventListener("submit", (event) => event.preventDefault());
  position.addEventListener("change", () => at(position));
  knockout.addEventListener("change", () => knockNow(knockout));
  hideFirst.addEventListener("change", () => knockNow(hideFirst));
  form.addEventListener("click", (event) => {
    const button = event.target.closest('button[name="set"]');
    if (!button) return;
    knockout.value = root.getAttribute(`data-set-${button.value}`) ?? "";
    knockNow(button);
  });

  return {
    /** The field's heads with cell's added, or taken out if it was there (each as its cell names it). */
    toggle(cell) {
      const names = [...knockout.value.matchAll(HEAD)].map(([, layer, head]) =>
        root.querySelector(`[data-layer="${Number(layer)}"][data-head="${Number(head)}"]`)?.dataset.name)
        .filter(Boolean);
      const others = names.filter((name) => name !== cell.dataset.name);
      knockout.value = (others.length < names.length ? others : [...others, cell.dataset.name]).join(" ");
      knockNow(cell);
    },
    shown() {
      position.max = root.dataset.positionMax;
      position.value = root.dataset.position;
    },
    stop() {
      knock.stop();
      prune.stop();
    },
  };
}
