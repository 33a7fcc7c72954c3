// The grid of heads and the selected head's heatmap, drawn from one checkpoint of a run. Patterns arrive
// as base64 of uint16 (weight × 65535), [layers, heads, n, n]; scores and roles come from mha_core.
import { output, setData, setText } from "../runtime/dom.js";
import { cellNamer, paint, setTokens } from "../shared/grid.js";
import { drawThumb } from "../shared/palette.js";

/** patterns[layer][head] as n rows of n weights, from the base64 text. */
export function decodePatterns(text, { n_layers, n_heads }, n) {
  const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
  const view = new DataView(bytes.buffer);
  const at = (l, h, q, k) => view.getUint16((((l * n_heads + h) * n + q) * n + k) * 2, true) / 65535;
  return Array.from({ length: n_layers }, (_, l) => Array.from({ length: n_heads }, (_, h) =>
    Array.from({ length: n }, (_, q) => Array.from({ length: n }, (_, k) => at(l, h, q, k)))));
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
      Object.assign(cell.dataset, { layer: String(layer), head: String(head) });
      cell.querySelector(".mha-training__name").firstChild.textContent = `L${layer} H${head}: `;
      row.append(cell);
    }
    rows.push(row);
  }
  grid.replaceChildren(...rows);
}

/** Thumbnails, scores and roles of every head. */
export function drawGrid(w, patterns, scores, roles) {
  for (const cell of w.root.querySelectorAll("button[data-layer]")) {
    const [l, h] = [Number(cell.dataset.layer), Number(cell.dataset.head)];
    const prev = scores.previous_token[l][h].toFixed(3);
    const induction = scores.induction[l][h].toFixed(3);
    setData(cell, "scorePreviousToken", prev);
    setData(cell, "scoreInduction", induction);
    setData(cell, "role", roles[l][h] || "");
    setText(cell.querySelector('[data-output="prev"]'), prev);
    setText(cell.querySelector('[data-output="induction"]'), induction);
    setText(cell.querySelector('[data-output="role"]'), w.data.roleNames[roles[l][h] ?? "None"]);
    cell.toggleAttribute("data-ablated", w.ablate.has(`${l},${h}`));
    cell.setAttribute("aria-pressed", String(l === w.selected[0] && h === w.selected[1]));
    drawThumb(cell.querySelector("canvas"), patterns[l][h], w.palette.rgb);
  }
}

/** The heads that have a role at this step, with the score that names them, and the best score of the
    others: during the drop a head can do its part before its score reaches roleMin. */
export function summarize(roles, scores, names, step, roleMin) {
  const named = roles.flatMap((row, l) => row.map((role, h) => [role, l, h])).filter(([role]) => role);
  const article = (word) => (/^[aeiou]/.test(word) ? "an" : "a");
  const parts = named.map(([role, l, h]) =>
    `L${l} H${h} is ${article(names[role])} ${names[role]} head (score ${scores[role][l][h].toFixed(3)})`);
  const best = Object.keys(scores).flatMap((kind) => roles.flatMap((row, l) => row.map((role, h) =>
    [role ? -1 : scores[kind][l][h], kind, l, h]))).reduce((a, b) => (b[0] > a[0] ? b : a));
  const rest = best[0] < 0 ? "" :
    ` The highest score of ${named.length ? "the other heads" : "any head"}: L${best[2]} H${best[3]}'s ${names[best[1]]} score, ${best[0].toFixed(3)}.`;
  if (!named.length) return `At step ${step} no head has a clear role yet: every detector score is below ${roleMin}.${rest}`;
  return `At step ${step}, ${parts.join("; ")}.${rest}`;
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
