// The heatmap's reading, after the binding has filled it from a view: one cell in the tab order (roving
// tabindex), the selected query's row, the readout and the sentence's highlights (its tokens one tab stop too), each copied from the cells'
// own attributes (the view made every word and number); the cells' places and the slots of their names and
// colours, from the view's lists; and the heads' pictures from the cells' shades.
import { setData, setText } from "../runtime/dom.js";

/** Cell (q, k) of the table's body (a row's first cell is its label), or null. */
export const cellAt = (table, q, k) => table.tBodies[0].rows[q]?.cells[k + 1] ?? null;

/** Make cell (q, k) the one in the tab order (or (0, 0) when the sentence has no such cell), and mark its column. */
export function setActive(w, q, k) {
  const at = (k <= q && cellAt(w.table, q, k)) || cellAt(w.table, 0, 0);
  w.active = { q: Number(at.dataset.q), k: Number(at.dataset.k) };
  for (const td of w.table.querySelectorAll('td[tabindex="0"]')) if (td !== at) td.tabIndex = -1;
  if (at.tabIndex !== 0) at.tabIndex = 0;
  const column = w.table.tHead.rows[0].cells[w.active.k + 1];
  for (const th of w.table.tHead.querySelectorAll("th[data-active]")) if (th !== column) th.removeAttribute("data-active");
  column.toggleAttribute("data-active", true);
}

/** Read cell (q, k) in the readout: its name, as the view wrote it. */
export function showCell(w, q, k) {
  w.readout = { q, k };
  setText(w.readoutEl, cellAt(w.table, q, k).getAttribute("aria-label"));
}

/** Select query q: its row, the picker, its words, and where it attends highlighted in the sentence. */
export function selectQuery(w, q) {
  w.query = q;
  setData(w.root, "query", String(q));
  [...w.table.tBodies[0].rows].forEach((tr, i) => tr.toggleAttribute("data-selected", i === q));
  w.picker.value = String(q);
  setText(w.attends, w.table.tBodies[0].rows[q].dataset.attends);
  [...w.sentence.children].forEach((button, j) => {
    if (button.tagName !== "BUTTON") return;
    const weight = j <= q ? cellAt(w.table, q, j).dataset.weight : "0";
    if (button.style.getPropertyValue("--w") !== weight) button.style.setProperty("--w", weight);
    button.toggleAttribute("data-query", j === q);
    button.toggleAttribute("data-future", j > q);
  });
}

const TOKEN_MOVES = { ArrowLeft: -1, ArrowRight: 1 };

/** The sentence's tokens, one tab stop: the token that had it, else the first (a shorter sentence removed it, or
 * the binding cloned every token, each out of the tab order). */
export function keepTokenStop(sentence) {
  const tokens = sentence.querySelectorAll("button");
  if (tokens.length && !sentence.querySelector('button[tabindex="0"]')) tokens[0].tabIndex = 0;
}

/** The arrow keys move the tab stop and the focus along the sentence's tokens (Home and End to its ends). */
export function moveTokenFocus(sentence, event) {
  const tokens = [...sentence.querySelectorAll("button")];
  const here = tokens.indexOf(event.target);
  const to = event.key === "Home" ? 0 : event.key === "End" ? tokens.length - 1 : here + (TOKEN_MOVES[event.key] ?? NaN);
  const next = tokens[to]; // undefined past either end, or for another key
  if (here < 0 || !next) return;
  event.preventDefault();
  tokens[here].tabIndex = -1;
  next.tabIndex = 0;
  next.focus();
}

/** Give the cells a new sentence added (the binding clones them bare) their place: (q, k) drawn for k <= q, in
 * the tab order's reach, else masked. Cells already placed keep theirs: cell (q, k) is drawn or masked whatever n. */
export function placeCells(table) {
  for (const td of table.tBodies[0].querySelectorAll("td:not([data-q], [data-masked])")) {
    const [q, k] = [td.parentElement.sectionRowIndex, td.cellIndex - 1]; // a row's first cell is its label
    if (k > q) {
      td.dataset.masked = "";
    } else {
      Object.assign(td.dataset, { q: String(q), k: String(k) });
      td.tabIndex = -1;
    }
  }
}

/** The masked cells' names, row by row: the view's words for query, key and "masked". */
export function maskedNames({ names, data }) {
  const out = [];
  for (let q = 0; q < data.tokens; q++) for (let k = q + 1; k < data.tokens; k++) out.push(names.from[q] + names.to[k] + names.masked);
  return out;
}

const slots = new WeakMap(); // view -> {head: its cells' slot}, made once per view

/** The slot of head's drawn cells (row by row, k <= q) for the binding: each weight's text, its colour (a step of
 * the view's colours) and its name, the view's words for query and key, then the weight. */
export function headCells(view, head) {
  if (!slots.has(view)) slots.set(view, {});
  const made = slots.get(view);
  if (made[head]) return made[head];
  const { names, colours, data } = view;
  const { weight, shade } = view.heads[head].cells;
  const label = [];
  for (let q = 0, i = 0; q < data.tokens; q++) for (let k = 0; k <= q; k++, i++) label.push(names.from[q] + names.to[k] + weight[i]);
  made[head] = { data: { weight }, vars: { "background-color": { index: shade, values: colours } }, label };
  return made[head];
}


const pixels = new WeakMap(); // a view's colours -> each as [r, g, b, 255], read once per view

/** Draw a head's heatmap into a canvas of n × n pixels (its cells' shades, row by row); masked cells stay
 * transparent. */
export function drawThumb(canvas, { colours, data }, shade) {
  const n = data.tokens;
  if (canvas.width !== n) canvas.width = canvas.height = n;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(n, n);
  if (!pixels.has(colours)) pixels.set(colours, colours.map((c) => [...c.match(/\d+/g).map(Number), 255])); // "rgb(r, g, b)"
  const steps = pixels.get(colours);
  for (let q = 0, i = 0; q < n; q++) for (let k = 0; k <= q; k++, i++) image.data.set(steps[shade[i]], (q * n + k) * 4);
  ctx.putImageData(image, 0, 0);
}
