// widgets/training/view.js: a checkpoint's patterns read from Python's text of each drawn weight (layer, head,
// row by row up to the query), its texts kept as the cells read them and a masked key weighing 0.
import assert from "node:assert/strict";
import { test } from "node:test";
import { decodePatterns } from "../../../widgets/training/view.js";

test("each head's weights and texts, in the order Python wrote them", () => {
  const text = ["1.0000", "0.2500", "0.7500", "1.0000", "0.6000", "0.4000"].join("");
  const patterns = decodePatterns(text, { n_layers: 2, n_heads: 1 }, 2);
  assert.deepEqual(patterns[0][0], { weights: [[1, 0], [0.25, 0.75]], texts: [["1.0000"], ["0.2500", "0.7500"]] });
  assert.deepEqual(patterns[1][0], { weights: [[1, 0], [0.6, 0.4]], texts: [["1.0000"], ["0.6000", "0.4000"]] });
});
