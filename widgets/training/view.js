// The grid of heads and the selected head's heatmap, drawn from one checkpoint of a run. Patterns arrive
// as Python's text of each drawn weight (what its cell reads), [layers, heads, n, q + 1]; scores and roles come
// from mha_core, and every word from its views: the run's head names (run.heads) and the widget's sentences
// (w.words: messages()).
import { fillIn, output, setData, setText } from "../runtime/dom.js";
import { cellNamer, paint, setTokens } from "../shared/grid.js";
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

/** One button per head of run, layer by layer, reusing the buttons the page has, each named as run.heads names it. */
export function layoutGrid(grid, run, words) {
  const { n_layers, n_heads } = run.config;
  const cells = grid.querySelectorAll("button[data-layer]");
  if (cells.length === n_layers * n_heads && grid.children.length === n_layers) return;
  const template = cells[0];
  const rows = [];
  for (let layer = 0; layer < n_layers; layer++) {
    const row = document.createElement("div");
    row.className = "mha-training__layer";
    row.dataset.layerRow = String(layer);
    for (let head = 0; head < n_heads; head++) {
      const cell = template.cloneNode(true);
      Object.assign(cell.dataset, { layer: String(layer), head: String(head), output: `head-${layer}-${head}` });
      cell.querySelector(".mha-training__name").firstChild.textContent =
        fillIn(words["cell-name"], { head: run.heads[layer][head].name });
      row.append(cell);
    }
    rows.push(row);
  }
  grid.replaceChildren(...rows);
}

/** Every head's thumbnail, whether it is knocked out and whether it is selected (its scores and role are the
    view's slots, "head-{layer}-{head}"). */
export function drawGrid(w, patterns) {
  for (const cell of w.root.querySelectorAll("button[data-layer]")) {
    const [l, h] = [Number(cell.dataset.layer), Number(cell.dataset.head)];
    cell.toggleAttribute("data-ablated", w.ablate.has(`${l},${h}`));
    cell.setAttribute("aria-pressed", String(l === w.selected[0] && h === w.selected[1]));
    drawThumb(cell.querySelector("canvas"), patterns[l][h].weights, w.palette.rgb);
  }
}

/** The selected head's heatmap on the shown sequence (shown: Python's labels, one per token, and its cells' names,
    shown_as'), with its caption (captions[layer][head]: Python's, for the heads knocked out and the sequence). */
export function drawHead(w, patterns, { labels, names }, captions) {
  const [l, h] = w.selected;
  const name = cellNamer(names);
  setTokens(w.grid, labels, name);
  paint(w.grid, patterns[l][h], w.palette.css, name);
  setData(w.root, "selected", `${l},${h}`);
  const { words } = w;
  setText(output(w.root, "caption"), captions[l][h]);
  const button = w.root.querySelector('button[name="knockout"]');
  const out = w.ablate.has(`${l},${h}`);
  button.setAttribute("aria-pressed", String(out));
  setText(button, out ? words.restore : words["knock-out"]);
}
