// The two curves of a training run as SVG: the loss on first occurrences and on repeats, and each head's
// detector score (layer 0: previous-token, later layers: induction), with a marker at the shown step.
// Every label goes in as text (textContent).
const NS = "http://www.w3.org/2000/svg";
const BOX = { left: 34, right: 312, top: 10, bottom: 148 }; // plot area inside the 320 × 170 viewBox
const DASHES = ["", "5 3", "2 2", "8 3 2 3"]; // one per head of a layer

function el(parent, name, attrs, text) {
  const node = parent.appendChild(document.createElementNS(NS, name));
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const x = (step, steps) => BOX.left + (step / steps) * (BOX.right - BOX.left);
const y = (value, top) => BOX.bottom - (Math.min(Math.max(value, 0), top) / top) * (BOX.bottom - BOX.top);

/** Axes, lines and the step marker of one chart; lines: [{values, className, dash, label}]. */
function draw(svg, steps, top, lines, history, step) {
  const title = svg.querySelector("title");
  svg.replaceChildren(title);
  el(svg, "line", { x1: BOX.left, y1: BOX.bottom, x2: BOX.right, y2: BOX.bottom, class: "axis" });
  el(svg, "line", { x1: BOX.left, y1: BOX.top, x2: BOX.left, y2: BOX.bottom, class: "axis" });
  el(svg, "text", { x: BOX.left - 4, y: BOX.top + 4, "text-anchor": "end" }, top.toFixed(top < 2 ? 1 : 0));
  el(svg, "text", { x: BOX.left - 4, y: BOX.bottom, "text-anchor": "end" }, "0");
  el(svg, "text", { x: BOX.left, y: BOX.bottom + 14 }, "step 0");
  el(svg, "text", { x: BOX.right, y: BOX.bottom + 14, "text-anchor": "end" }, String(steps));
  for (const line of lines) {
    const points = history.map((h, i) => `${x(h.step, steps).toFixed(1)},${y(line.values[i], top).toFixed(1)}`);
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

/** The lines of run's history: the two losses, and one score per head. */
function lines(run) {
  const { history, config } = run;
  const loss = [
    { values: history.map((h) => h.loss_first), className: "first", dash: "5 3", label: "loss on first occurrences" },
    { values: history.map((h) => h.loss_repeat), className: "repeat", dash: "", label: "loss on repeats" },
  ];
  const scores = [];
  for (let layer = 0; layer < config.n_layers; layer++) {
    const kind = layer === 0 ? "previous_token" : "induction";
    for (let head = 0; head < config.n_heads; head++) {
      scores.push({
        values: history.map((h) => h.scores[kind][layer][head]), className: `score ${kind}`,
        dash: DASHES[head % DASHES.length], label: `L${layer} H${head} ${layer === 0 ? "previous-token" : "induction"}`,
      });
    }
  }
  return { loss, scores };
}

/** Draw both charts of run, the marker at step. */
export function drawCharts(root, run, step) {
  const { loss, scores } = lines(run);
  const uniform = Math.log(run.config.vocab);
  const highest = Math.max(uniform, ...run.history.flatMap((h) => [h.loss_first, h.loss_repeat]));
  const top = Math.ceil(Math.min(highest, 2 * uniform)); // a diverging run is clipped, not rescaled to nothing
  draw(root.querySelector('[data-chart="loss"]'), run.steps, top, loss, run.history, step);
  draw(root.querySelector('[data-chart="scores"]'), run.steps, 1, scores, run.history, step);
  legend(root.querySelector('[data-legend="loss"]'), loss);
  legend(root.querySelector('[data-legend="scores"]'), scores);
}
