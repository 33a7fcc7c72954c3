// A checkpoint of the run shown: its view bound into the template's slots (runtime/bind.js: every word and number,
// the grid of heads among them), and from its patterns (Python's text of each drawn weight, what its cell reads,
// [layers, heads, n, q + 1]) every head's thumbnail (shared/palette.js) and the selected head's heatmap
// (shared/grid.js). w: the widget's state (training.js's mount).
import { fill } from "../runtime/bind.js";
import { output, setData, setText } from "../runtime/dom.js";
import { paint, setTokens } from "../shared/grid.js";
import { drawThumb } from "../shared/palette.js";

const WEIGHT_CHARS = 6; // mha_page.views.training's: each weight's text, as the cells read it ("0.1234")

/** patterns[layer][head] as {weights, texts}: n rows of n weights and of their texts, from Python's text of the
 * drawn cells (encode_patterns: layer, head, row by row, keys up to the query); a masked key weighs 0. */
export function decodePatterns(text, { n_layers, n_heads }, n) {
  let at = 0;
  const head = () => {
    const texts = Array.from({ length: n }, (_, q) => Array.from({ length: q + 1 }, () => text.slice(at, (at += WEIGHT_CHARS))));
    const weights = texts.map((row) => Array.from({ length: n }, (_, k) => (k < row.length ? Number(row[k]) : 0)));
    return { weights, texts };
  };
  return Array.from({ length: n_layers }, () => Array.from({ length: n_heads }, head));
}

/** Every head's thumbnail, marked knocked out and selected, and the selected head's heatmap on the shown sequence
    (shown: Python's labels, one per token, and its cells' names, shown_as'), with its caption (captions[layer][head]:
    Python's, for the heads knocked out and the sequence). heatmapLater: the heatmap in a frame of its own, after the
    rest (unless a newer drawing comes first, which draws its own at once). */
function drawHeads(w, patterns, { labels, names }, captions, heatmapLater) {
  const [l, h] = w.selected;
  w.heatmapDue = () => {
    w.heatmapDue = null;
    setTokens(w.grid, labels, names);
    paint(w.grid, patterns[l][h], w.palette.css);
  };
  if (heatmapLater) requestAnimationFrame(() => setTimeout(() => w.heatmapDue?.()));
  else w.heatmapDue();
  for (const cell of w.root.querySelectorAll("button[data-layer]")) {
    const [layer, head] = [Number(cell.dataset.layer), Number(cell.dataset.head)];
    cell.toggleAttribute("data-ablated", w.ablate.has(`${layer},${head}`));
    cell.setAttribute("aria-pressed", String(layer === l && head === h));
    drawThumb(cell.querySelector("canvas"), patterns[layer][head].weights, w.palette.rgb);
  }
  setData(w.root, "selected", `${l},${h}`);
  setText(output(w.root, "caption"), captions[l][h]);
  const out = w.ablate.has(`${l},${h}`);
  w.knockout.setAttribute("aria-pressed", String(out));
  setText(w.knockout, out ? w.words.restore : w.words["knock-out"]);
}

/** The checkpoint index shown, its patterns decoded once (ablated ones come from Python). */
function patternsOf(w, index) {
  const checkpoint = w.run.checkpoints[index];
  checkpoint.decoded ||= decodePatterns(checkpoint.patterns, w.run.config, w.run.labels.length);
  return checkpoint.decoded;
}

export const viewKey = (w, index = w.index) => JSON.stringify([w.runId, index, [...w.ablate].sort(), w.text]);

/** Draw checkpoint index of the run shown: its view (the charts' marker among it), the thumbnails and heatmap. With
    heads knocked out or the reader's text, the patterns (and, knocked out, the loss and scores) are Python's answer.
    heatmapLater: as drawHeads'. */
export function show(w, index, heatmapLater = false) {
  w.index = index;
  const { run } = w;
  const checkpoint = run.checkpoints[index];
  const view = (w.ablate.size || w.text !== null) && w.view?.key === viewKey(w) ? w.view.result : null;
  const patterns = view ? decodePatterns(view.patterns, run.config, view.labels.length) : patternsOf(w, index);
  w.slider.max = String(run.checkpoints.length - 1);
  w.slider.value = String(index);
  fill(w.root, checkpoint.outputs); // Python's view of the checkpoint: step, loss, the grid of heads, the summary
  if (view && w.ablate.size) fill(w.root, view.outputs); // the loss and scores measured with the knock-out
  setData(w.root, "checkpoints", String(run.checkpoints.filter(Boolean).length));
  w.root.style.setProperty("--n", String((view ?? run).labels.length));
  drawHeads(w, patterns, view ?? run, (view ?? checkpoint).captions, heatmapLater);
  setText(output(w.root, "knockout"), knockoutMessage(w, view));
}

/** What the knock-out says about the selected head: Python's readout while that head is knocked out (a
    message about another head's knock-out would read as this one's), else what a knock-out does. */
export function knockoutMessage(w, view) {
  if (!w.ablate.has(w.selected.join(","))) return w.knockoutHelp;
  if (view?.readout) return view.readout;
  return w.root.dataset.state === "busy" ? w.words.measuring : w.knockoutHelp;
}

/** Tell the page which run and checkpoint step the slider shows: the document-level event "mha-training-step", the
 * one the circuits widget (widgets/circuits/circuits.js) follows. detail {run: "built" or the reader's run's id,
 * step}, and once the reader's run has ended, finished: {config, seed, steps, params} (its checkpoints). */
export function announce(w, finished = false) {
  const { config, seed, checkpoints } = w.run;
  const detail = { run: w.runId, step: checkpoints[w.index].step };
  if (finished) {
    detail.finished = { config, seed, steps: checkpoints.map((c) => c.step), params: checkpoints.map((c) => c.params) };
  }
  document.dispatchEvent(new CustomEvent("mha-training-step", { detail }));
}

