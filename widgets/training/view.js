// The grid of heads and the selected head's heatmap, drawn from one checkpoint of a run. Patterns arrive
// as Python's text of each drawn weight (what its cell reads), [layers, heads, n, q + 1]; scores and roles come
// from mha_core.
import { output, setData, setText } from "../runtime/dom.js";
import { cellNamer, paint, setTokens } from "../shared/grid.js";
import { drawThumb } from "../shared/palette.js";

const WEIGHT_CHARS = 6; // mha_core.views.training's: each weight's text, as the cells read it ("0.1234")

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

/** One button per head, layer by layer, reusing the buttons the page has. */
export function layoutGrid(grid, { n_layers, n_heads }) {
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
      cell.querySelector(".mha-training__name").firstChild.textContent = `L${layer} H${head}: `;
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

/** The selected head's heatmap on the shown sequence (labels: one per token), with its caption. */
export function drawHead(w, patterns, labels, step, sequence) {
  const [l, h] = w.selected;
  const name = cellNamer(labels);
  setTokens(w.grid, labels, name);
  paint(w.grid, patterns[l][h], w.palette.css, name);
  setData(w.root, "selected", `${l},${h}`);
  const knocked = w.ablate.size ? ` (knocked out: ${[...w.ablate].map((k) => `L${k.replace(",", " H")}`).join(", ")})` : "";
  setText(output(w.root, "caption"),
    `Layer ${l}, head ${h} at step ${step}${knocked}: each row is a query, each column a key, on ${sequence}.`);
  const button = w.root.querySelector('button[name="knockout"]');
  button.setAttribute("aria-pressed", String(w.ablate.has(`${l},${h}`)));
  setText(button, w.ablate.has(`${l},${h}`) ? "Restore this head" : "Knock out this head");
}
