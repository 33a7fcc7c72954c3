// widgets/runtime/dom.js's pure part: a Python sentence's {marks} filled with texts made elsewhere.
import assert from "node:assert/strict";
import { test } from "node:test";
import { fillIn } from "../../../widgets/runtime/dom.js";

test("each {mark} is filled with its text, every time it stands; an unknown mark stays as written", () => {
  assert.equal(fillIn("Layer {head} at step {step}{knocked}.", { head: "L1 H0", step: "30", knocked: "" }),
    "Layer L1 H0 at step 30.");
  assert.equal(fillIn("{a} and {a}, {b}", { a: "x" }), "x and x, {b}");
});

test("a filled text is not read again for marks, nor for replacement patterns", () => {
  assert.equal(fillIn("“{query}” → “{key}”", { query: "{key}", key: "$&" }), "“{key}” → “$&”");
});
