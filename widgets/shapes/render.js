// Show a shape_report's display (mha_core.display.shapes_display: every number already text, made by
// the same Python that rendered the page at build time) in the widget's existing nodes. Only the text
// and attributes that change are written, so an update costs well under a frame.
import { output, setData, setText } from "../runtime/dom.js";

const field = (row, name) => row.querySelector(`[data-field="${name}"]`);

function renderTensors(root, tensors) {
  for (const t of tensors) {
    const row = root.querySelector(`[data-tensor="${CSS.escape(t.name)}"]`);
    setData(row, "shape", t.shape);
    setData(row, "view", String(t.view));
    if (field(row, "op").title !== t.op) field(row, "op").title = t.op;
    setText(field(row, "symbol"), t.symbol);
    setText(field(row, "shape"), t.shape_text);
    setText(field(row, "numel"), t.numel);
    setText(field(row, "bytes"), t.bytes);
    setText(field(row, "note"), t.note);
  }
}

function renderParams(root, params) {
  for (const p of params) {
    const row = root.querySelector(`[data-param="${CSS.escape(p.name)}"]`);
    setText(field(row, "shape"), p.shape);
    setText(field(row, "numel"), p.numel);
  }
}

/** Each total ({value: exact digits, text}) into its data-output element. */
function renderTotals(root, totals) {
  for (const [name, { value, text }] of Object.entries(totals)) {
    const el = output(root, name);
    setData(el, "value", value);
    setText(el, text);
  }
}

/** The check's message and one button per suggested value (built from data: textContent only). */
function renderCheck(root, check) {
  const out = output(root, "check");
  setData(out, "ok", String(check.ok));
  setText(out, check.message);
  const list = output(root, "suggestions");
  const key = JSON.stringify(check.suggestions);
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  list.replaceChildren(...check.suggestions.map(({ name, value, text }) => {
    const li = document.createElement("li");
    const button = li.appendChild(document.createElement("button"));
    button.type = "button";
    button.dataset.name = name;
    button.dataset.value = value;
    button.textContent = text;
    return li;
  }));
}

/** Mark what no longer matches the form (stale: "true"/"false"): the check and its suggestions, and
 * the results, which also stay marked while the configuration does not fit. */
export function markStale(root, check, results) {
  setData(output(root, "check"), "stale", String(check));
  setData(output(root, "suggestions"), "stale", String(check));
  setData(output(root, "results"), "stale", String(results));
}

/** Show a shape_report's display; an invalid configuration leaves the last valid numbers, marked stale. */
export function render(root, shown) {
  renderCheck(root, shown.check);
  markStale(root, false, !shown.check.ok);
  if (!shown.check.ok) return;
  renderTensors(root, shown.tensors);
  renderParams(root, shown.params);
  renderTotals(root, shown.totals);
  setText(output(root, "kind"), shown.kind);
  setText(output(root, "n_layers"), shown.n_layers);
}
