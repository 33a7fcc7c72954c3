// widgets/shared/palette.js: the heatmaps' colour ramp (its twin, widgets/palette.py's colour(), is compared
// with it by tests/site/test_widget_modules.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import { makePalette } from "../../../widgets/shared/palette.js";

const ANCHORS = ["#000000", "#ff8000", "#ffffff"];

test("the ends and the anchors are the anchor colours", () => {
  const palette = makePalette(ANCHORS, 4);
  assert.equal(palette.css(0), "#000000");
  assert.equal(palette.css(0.5), "#ff8000");
  assert.equal(palette.css(1), "#ffffff");
  assert.deepEqual([...palette.rgb(0.5)], [255, 128, 0]);
});

test("a step between two anchors is their linear mix, rounded; css and rgb agree", () => {
  const palette = makePalette(ANCHORS, 4);
  assert.equal(palette.css(0.25), "#804000"); // half of #ff8000: 127.5 -> 128, 64
  assert.equal(palette.css(0.75), "#ffc080");
  for (const w of [0, 0.1, 0.25, 0.6, 1]) {
    assert.equal(palette.css(w), `#${[...palette.rgb(w)].map((x) => x.toString(16).padStart(2, "0")).join("")}`);
  }
});

test("a weight is taken to its nearest step, and outside [0, 1] to the end it passed", () => {
  const palette = makePalette(ANCHORS, 4);
  assert.equal(palette.css(0.2), palette.css(0.25));
  assert.equal(palette.css(0.12), palette.css(0));
  assert.equal(palette.css(-3), "#000000");
  assert.equal(palette.css(7), "#ffffff");
});
