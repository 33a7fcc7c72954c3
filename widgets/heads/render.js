// Render the widget's state (w) into its nodes: the heatmap, the sentence highlights, the small
// multiples, the readouts and "How this head works". Everything comes from a head_patterns result
// already in hand; nothing here calls Python, so a head switch costs one paint of the heatmap.
import { output, setData, showMessage } from "../runtime/dom.js";
import { paint, selectRow, setTokens } from "./grid.js";
import { cellText, drawThumb, highlight, setSentence, showInfo } from "./view.js";

/** Select query q: its row in the heatmap and its attention in the sentence. */
export function selectQuery(w, q) {
  w.query = q;
  w.root.dataset.query = String(q);
  selectRow(w.grid, q);
  const text = highlight(output(w.root, "sentence"), w.result.tokens, w.result.heads[w.head][q], q);
  output(w.root, "query").textContent = text;
}

export function showCell(w, q, k) {
  w.readout = { q, k };
  output(w.root, "cell").textContent = cellText(w.result.tokens, q, k, w.result.heads[w.head][q][k]);
}

/** Draw the selected head from the result in hand. */
export function renderHead(w) {
  const { root, result, head } = w;
  paint(w.grid, result.heads[head], w.palette.css);
  root.dataset.head = head;
  for (const button of w.buttons) button.setAttribute("aria-pressed", String(button.dataset.head === head));
  showInfo(root, result.info[head], w.layers, { averaged: head === "averaged", ablated: w.job.ablate && head === w.ablate.value });
  selectQuery(w, w.query);
  if (w.readout) showCell(w, w.readout.q, w.readout.k);
}

/** Show a new result (a new sentence, or the knock-out toggled), then the selected head. */
export function showResult(w, job, result) {
  const sentenceChanged = job.sentence !== w.job.sentence;
  Object.assign(w, { job, result });
  const n = result.tokens.length;
  setTokens(w.grid, result.tokens);
  setSentence(output(w.root, "sentence"), result.tokens);
  if (sentenceChanged || w.query >= n) w.query = result.first_query; // mha_core's choice, as at build time
  if (w.readout && (sentenceChanged || w.readout.q >= n)) w.readout = null;
  w.root.style.setProperty("--n", String(n));
  Object.assign(w.root.dataset, { tokens: String(n), ablate: String(job.ablate) });
  w.buttons.forEach((button) => drawThumb(button.querySelector("canvas"), result.heads[button.dataset.head], w.palette.rgb));
  showMessage(w.root, "notice", result.notice);
  showMessage(w.root, "error", "");
  renderHead(w);
}

/** Mark the outputs as not matching the inputs (text: what is shown instead and what it waits for), or as matching (""). */
export function showStale(root, text) {
  showMessage(root, "stale", text);
  root.querySelectorAll("[data-stale]").forEach((el) => setData(el, "stale", String(Boolean(text))));
}
