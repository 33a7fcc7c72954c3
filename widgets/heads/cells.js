// The heatmap's reading, after the binding has filled it from a view: one cell in the tab order (roving
// tabindex), the selected query's row, the readout and the sentence's highlights, each copied from the cells'
// own attributes (the view made every word and number); and the heads' pictures from the cells' colours.
import { setData, setText } from "../runtime/dom.js";

/** Cell (q, k) of the table's body (a row's first cell is its label), or null. */
export const cellAt = (table, q, k) => table.tBodies[0].rows[q]?.cells[k + 1] ?? null;

/** Make cell (q, k) the one in the tab order (or (0, 0) when the sentence has no such cell), and mark its column. */
export function setActive(w, q, k) {
  const at = (k <= q && cellAt(w.table, q, k)) || cellAt(w.table, 0, 0);
  w.active = { q: Number(at.dataset.q), k: Number(at.dataset.k) };
  for (const td of w.table.querySelectorAll("td[data-q]")) {
    const index = td === at ? "0" : "-1";
    if (td.getAttribute("tabindex") !== index) td.setAttribute("tabindex", index);
  }
  for (const [i, th] of [...w.table.tHead.rows[0].cells].entries()) th.toggleAttribute("data-active", i === w.active.k + 1);
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

const rgb = (hex) => [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));

/** Draw a head's heatmap (its grid slot's rows) into a canvas of n × n pixels; masked cells stay transparent. */
export function drawThumb(canvas, grid) {
  const n = grid.rows.length;
  if (canvas.width !== n) canvas.width = canvas.height = n;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(n, n);
  grid.rows.forEach((row, q) => {
    for (let k = 0; k <= q; k++) image.data.set([...rgb(row.rows[k].vars["--c"]), 255], (q * n + k) * 4);
  });
  ctx.putImageData(image, 0, 0);
}
