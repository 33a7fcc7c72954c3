// The heatmaps' colour ramp, shared by the heads and training widgets: steps + 1 colours between the anchor
// colours the page carries (viridis, from the widget's widget.py), as CSS strings for cells and RGB bytes for
// the canvases. Built once; a weight's colour is a table look-up.

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

/** Draw pattern ([n, n]) into a canvas of n × n pixels (rgb: a palette's); masked cells stay transparent. */
export function drawThumb(canvas, pattern, rgb) {
  const n = pattern.length;
  if (canvas.width !== n) canvas.width = canvas.height = n;
  const ctx = canvas.getContext("2d");
  const image = ctx.createImageData(n, n);
  for (let q = 0; q < n; q++) {
    for (let k = 0; k <= q; k++) {
      const at = (q * n + k) * 4;
      image.data.set(rgb(pattern[q][k]), at);
      image.data[at + 3] = 255;
    }
  }
  ctx.putImageData(image, 0, 0);
}
