// A head's attention pattern drawn on a canvas: row i the query token i, column j the key token j (j ≤ i), each
// cell as strongly coloured as its weight (a later key, masked, in a grey of its own, as the heads widget draws
// it), the tokens written along both edges. rows[i] holds query i's i + 1 weights, each a byte (round(255 · w):
// the build's patterns and real_model_pattern's alike).
import { fillIn } from "../runtime/dom.js";

const MAX_SIDE = 520; // CSS pixels of the matrix and its labels, at most, where there is room
const LABEL = 0.28; // of the side, for the labels
const MIN_CELL = 10; // CSS pixels: a label of 9 px at least, the canvas drawn at its size (no scaling down); on a
//                      narrow screen a long text's pattern scrolls sideways instead

/** The lower-triangle rows of head `index` in an asset of quantized patterns (bytes: a byte a weight, 255 = 1,
 * every head's n(n+1)/2 bytes one after the other), each row its bytes. */
export function rowsFromBytes(bytes, index, n) {
  const size = (n * (n + 1)) / 2;
  const head = bytes.subarray(index * size, (index + 1) * size);
  const rows = [];
  for (let i = 0, at = 0; i < n; at += ++i) rows.push(Array.from(head.subarray(at, at + i + 1)));
  return rows;
}

/** token as the edges draw it: each character of drawn ({character: sign}) as its sign. */
const shown = (token, drawn) => [...token].map((c) => drawn[c] ?? c).join("");

/** Draw rows with the token labels on canvas, in the page's colours (drawn: pattern_words().drawn). */
export function drawPattern(canvas, rows, tokens, drawn) {
  const n = rows.length;
  const ratio = window.devicePixelRatio || 1;
  const room = Math.min(MAX_SIDE, canvas.parentElement.clientWidth || MAX_SIDE);
  const labels = Math.round(Math.max(room, MAX_SIDE / 2) * LABEL);
  const cell = Math.max(MIN_CELL, Math.floor((room - labels) / n));
  const side = labels + cell * n;
  canvas.width = side * ratio;
  canvas.height = side * ratio;
  canvas.style.width = `${side}px`;
  const ctx = canvas.getContext("2d");
  ctx.scale(ratio, ratio);
  const style = getComputedStyle(canvas);
  const ink = style.getPropertyValue("--mha-rm-ink").trim() || "#3f51b5";
  const empty = style.getPropertyValue("--mha-rm-empty").trim() || "#eee";
  const masked = style.getPropertyValue("--mha-rm-masked").trim() || "#bbb";
  for (let i = 0; i < n; i++) { // query i's keys: its own and the earlier ones, then the later ones, masked
    ctx.fillStyle = empty;
    ctx.fillRect(labels, labels + i * cell, (i + 1) * cell, cell);
    ctx.fillStyle = masked;
    ctx.fillRect(labels + (i + 1) * cell, labels + i * cell, (n - i - 1) * cell, cell);
  }
  ctx.fillStyle = ink;
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      ctx.globalAlpha = rows[i][j] / 255;
      ctx.fillRect(labels + j * cell, labels + i * cell, cell, cell);
    }
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = style.color;
  ctx.font = `${Math.min(12, cell - 1)}px ${style.fontFamily}`;
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  tokens.forEach((t, i) => ctx.fillText(shown(t, drawn), labels - 4, labels + (i + 0.5) * cell, labels - 6));
  ctx.save();
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "left";
  tokens.forEach((t, j) => ctx.fillText(shown(t, drawn), -labels + 4, labels + (j + 0.5) * cell, labels - 6));
  ctx.restore();
}

/** Query i's strongest key, for each query, in words: what the canvas shows, for a reader who cannot see it.
 * words: mha_page.views.real_model.pattern_words() (the sentence, a pair, and each byte's weight as text). */
export function describe(rows, tokens, words) {
  const strongest = rows.map((row, i) => {
    const j = row.indexOf(Math.max(...row));
    return fillIn(words.pair, { query: tokens[i], key: tokens[j], weight: words.weights[row[j]] });
  });
  return fillIn(words.sentence, { pairs: strongest.join(words.separator) });
}
