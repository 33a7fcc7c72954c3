// The two curves of a training run as SVG: the loss on first occurrences and on repeats against a uniform
// guess's loss, and each head's detector score (previous-token for the layers before the last, induction
// for the last; both for a model of one layer), with a marker at the shown step. Every label goes in as
// text (textContent).
const NS = "http://www.w3.org/2000/svg";
const BOX = { left: 44, right: 312, top: 10, bottom: 140 }; // plot area inside the 320 × 170 viewBox
const DASHES = ["", "5 3", "2 2", "8 3 2 3"]; // one per head of a layer

function el(parent, name, attrs, text) {
  const node = parent.appendChild(document.createElementNS(NS, name));
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const x = (step, steps) => BOX.left + (step / steps) * (BOX.right - BOX.left);
const y = (value, top) => BOX.bottom - (Math.min(Math.max(value, 0), top) / top) * (BOX.bottom - BOX.top);

/** Axes with their units, lines and the step marker of one chart.
    chart: {top, unit, lines: [{values, history, className, dash, label}], level?: {value, label}}. */
function draw(svg, steps, chart, step) {
  const { top, unit, lines, level } = chart;
  const title = svg.querySelector("title");
  svg.replaceChildren(title);
  el(svg, "line", { x1: BOX.left, y1: BOX.bottom, x2: BOX.right, y2: BOX.bottom, class: "axis" });
  el(svg, "line", { x1: BOX.left, y1: BOX.top, x2: BOX.left, y2: BOX.bottom, class: "axis" });
  el(svg, "text", { x: BOX.left - 4, y: BOX.top + 4, "text-anchor": "end" }, top.toFixed(top < 2 ? 1 : 0));
  el(svg, "text", { x: BOX.left - 4, y: BOX.bottom, "text-anchor": "end" }, "0");
  el(svg, "text", { x: BOX.left, y: BOX.bottom + 12, "text-anchor": "middle" }, "0");
  el(svg, "text", { x: BOX.right, y: BOX.bottom + 12, "text-anchor": "end" }, String(steps));
  el(svg, "text", { x: (BOX.left + BOX.right) / 2, y: BOX.bottom + 24, "text-anchor": "middle", "data-axis": "x" }, "training step");
  const middle = (BOX.top + BOX.bottom) / 2;
  el(svg, "text", { x: 10, y: middle, "text-anchor": "middle", transform: `rotate(-90 10 ${middle})`, "data-axis": "y" }, unit);
  if (level) {
    el(svg, "line", { x1: BOX.left, y1: y(level.value, top), x2: BOX.right, y2: y(level.value, top), class: "level", "stroke-dasharray": "3 2", "data-level": level.value.toFixed(4) });
    el(svg, "text", { x: BOX.right, y: y(level.value, top) + 10, "text-anchor": "end", "data-level-label": "" }, level.label); // below: the loss on first occurrences runs above it
  }
  for (const line of lines) {
    const points = line.history.map((h, i) => `${x(h.step, steps).toFixed(1)},${y(line.values[i], top).toFixed(1)}`);
    el(svg, "polyline", { points: points.join(" "), class: line.className, "stroke-dasharray": line.dash });
  }
  el(svg, "line", { x1: x(step, steps), y1: BOX.top, x2: x(step, steps), y2: BOX.bottom, class: "marker", "data-marker": step });
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

/** The score each head of a layer is drawn with: previous-token before the last layer, induction in it. */
function kinds(layer, n_layers) {
  if (n_layers === 1) return ["previous_token", "induction"];
  return [layer < n_layers - 1 ? "previous_token" : "induction"];
}

const NAMES = { previous_token: "previous-token", induction: "induction" };

/** The lines of run's history: the two losses (and reference's loss on repeats, if given), one score per head. */
function lines(run, reference) {
  const { history, config } = run;
  const loss = [
    { values: history.map((h) => h.loss_first), history, className: "first", dash: "5 3", label: "loss on first occurrences" },
    { values: history.map((h) => h.loss_repeat), history, className: "repeat", dash: "", label: "loss on repeats" },
  ];
  if (reference) {
    loss.push({ values: reference.history.map((h) => h.loss_repeat), history: reference.history, className: "reference",
      dash: "1 2", label: reference.label });
  }
  const scores = [];
  for (let layer = 0; layer < config.n_layers; layer++) {
    for (const kind of kinds(layer, config.n_layers)) {
      for (let head = 0; head < config.n_heads; head++) {
        scores.push({
          values: history.map((h) => h.scores[kind][layer][head]), history, className: `score ${kind}`,
          dash: DASHES[head % DASHES.length], label: `L${layer} H${head} ${NAMES[kind]}`,
        });
      }
    }
  }
  return { loss, scores };
}

/** Draw both charts of run, the marker at step; reference ({history, label}), if given, is another run whose
    loss on repeats is drawn for comparison. */
export function drawCharts(root, run, step, reference = null) {
  const { loss, scores } = lines(run, reference);
  const uniform = Math.log(run.config.vocab);
  const highest = Math.max(uniform, ...run.history.flatMap((h) => [h.loss_first, h.loss_repeat]));
  const top = Math.ceil(Math.min(highest, 2 * uniform)); // a diverging run is clipped, not rescaled to nothing
  const level = { value: uniform, label: `uniform guess: ln ${run.config.vocab} = ${uniform.toFixed(2)}` };
  draw(root.querySelector('[data-chart="loss"]'), run.steps, { top, unit: "loss (nats)", lines: loss, level }, step);
  draw(root.querySelector('[data-chart="scores"]'), run.steps, { top: 1, unit: "score (0 to 1)", lines: scores }, step);
  legend(root.querySelector('[data-legend="loss"]'), [...loss, { className: "level", dash: "3 2", label: `uniform guess (${uniform.toFixed(2)} nats)` }]);
  legend(root.querySelector('[data-legend="scores"]'), scores);
}
