// widgets/shared/grid.js: a cell's name joined from Python's words (mha_page.views.cell_names), the weight's text
// for a drawn cell and the masked word for a key after the query, nothing of its own.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cellNamer } from "../../../widgets/shared/grid.js";

test("a cell's name is the words given for its query and key, then its text or the masked word", () => {
  const name = cellNamer({ from: ["q0 ", "q1 "], to: ["k0 ", "k1 "], masked: "later" });
  assert.equal(name(1, 0, "0.2500"), "q1 k0 0.2500");
  assert.equal(name(1, 1, "0.7500"), "q1 k1 0.7500");
  assert.equal(name(0, 1), "q0 k1 later");
  assert.equal(name(0, 1, "0.0000"), "q0 k1 later");
});
