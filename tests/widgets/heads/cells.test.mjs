// widgets/heads/cells.js: the slots of a view's cells, in the order the binding fills them (row by row: a head's
// drawn cells k <= q, the masked ones k > q), named by the view's words alone.
import assert from "node:assert/strict";
import { test } from "node:test";
import { headCells, maskedNames } from "../../../widgets/heads/cells.js";

const view = {
  data: { tokens: 3 },
  names: { from: ["a0 → ", "b1 → ", "c2 → "], to: ["a0: ", "b1: ", "c2: "], masked: "masked" },
  colours: ["rgb(0, 0, 0)", "rgb(9, 9, 9)"],
  heads: { h: { cells: { weight: ["1.0000", "0.2500", "0.7500", "0.1000", "0.2000", "0.7000"], shade: [1, 0, 1, 0, 0, 1] } } },
};

test("a head's drawn cells: each weight's text, its colour from the view's steps, its name", () => {
  const slot = headCells(view, "h");
  assert.deepEqual(slot.label, ["a0 → a0: 1.0000", "b1 → a0: 0.2500", "b1 → b1: 0.7500",
    "c2 → a0: 0.1000", "c2 → b1: 0.2000", "c2 → c2: 0.7000"]);
  assert.equal(slot.data.weight, view.heads.h.cells.weight);
  const { index, values } = slot.vars["background-color"];
  assert.deepEqual(index.map((i) => values[i]), ["rgb(9, 9, 9)", "rgb(0, 0, 0)", "rgb(9, 9, 9)", "rgb(0, 0, 0)", "rgb(0, 0, 0)", "rgb(9, 9, 9)"]);
  assert.equal(headCells(view, "h"), slot); // made once per view
});

test("the masked cells, row by row after each query", () => {
  assert.deepEqual(maskedNames(view), ["a0 → b1: masked", "a0 → c2: masked", "b1 → c2: masked"]);
});
