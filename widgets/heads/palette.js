// The heatmap's colour ramp: 256 steps between the anchor colours widget.py lists (viridis), as CSS
// strings for cells and RGB bytes for the canvases. Built once; a weight's colour is a table look-up.

const hex = (colour) => [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16));

/** {css(w), rgb(w)} for weights in [0, 1], matching widget.py's colour(). */
export function makePalette(anchors, steps) {
  const stops = anchors.map(hex);
  const css = [];
  const rgb = new Uint8ClampedArray((steps + 1) * 3);
  for (let s = 0; s <= steps; s++) {
    const t = (s / steps) * (stops.length - 1);
    const i = Math.min(Math.floor(t), stops.length - 2);
    const c = stops[i].map((a, j) => Math.round(a + (stops[i + 1][j] - a) * (t - i)));
    rgb.set(c, s * 3);
    css.push(`#${c.map((x) => x.toString(16).padStart(2, "0")).join("")}`);
  }
  const step = (w) => Math.round(Math.min(Math.max(w, 0), 1) * steps);
  return { css: (w) => css[step(w)], rgb: (w) => rgb.subarray(step(w) * 3, step(w) * 3 + 3) };
}
