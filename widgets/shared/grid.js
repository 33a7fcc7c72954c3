// An attention heatmap, shared by the heads and training widgets: a table with queries as rows and keys as
// columns, the tokens on both axes, and the masked triangle (k > q) left empty. Nodes are kept and reused: a
// new sentence adds or removes rows and cells, a new head rewrites only the cells whose weight changed. One
// cell at a time is in the tab order (roving tabindex); the arrow keys move within the drawn triangle.
// Tokens are the reader's text: textContent only. Every word is Python's (mha_page.views.cell_names): this only joins.
import { setText } from "../runtime/dom.js";

/** namer(q, k, weight's text) for names = {from, to, masked} (cell_names'): from[q] + to[k] + the text, or masked
    for a key after the query. */
export const cellNamer = ({ from, to, masked }) => (q, k, text) => from[q] + to[k] + (k > q ? masked : text);

const MOVES = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

function label(axis, index, scope) {
  const th = document.createElement("th");
  th.scope = scope;
  const span = th.appendChild(document.createElement("span"));
  span.dataset.tokenIndex = String(index);
  span.dataset.axis = axis;
  span.dir = "auto";
  return th;
}

function cell(q, k) {
  const td = document.createElement("td");
  if (k > q) {
    td.dataset.masked = "";
  } else {
    td.dataset.q = String(q);
    td.dataset.k = String(k);
    td.tabIndex = -1;
  }
  return td;
}

/** The pre-rendered table as {n, corner, cols: [th], rows: [{tr, label, cells: [td]}], active: {q, k}}. */
export function adoptGrid(table) {
  const [corner, ...cols] = table.tHead.rows[0].cells;
  const rows = [...table.tBodies[0].rows].map((tr) => {
    const [th, ...cells] = tr.cells;
    return { tr, label: th, cells };
  });
  const focusable = table.querySelector('td[tabindex="0"]');
  const active = focusable ? { q: Number(focusable.dataset.q), k: Number(focusable.dataset.k) } : { q: 0, k: 0 };
  return { table, n: rows.length, corner, cols, rows, active, renamed: true };
}

export const cellAt = (g, q, k) => (q < g.n && k <= q ? g.rows[q].cells[k] : null);

/** Show tokens on both axes, with n = tokens.length rows of n cells, every cell named in names' words (cell_names':
    the masked ones here, the drawn ones by paint); nothing to do if they are the tokens and names shown (a run's
    checkpoints share them). */
export function setTokens(g, tokens, names) {
  const shown = JSON.stringify([tokens, names]);
  if (shown === g.shown) return;
  g.shown = shown;
  const name = (g.name = cellNamer(names));
  const n = tokens.length;
  for (let i = g.cols.length; i < n; i++) g.cols.push(label("key", i, "col"));
  for (let q = g.rows.length; q < n; q++) {
    g.rows.push({ tr: document.createElement("tr"), label: label("query", q, "row"), cells: [] });
  }
  if (g.n !== n) {
    for (const [q, row] of g.rows.slice(0, n).entries()) {
      for (let k = row.cells.length; k < n; k++) row.cells.push(cell(q, k));
      row.tr.replaceChildren(row.label, ...row.cells.slice(0, n));
    }
    g.table.tHead.rows[0].replaceChildren(g.corner, ...g.cols.slice(0, n));
    g.table.tBodies[0].replaceChildren(...g.rows.slice(0, n).map((row) => row.tr));
    g.n = n;
  }
  tokens.forEach((token, i) => {
    setText(g.cols[i].firstChild, token);
    setText(g.rows[i].label.firstChild, token);
  });
  for (let q = 0; q < n; q++) {
    for (let k = q + 1; k < n; k++) g.rows[q].cells[k].ariaLabel = name(q, k);
  }
  g.renamed = true; // paint names every drawn cell anew
  if (!cellAt(g, g.active.q, g.active.k)) setActive(g, 0, 0);
}

/** Colour each drawn cell by its weight ({weights: [n, n], texts: [n, q + 1]}, row = query: the weights and the
    texts Python wrote of them), record its text and name the cell in setTokens' words for assistive technology. */
export function paint(g, { weights, texts }, colour) {
  for (let q = 0; q < g.n; q++) {
    const cells = g.rows[q].cells;
    for (let k = 0; k <= q; k++) {
      const text = texts[q][k];
      if (cells[k].dataset.weight === text && !g.renamed) continue;
      cells[k].dataset.weight = text;
      cells[k].style.backgroundColor = colour(weights[q][k]);
      cells[k].ariaLabel = g.name(q, k, text);
    }
  }
  g.renamed = false;
}

/** Make cell (q, k) the one in the tab order, and mark its row and column. */
export function setActive(g, q, k) {
  const old = g.rows[g.active.q]?.cells[g.active.k]; // kept even when a shorter sentence left it out
  if (old) old.tabIndex = -1;
  g.cols[g.active.k]?.removeAttribute("data-active");
  g.active = { q, k };
  cellAt(g, q, k).tabIndex = 0;
  g.cols[k].dataset.active = "";
}

/** The cell a key press moves to from (q, k), or null if the key is not a move. */
export function moveFrom(g, q, k, event) {
  const last = g.n - 1;
  if (event.key === "Home") return event.ctrlKey ? [0, 0] : [q, 0];
  if (event.key === "End") return event.ctrlKey ? [last, last] : [q, q];
  const move = MOVES[event.key];
  if (!move) return null;
  const to = Math.min(Math.max(q + move[0], 0), last);
  return [to, Math.min(Math.max(k + move[1], 0), to)];
}

/** The reader's way through g: one cell in the tab order, the arrow keys (moveFrom) move the focus, and a cell
    focused or pointed at is read by read(td). */
export function followCells(g, read) {
  setActive(g, g.active.q, g.active.k);
  const at = (event) => event.target.closest("td[data-q]");
  const place = (td) => [Number(td.dataset.q), Number(td.dataset.k)];
  g.table.addEventListener("focusin", (event) => at(event) && (setActive(g, ...place(at(event))), read(at(event))));
  g.table.addEventListener("mouseover", (event) => at(event) && read(at(event)));
  g.table.addEventListener("keydown", (event) => {
    const to = at(event) && moveFrom(g, ...place(at(event)), event);
    if (to) {
      event.preventDefault();
      cellAt(g, ...to).focus();
    }
  });
}
