// The heads of a real model. The atlas (every head's scores on the page's texts, computed at build time) reads
// without Python; a head opens its pattern from a small asset. "Load the model" downloads the model's files into
// the page's Python (checked, kept for a revisit: runtime/download), then the reader's text runs through the 30
// layers one call a layer (mha_core.bridge.real_model), through the one life cycle (runtime/live.js): a newer
// text stops an older one between layers, and the view that comes back is bound into the same slots.
import { bind } from "../runtime/bind.js";
import { call, download, downloaded } from "../runtime/bridge.js";
import { fillIn, setText } from "../runtime/dom.js";
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";
import { failure, modelFiles } from "./model.js";
import { describe, drawPattern, rowsFromBytes } from "./pattern.js";

const STORE = "mha-real-model"; // the model's files, kept apart from Python's own

/** One of the widget's assets (a text's patterns or view), fetched once, when first needed, as read(response). */
const assets = new Map();
function asset(name, read) {
  if (!assets.has(name)) {
    assets.set(name, fetch(new URL(`./${name}`, import.meta.url)).then(async (response) => {
      if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
      return read(response);
    }));
    assets.get(name).catch(() => assets.delete(name)); // asked again next time
  }
  return assets.get(name);
}
const patternBytes = (name) => asset(name, async (response) => new Uint8Array(await response.arrayBuffer()));
const viewOf = (name) => asset(name, (response) => response.json());

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-real-model-data]").content.textContent);
  const form = root.querySelector("form");
  const { text, example, load, retry } = form.elements;
  const progress = root.querySelector('[data-output="progress"]');
  const panel = root.querySelector("[data-pattern]");
  const words = data.words; // mha_core.views.real_model.messages(): {name} marks what is filled in here
  const say = (name, values = {}) => setText(progress, fillIn(words[name], values));
  const failed = (error) => failure(error, words);
  let source = { asset: data.patterns[root.dataset.text], n: data.lengths[root.dataset.text] };
  let loaded = false;
  let wanted = 0; // each reader's text counts one up: a run whose count is not the latest stops between layers
  let opened = null;

  const tokens = () => [...root.querySelectorAll("[data-token-index]")].map((el) => el.textContent);

  async function openHead(button) {
    opened = button;
    const layer = Number(button.dataset.layer);
    const head = Number(button.dataset.head);
    const from = source;
    const rows = from.run
      ? (await call("real_model_pattern", { run: from.run, layer, head })).rows
      : rowsFromBytes(await patternBytes(from.asset), layer * 9 + head, from.n);
    if (from !== source || opened !== button) return; // another text or head meanwhile
    panel.hidden = false;
    setText(panel.querySelector("[data-pattern-title]"), button.getAttribute("aria-label"));
    const canvas = panel.querySelector("[data-pattern-canvas]");
    drawPattern(canvas, rows, tokens(), data.pattern.drawn);
    canvas.setAttribute("aria-label", describe(rows, tokens(), data.pattern));
  }

  /** The reader's text through the 30 layers, layer by layer; null if a newer text came meanwhile. */
  async function runText({ text: value }) {
    const mine = ++wanted;
    const started = await call("real_model_start", { text: value });
    for (let step = started; step.progress;) {
      if (mine !== wanted) return null;
      setText(progress, step.progress); // Python's words for the layer that runs next
      step = await call("real_model_advance", { run: started.run });
      if (step.view) return { view: step.view, run: started.run, n: started.n_tokens };
    }
    return null;
  }

  const request = live(root, {
    fn: "real_model_start",
    args: () => ({ text: text.value }),
    ask: async (asked) => {
      try {
        return await runText(asked);
      } catch (error) { // a Python restarted after a failure has not the model's files: they come from the store
        if (!/not loaded yet/.test(error.message)) throw error;
        await download(data.folder, STORE, modelFiles(data, import.meta.url), () => {});
        return runText(asked);
      }
    },
    failure: failed,
    show: (answer) => {
      if (!answer) return;
      bind(root, answer.view);
      source = { run: answer.run, n: answer.n };
      setText(progress, "");
      if (opened) openHead(opened).catch(() => {});
    },
  });

  async function loadModel() {
    root.dataset.state = "loading";
    load.disabled = true;
    retry.hidden = true;
    const files = modelFiles(data, import.meta.url);
    try {
      await download(data.folder, STORE, files, (arrived, total) => {
        say("downloading", { bytes: downloaded(arrived, total) });
      });
      loaded = true;
      load.hidden = true;
      example.value = "own";
      await request(text);
    } catch (error) {
      root.dataset.state = "error";
      const slot = root.querySelector('[data-message="error"]');
      slot.hidden = false;
      setText(slot, failed(error));
      setText(progress, "");
      load.disabled = false;
      retry.hidden = false;
    }
  }

  /** One of the page's texts, as the build computed it. */
  async function showExample(name) {
    wanted++; // a run in progress stops
    text.value = data.texts[name];
    root.dataset.text = name;
    const view = await viewOf(data.views[name]);
    if (root.dataset.text !== name) return; // another choice meanwhile
    bind(root, view);
    source = { asset: data.patterns[name], n: data.lengths[name] };
    if (opened) openHead(opened).catch(() => {});
  }

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => {
    const el = event.target;
    if (el.name === "kind") root.dataset.kind = el.value;
    else if (el.name === "example" && el.value in data.views) {
      showExample(el.value).catch((error) => say("text-failed", { error: error.message }));
    }
  });
  // On the textarea itself: a change event dispatched there without bubbling runs the text too.
  text.addEventListener("change", () => {
    if (!loaded) {
      if (root.dataset.state === "idle") say("own");
      return;
    }
    example.value = "own";
    request(text);
  });
  load.addEventListener("click", loadModel);
  retry.addEventListener("click", loadModel);
  root.addEventListener("click", (event) => {
    const button = event.target.closest(".mha-rm__head");
    if (button) openHead(button).catch((error) => say("pattern-failed", { error: error.message }));
  });
  root.querySelector(".mha-rm__grid").addEventListener("keydown", (event) => moveFocus(root, event));
}

const MOVES = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

/** One tab stop for the grid: the arrow keys move between heads (Home and End along the layer). */
function moveFocus(root, event) {
  const here = event.target.closest(".mha-rm__head");
  let [dl, dh] = MOVES[event.key] || [0, 0];
  if (event.key === "Home") dh = -9;
  if (event.key === "End") dh = 9;
  if (!here || (!dl && !dh)) return;
  event.preventDefault();
  const layer = Math.min(29, Math.max(0, Number(here.dataset.layer) + dl));
  const head = Math.min(8, Math.max(0, Number(here.dataset.head) + dh));
  const next = root.querySelector(`.mha-rm__head[data-layer="${layer}"][data-head="${head}"]`);
  here.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

mountEach('[data-mha-widget="real-model"]', mount);
