// shared/numbers.js: whole numbers as a reader types them, and a field's limits in the field's own words.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readWhole, wholeNumber } from "../../widgets/shared/numbers.js";

/** A number field as readWhole reads it: its name, min, max and data-* (no DOM needed). */
const field = (name, min, max, dataset = {}) => ({ name, min: String(min), max: String(max), dataset, value: "" });

test("digits only, spaces around them ignored; anything else is no whole number", () => {
  assert.equal(wholeNumber(" 0042 "), 42);
  for (const text of ["", " ", "-5", "3.5", "1e12", "+1", "0x10", "½"]) assert.equal(wholeNumber(text), null, text);
});

test("a value within the field's limits is taken; outside them, the field and its limits are named", () => {
  const d_model = field("d_model", 1, 1048576, { limit: "1,048,576" });
  assert.deepEqual(readWhole(d_model, "512"), { value: 512 });
  assert.deepEqual(readWhole(d_model, "1048576"), { value: 1048576 });
  for (const text of ["0", "1048577", "100000000", "", "2.5"]) {
    assert.deepEqual(readWhole(d_model, text), { error: "d_model must be a whole number from 1 to 1,048,576." }, text);
  }
});

test("a field with words of its own is named in them", () => {
  const from = field("min_period", 2, 32, { words: "Block length from" });
  assert.deepEqual(readWhole(from, "1"), { error: "Block length from must be a whole number from 2 to 32." });
  assert.deepEqual(readWhole(from, "8"), { value: 8 });
});
