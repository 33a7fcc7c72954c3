// The heads of a real model. The atlas (every head's scores on the page's texts, computed at build time) reads
// without Python; a head opens its pattern from a small asset. Everything the widget asks for goes through the one
// life cycle (runtime/live.js): one of the page's texts is a fetch of its view (an asset); the reader's own text is a
// run: the model's files downloaded into the page's Python once (Load; checked, kept for a revisit:
// runtime/download), then the text through the model's layers one call a layer (mha_page.bridge.real_model), Python's
// words for each layer as progress. Python itself starts only then: the widget is on request (data-python). A newer
// text ends an older one between layers; the view that comes back is bound into the same slots. A text typed
// before Load marks the atlas as not its own, and runs once Load is pressed.
// An opened head's pattern is the site's heatmap (shared/grid.js), built when first opened, in the view's words.
// The position, the knock-outs and the grid's cells as toggles are the laboratory's (lab.js).
import { bind } from "../runtime/bind.js";
import { call, download, downloaded } from "../runtime/bridge.js";
import { fillIn, setHidden, setText } from "../runtime/dom.js";
import { calls, live, markStale, shared } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";
import { adoptGrid, followCells, paint, setTokens } from "../shared/grid.js";
import { makePalette } from "../shared/palette.js";
import { mountLab } from "./lab.js";
import { failure, modelFiles, rowsFromBytes } from "./model.js";

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
const json = (name) => asset(name, (response) => response.json());

/** The reader's text through the model's layers, a run (runtime/live.js): yields the download's bytes, then Python's
 * words for the layer that runs next; returns {view, source}. A Python restarted after a failure has not the
 * model's files: they come again (from the store). */
async function* runText(model, text) {
  yield* model();
  const layers = () => calls("real_model_start", { text }, "real_model_advance");
  let ran;
  try {
    ran = yield* layers();
  } catch (error) {
    if (!/not loaded yet/.test(error.message)) throw error;
    model.forget();
    yield* model();
    ran = yield* layers();
  }
  return { view: ran.view, source: { run: ran.run, n: ran.n_tokens, pattern: ran.view.pattern } };
}

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-real-model-data]").content.textContent);
  const form = root.querySelector("form");
  const { text, example, load, pick } = form.elements;
  const progress = root.querySelector('[data-output="progress"]');
  const panel = root.querySelector("[data-pattern]");
  const words = data.words; // mha_page.views.real_model.messages(): {name} marks what is filled in here
  const say = (name, values = {}) => setText(progress, fillIn(words[name], values));
  const textOf = (name, pattern) => ({ name, asset: data.patterns[name], n: data.lengths[name], pattern });
  let source = textOf(root.dataset.text, data.pattern); // pattern: the view's words for the heatmap's axes and cells
  let wantsModel = false; // Load pressed: the reader's own text may run
  let loaded = false;
  let opened = null;
  const model = shared((report) => download(data.folder, STORE, modelFiles(data, import.meta.url),
    (arrived, total) => report(fillIn(words.downloading, { bytes: downloaded(arrived, total) }))));

  const lab = mountLab(root, { source: () => source, positions: (name) => json(data.positions[name]), words });
  const readout = panel.querySelector('[data-output="pattern-cell"]');
  const hint = readout.textContent;
  const palette = makePalette(data.palette, data.levels);
  const colour = (b) => palette.css(b / data.levels); // a byte's step of the ramp is the byte
  let grid = null; // the opened pattern's table: none before a head is opened

  /** rows ([n][q + 1] bytes) into the table, labelled and named in the words of pattern (the view's). */
  function drawPattern(rows, { labels, names }) {
    const fresh = !grid;
    grid ??= adoptGrid(panel.querySelector("table"));
    setTokens(grid, labels, names);
    paint(grid, { weights: rows, texts: rows.map((row) => row.map((b) => data.weights[b])) }, colour);
    if (fresh) followCells(grid, (td) => setText(readout, td.ariaLabel));
    setText(readout, hint);
  }

  async function openHead(button) {
    opened = button;
    const layer = Number(button.dataset.layer);
    const head = Number(button.dataset.head);
    const from = source;
    const rows = from.run
      ? (await call("real_model_pattern", { run: from.run, layer, head })).rows
      : rowsFromBytes(await patternBytes(from.asset), layer * Number(root.dataset.heads) + head, from.n);
    if (from !== source || opened !== button) return; // another text or head meanwhile
    panel.hidden = false;
    setText(panel.querySelector("[data-pattern-title]"), button.getAttribute("aria-label"));
    drawPattern(rows, from.pattern);
  }

  const showText = live(root, {
    args: () => {
      if (example.value !== "own") return { example: example.value };
      return wantsModel ? { text: text.value } : { own: true }; // before Load: guidance, not an error
    },
    ask: async function* (asked) {
      if (asked.own) return null;
      if (asked.example) {
        const view = await json(data.views[asked.example]);
        return { view, source: textOf(asked.example, view.pattern) };
      }
      const answer = yield* runText(model, asked.text);
      loaded = true;
      return answer;
    },
    failure: (error, asked) => (asked?.example ? fillIn(words["text-failed"], { error: error.message }) : failure(error, words)),
    show: (answer, asked) => {
      setText(progress, asked.own ? words.own : ""); // beside Load, as its other words
      if (asked.own) return markStale(root, true); // the atlas is not the text typed
      bind(root, answer.view);
      root.dataset.text = asked.example ?? "own";
      source = answer.source;
      lab.shown();
      if (opened) openHead(opened).catch(() => {});
    },
    settled: () => loaded && setHidden(load, true, text),
    python: (asked) => "text" in asked, // a page's text is an asset
    busy: [load],
    home: text, // while the model downloads, the reader may type the text it will run
  });
  const request = (control) => { // a knock-out of the text shown ends: its run is the older text's
    lab.stop();
    return showText(control);
  };

  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => {
    const el = event.target;
    if (el.name === "kind") root.dataset.kind = el.value;
    else if (el.name === "example" && el.value in data.views) {
      text.value = data.texts[el.value];
      request(example);
    }
  });
  // On the textarea itself: a change event dispatched there without bubbling runs the text too.
  text.addEventListener("change", () => {
    example.value = "own";
    request(text);
  });
  load.addEventListener("click", () => {
    wantsModel = true;
    example.value = "own";
    request(load);
  });
  root.addEventListener("click", (event) => {
    const button = event.target.closest(".mha-rm__head");
    if (button && pick.value === "knockout") lab.toggle(button);
    else if (button) openHead(button).catch((error) => say("pattern-failed", { error: error.message }));
  });
  root.querySelector(".mha-rm__grid").addEventListener("keydown", (event) => moveFocus(root, event));
}

const MOVES = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] };

/** One tab stop for the grid: the arrow keys move between heads (Home and End along the layer). */
function moveFocus(root, event) {
  const here = event.target.closest(".mha-rm__head");
  const [layers, heads] = [Number(root.dataset.layers), Number(root.dataset.heads)]; // the model's, as built
  let [dl, dh] = MOVES[event.key] || [0, 0];
  if (event.key === "Home") dh = -heads;
  if (event.key === "End") dh = heads;
  if (!here || (!dl && !dh)) return;
  event.preventDefault();
  const layer = Math.min(layers - 1, Math.max(0, Number(here.dataset.layer) + dl));
  const head = Math.min(heads - 1, Math.max(0, Number(here.dataset.head) + dh));
  const next = root.querySelector(`.mha-rm__head[data-layer="${layer}"][data-head="${head}"]`);
  here.tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

mountEach('[data-mha-widget="real-model"]', mount);
