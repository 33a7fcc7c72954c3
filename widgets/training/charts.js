// The two curves of a training run as SVG: the loss on first occurrences and on repeats against a uniform
// guess's loss, and each head's detector score (previous-token for the layers before the last, induction
// for the last; both for a model of one layer), with a marker at the shown step. The axes' words and numbers
// are Python's (run.axes, mha_core.views.training.chart_axes); every label goes in as text (textContent). Only
// the SVG's coordinates are computed here.
const NS = "http://www.w3.org/2000/svg";
const BOX = { left: 44, right: 312, top: 10, bottom: 140 }; // plot area inside the 320 × 180 viewBox
const DASHES = ["", "5 3", "2 2", "8 3 2 3"]; // one per head of a layer

function el(parent, name, attrs, text) {
  const node = parent.appendChild(document.createElementNS(NS, name));
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const x = (step, steps) => BOX.left + (step / steps) * (BOX.right - BOX.left);
const y = (value, top) => BOX.bottom - (Math.min(Math.max(value, 0), top) / top) * (BOX.bottom - BOX.top);

/** Axes with their ticks and units, lines and the step marker of one chart.
    axis: {top, unit, ticks: [{value, text}], level?: {value, text, label}} (chart_axes'); steps: {total, start,
    end, label} (the x-axis: its length in steps, and chart_axes' words for it);
    lines: [{values, history, className, dash, label}]. */
function draw(svg, steps, axis, lines, step) {
  const { top, unit, ticks, level } = axis;
  const title = svg.querySelector("title");
  svg.replaceChildren(title);
  for (const tick of ticks) {
    const at = y(tick.value, top);
    if (tick.value > 0) el(svg, "line", { x1: BOX.left, y1: at, x2: BOX.right, y2: at, class: "grid" });
    el(svg, "text", { x: BOX.left - 5, y: at + 4, "text-anchor": "end", "data-tick": tick.text }, tick.text);
  }
  el(svg, "line", { x1: BOX.left, y1: BOX.bottom, x2: BOX.right, y2: BOX.bottom, class: "axis" });
  el(svg, "line", { x1: BOX.left, y1: BOX.top, x2: BOX.left, y2: BOX.bottom, class: "axis" });
  el(svg, "text", { x: BOX.left, y: BOX.bottom + 15, "text-anchor": "middle" }, steps.start);
  el(svg, "text", { x: BOX.right, y: BOX.bottom + 15, "text-anchor": "end" }, steps.end);
  el(svg, "text", { x: (BOX.left + BOX.right) / 2, y: BOX.bottom + 32, "text-anchor": "middle", "data-axis": "x" }, steps.label);
  const middle = (BOX.top + BOX.bottom) / 2;
  el(svg, "text", { x: 12, y: middle, "text-anchor": "middle", transform: `rotate(-90 12 ${middle})`, "data-axis": "y" }, unit);
  for (const line of lines) {
    const points = line.history.map((h, i) => `${x(h.step, steps.total).toFixed(1)},${y(line.values[i], top).toFixed(1)}`);
    el(svg, "polyline", { points: points.join(" "), class: line.className, "stroke-dasharray": line.dash });
  }
  el(svg, "line", { x1: x(step, steps.total), y1: BOX.top, x2: x(step, steps.total), y2: BOX.bottom, class: "marker", "data-marker": step });
  if (level) { // drawn last, its label at the line's left end on a halo, so that neither a curve nor the marker hides it
    const at = y(level.value, top);
    el(svg, "line", { x1: BOX.left, y1: at, x2: BOX.right, y2: at, class: "level", "stroke-dasharray": "3 2", "data-level": level.text });
    el(svg, "text", { x: BOX.left + 6, y: at - 5, class: "halo", "data-level-label": "" }, level.label);
  }
}

function legend(figcaption, lines) {
  figcaption.replaceChildren(...lines.map((line) => {
    const item = document.createElement("span");
    const swatch = item.appendChild(document.createElementNS(NS, "svg"));
    swatch.setAttribute("viewBox", "0 0 24 6");
    swatch.setAttribute("aria-hidden", "true");
    el(swatch, "line", { x1: 0, y1: 3, x2: 24, y2: 3, class: line.className, "stroke-dasharray": line.dash });
    item.append(` ${line.label}`);
    return item;
  }));
}

const LOSSES = { loss_first: ["first", "5 3"], loss_repeat: ["repeat", ""] }; // class and dash of each loss

/** The lines of run's history, as run.axes names them: the two losses (and reference's loss on repeats, if
    given), one score per head. */
function lines(run, reference) {
  const { history, axes } = run;
  const loss = axes.loss.lines.map(({ key, label }) => ({
    values: history.map((h) => h[key]), history, className: LOSSES[key][0], dash: LOSSES[key][1], label }));
  if (reference) {
    loss.push({ values: reference.history.map((h) => h.loss_repeat), history: reference.history, className: "reference",
      dash: "1 2", label: reference.label });
  }
  const scores = axes.scores.lines.map(({ kind, layer, head, label }) => ({
    values: history.map((h) => h.scores[kind][layer][head]), history, className: `score ${kind}`,
    dash: DASHES[head % DASHES.length], label }));
  return { loss, scores };
}

/** Draw both charts of run, the marker at step; reference ({history, label}), if given, is another run whose
    loss on repeats is drawn for comparison. */
export function drawCharts(root, run, step, reference = null) {
  const { loss, scores } = lines(run, reference);
  const steps = { total: run.steps, ...run.axes.steps };
  draw(root.querySelector('[data-chart="loss"]'), steps, run.axes.loss, loss, step);
  draw(root.querySelector('[data-chart="scores"]'), steps, run.axes.scores, scores, step);
  legend(root.querySelector('[data-legend="loss"]'), [...loss, { className: "level", dash: "3 2", label: run.axes.loss.level.legend }]);
  legend(root.querySelector('[data-legend="scores"]'), scores);
}
