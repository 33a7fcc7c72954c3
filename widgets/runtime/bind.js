// The one binding: a widget's view (mha_page.views: every number and word already made by Python) into
// the slots its template rendered at build time (widgets/shared/slots.html.j2 renders the same keys).
// Text goes in as text; only what changed is written, so a view costs little more than its changes.
//   text -> textContent   value -> data-value   vars -> CSS variables (--v, --w)   label -> aria-label
//   hidden -> hidden      title -> title        data -> data-*   (a data or vars value null: removed)
//   attrs -> attributes as given (a chart's SVG geometry: points, x1, y1, class, display, …)
//   rows -> repeated elements, cloned from the element's <template>, its last child; count -> as many, left as cloned
//   cells -> many like elements at once, given as lists (a heatmap's cells: far smaller than a slot per cell)
//   outputs -> {name: slot} of the element's own data-output descendants
import { setData, setText } from "./dom.js";

/** The elements of scope marked data-output="name". */
const slotsIn = (scope, name) => scope.querySelectorAll(`[data-output="${CSS.escape(name)}"]`);

/** el's repeated children (those of its <template>'s tag: a row's <th> is not one of its <td>s; nor is a
 * child marked data-fixed, such as a header row's corner), made as many as count by cloning the template's
 * element or removing; the template stays last, so a new row comes after the others. */
function rowsOf(el, count) {
  const template = el.querySelector(":scope > template");
  const row = template.content.firstElementChild;
  const rows = () => [...el.children].filter((child) => child.tagName === row.tagName && !("fixed" in child.dataset));
  let have = rows();
  if (have.length !== count) {
    for (let i = have.length; i < count; i++) template.before(row.cloneNode(true));
    for (const extra of have.slice(count)) extra.remove();
    have = rows();
  }
  return have;
}

function setVar(el, name, value) {
  if (value === null) return el.style.removeProperty(name);
  const text = String(value);
  if (el.style.getPropertyValue(name) !== text) el.style.setProperty(name, text);
}

/** An attribute written only when it changes: a write restyles what attribute selectors match, even unchanged;
 * null removes it. */
function setAttr(el, name, text) {
  if (text === null) el.removeAttribute(name);
  else if (el.getAttribute(name) !== text) el.setAttribute(name, text);
}

/** Value i of a list of cells: list[i], or given as {index, values} (a few values repeated), values[index[i]]. */
const at = (list, i) => (Array.isArray(list) ? list[i] : list.values[list.index[i]]);

const cellStyles = new WeakMap(); // cell -> {property: the value the binding last wrote}

/** A cell's style property, written only when it changes: compared with what was written last, since reading a
 * colour back from the style costs more than writing it. */
function setCellStyle(el, name, value) {
  if (!cellStyles.has(el)) cellStyles.set(el, {});
  const written = cellStyles.get(el);
  if (written[name] === value) return;
  written[name] = value;
  el.style.setProperty(name, value);
}

/** cells ({data: {key: list}, vars: {property: list}, label: list}: value i for element i) into el's descendants
 * that match its data-cells selector, in document order. */
function putCells(el, cells) {
  const targets = el.querySelectorAll(el.dataset.cells);
  const data = Object.entries(cells.data ?? {}).map(([key, list]) => [`data-${key}`, list]);
  const vars = Object.entries(cells.vars ?? {});
  targets.forEach((target, i) => {
    for (const [name, list] of data) setAttr(target, name, at(list, i));
    for (const [name, list] of vars) setCellStyle(target, name, at(list, i));
    if (cells.label) setAttr(target, "aria-label", at(cells.label, i));
  });
}

/** One slot into one element. */
export function put(el, slot) {
  if (typeof slot === "string") return setText(el, slot);
  if ("text" in slot) setText(el, slot.text);
  if ("value" in slot) setData(el, "value", String(slot.value));
  if ("label" in slot && el.getAttribute("aria-label") !== slot.label) el.setAttribute("aria-label", slot.label);
  if ("title" in slot && el.title !== slot.title) el.title = slot.title;
  if ("hidden" in slot) el.hidden = Boolean(slot.hidden);
  for (const [name, value] of Object.entries(slot.vars ?? {})) setVar(el, name, value);
  for (const [key, value] of Object.entries(slot.data ?? {})) setAttr(el, `data-${key}`, value === null ? null : String(value));
  for (const [name, value] of Object.entries(slot.attrs ?? {})) setAttr(el, name, String(value));
  if (slot.rows) rowsOf(el, slot.rows.length).forEach((row, i) => put(row, slot.rows[i]));
  if ("count" in slot) rowsOf(el, slot.count);
  if (slot.cells) putCells(el, slot.cells);
  if (slot.outputs) fill(el, slot.outputs);
}

/** Each slot of outputs ({name: slot}) into every element of scope named for it. */
export function fill(scope, outputs) {
  for (const [name, slot] of Object.entries(outputs)) for (const el of slotsIn(scope, name)) put(el, slot);
}

/** A view ({data, outputs}) into its widget's root. */
export function bind(root, view) {
  for (const [key, value] of Object.entries(view.data ?? {})) setAttr(root, `data-${key}`, value === null ? null : String(value));
  fill(root, view.outputs ?? {});
}
