// Render the widget's state (w) into its nodes: the heatmap, the sentence highlights, the small
// multiples, the readouts and "How this head works". Everything comes from a head_patterns result
// already in hand; nothing here calls Python, so a head switch costs one paint of the heatmap.
import { output, showMessage } from "../runtime/dom.js";
import { cellNamer, paint, selectRow, setTokens } from "../shared/grid.js";
import { drawThumb } from "../shared/palette.js";
import { cellText, highlight, setOptions, setSentence, showInfo } from "./view.js";

// What the knock-out (zeroing the previous-token head's output) does to the pattern of each head shown.
const KNOCKED_OUT = {
  induction: "Ablated pattern: the previous-token head is knocked out (its output zeroed), so a repeated token no longer finds what followed its earlier occurrence.",
  averaged: "With the previous-token head knocked out: this mean includes the ablated induction pattern.",
  previous_token: "This head is knocked out: it still attends as shown, but its output is zeroed.",
  positional: "Unchanged by the knock-out: layer 0 does not read the previous-token head's output.",
  content: "Unchanged by the knock-out: layer 0 does not read the previous-token head's output.",
};

/** Select query q: its row in the heatmap and its attention in the sentence. */
export function selectQuery(w, q) {
  w.query = q;
  w.root.dataset.query = String(q);
  selectRow(w.grid, q);
  w.picker.value = String(q);
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
  paint(w.grid, result.heads[head], w.palette.css, w.namer);
  root.dataset.head = head;
  for (const button of w.buttons) button.setAttribute("aria-pressed", String(button.dataset.head === head));
  showInfo(root, result.info[head], w.layers, { averaged: head === "averaged", ablated: w.job.ablate && head === w.ablate.value });
  showMessage(root, "ablation", w.job.ablate ? KNOCKED_OUT[head] : "");
  selectQuery(w, w.query);
  if (w.readout) showCell(w, w.readout.q, w.readout.k);
}

/** Show a new result (a new sentence, or the knock-out toggled), then the selected head. */
export function showResult(w, job, result) {
  const sentenceChanged = job.sentence !== w.job.sentence;
  Object.assign(w, { job, result });
  const n = result.tokens.length;
  w.namer = cellNamer(result.tokens);
  setTokens(w.grid, result.tokens, w.namer);
  setSentence(output(w.root, "sentence"), result.tokens);
  setOptions(w.picker, result.tokens);
  if (sentenceChanged || w.query >= n) w.query = result.first_query; // mha_core's choice, as at build time
  if (w.readout && (sentenceChanged || w.readout.q >= n)) { // a cell of another text: its tokens go too
    w.readout = null;
    output(w.root, "cell").textContent = w.prompt;
  }
  w.root.style.setProperty("--n", String(n));
  Object.assign(w.root.dataset, { tokens: String(n), ablate: String(job.ablate) });
  w.buttons.forEach((button) => drawThumb(button.querySelector("canvas"), result.heads[button.dataset.head], w.palette.rgb));
  showMessage(w.root, "notice", result.notice);
  showMessage(w.root, "error", "");
  renderHead(w);
}
