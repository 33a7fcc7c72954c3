// Render a shape_report into the widget's existing nodes: only the text and attributes that change
// are written, so an update costs well under a frame. Formatters match widget.py's (build time).
import { output, setData, setText } from "../runtime/dom.js";

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"];
const FLOP_UNITS = ["FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP", "YFLOP"];
const SUGGESTED = { n_heads: "h", d_model: "d_model", n_kv_heads: "h_kv" };

export const fmtInt = (n) => n.toLocaleString("en-US");

function fmtScaled(value, base, units) {
  let x = value;
  let i = 0;
  for (; x >= base && i < units.length - 1; i++) x /= base;
  if (i === 0) return `${fmtInt(value)} ${units[0]}`;
  return `${x.toFixed(x < 10 ? 2 : x < 100 ? 1 : 0)} ${units[i]}`;
}

export const fmtBytes = (n) => fmtScaled(n, 1024, BYTE_UNITS);
export const fmtFlops = (n) => fmtScaled(n, 1000, FLOP_UNITS);

function attentionKind(hKv, h) {
  return hKv === h ? "multi-head" : hKv === 1 ? "multi-query" : "grouped-query";
}

function field(row, name) {
  return row.querySelector(`[data-field="${name}"]`);
}

function renderTensors(root, tensors) {
  for (const t of tensors) {
    const row = root.querySelector(`[data-tensor="${CSS.escape(t.name)}"]`);
    setData(row, "shape", t.shape.join(","));
    setData(row, "view", String(t.view));
    if (field(row, "op").title !== t.op) field(row, "op").title = t.op;
    setText(field(row, "symbol"), t.symbol);
    setText(field(row, "shape"), t.shape.join(" × "));
    setText(field(row, "numel"), fmtInt(t.numel));
    setText(field(row, "bytes"), fmtBytes(t.bytes));
    setText(field(row, "note"), t.note);
  }
}

function renderParams(root, report) {
  const weights = new Map(report.weights.map((w) => [w.name, w]));
  for (const row of root.querySelectorAll("[data-param]")) {
    const w = weights.get(row.dataset.param);
    setText(field(row, "shape"), w ? w.shape.join(" × ") : "none");
    setText(field(row, "numel"), fmtInt(report.params[row.dataset.param] ?? 0));
  }
  const total = output(root, "params");
  setData(total, "value", String(report.params.total));
  setText(total, fmtInt(report.params.total));
  const bytes = report.weights.reduce((sum, w) => sum + w.bytes, 0);
  setText(output(root, "params-bytes"), fmtBytes(bytes));
}

function renderTotal(root, name, value, format) {
  const el = output(root, name);
  setData(el, "value", String(value));
  setText(el, format(value));
}

/** The check's message and one button per suggested value (built from data: textContent only). */
function renderCheck(root, check) {
  const out = output(root, "check");
  setData(out, "ok", String(check.ok));
  setText(out, check.message);
  const list = output(root, "suggestions");
  const key = JSON.stringify(check.suggestions || {});
  if (list.dataset.key === key) return;
  list.dataset.key = key;
  const buttons = [];
  for (const [name, values] of Object.entries(check.suggestions || {})) {
    for (const value of values) {
      const li = document.createElement("li");
      const button = li.appendChild(document.createElement("button"));
      button.type = "button";
      button.dataset.name = name;
      button.dataset.value = String(value);
      button.textContent = `${SUGGESTED[name] || name} = ${fmtInt(value)}`;
      buttons.push(li);
    }
  }
  list.replaceChildren(...buttons);
}

/** Show report (a shape_report result); an invalid configuration dims the last valid numbers. */
export function render(root, report) {
  renderCheck(root, report.check);
  setData(output(root, "results"), "stale", String(!report.ok));
  if (!report.ok) return;
  renderTensors(root, report.tensors);
  renderParams(root, report);
  renderTotal(root, "kv_cache", report.kv_cache_bytes, fmtBytes);
  renderTotal(root, "flops", report.flops, fmtFlops);
  const { n_kv_heads, n_heads } = report.config;
  setText(output(root, "kind"), attentionKind(n_kv_heads, n_heads));
}
