// The parts of the heads widget around the heatmap: the sentence with the selected query's attention
// as highlights, the small multiples on the head buttons, the readouts and "How this head works".
// Every token is the reader's text and goes in with textContent only.
import { output, setText } from "../runtime/dom.js";
import { cellNamer, clipToken as clip } from "../shared/grid.js";

/** The sentence as one button per token (choosing one reads its weight), reusing the buttons it has. */
export function setSentence(el, tokens) {
  const spans = [...el.children];
  for (let i = spans.length; i < tokens.length; i++) {
    const span = document.createElement("button");
    span.type = "button";
    span.dataset.tokenIndex = String(i);
    span.dataset.axis = "sentence";
    span.dir = "auto";
    spans.push(span);
  }
  if (el.children.length !== tokens.length) el.replaceChildren(...spans.slice(0, tokens.length));
  tokens.forEach((token, i) => setText(spans[i], token));
}

/** Highlight, in the sentence, where query q attends (row: its weights; later tokens are masked). */
export function highlight(el, tokens, row, q) {
  [...el.children].forEach((span, j) => {
    const w = j <= q ? row[j].toFixed(4) : "0";
    if (span.style.getPropertyValue("--w") !== w) span.style.setProperty("--w", w);
    span.toggleAttribute("data-query", j === q);
    span.toggleAttribute("data-future", j > q);
  });
  return `Where the query “${clip(tokens[q])}” (position ${q}) attends, in the sentence (choose a token to read its weight):`;
}

export const cellText = (tokens, q, k, weight) => cellNamer(tokens)(q, k, weight.toFixed(4));

/** The query picker's options: one per token, "position: token". */
export function setOptions(select, tokens) {
  const options = [...select.options];
  for (let i = options.length; i < tokens.length; i++) options.push(new Option("", String(i)));
  if (select.options.length !== tokens.length) select.replaceChildren(...options.slice(0, tokens.length));
  tokens.forEach((token, i) => setText(options[i], `${i}: ${clip(token)}`));
}

/** "How this head works" from the head's info (mha_core's HEAD_INFO), and its notes. */
export function showInfo(root, info, layers, { averaged, ablated }) {
  setText(output(root, "label"), info.label);
  setText(output(root, "how-label"), info.label);
  setText(output(root, "layer"), layers[String(info.layer ?? "None")]);
  setText(output(root, "q_reads"), info.q_reads);
  setText(output(root, "k_reads"), info.k_reads);
  setText(output(root, "explanation"), info.explanation);
  output(root, "averaged").hidden = !averaged;
  output(root, "ablated").hidden = !ablated;
}
