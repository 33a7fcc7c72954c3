// widgets/shared/numbers.js: whole numbers as a reader types them, checked against a field's limits.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readWhole, wholeNumber } from "../../../widgets/shared/numbers.js";

// What readWhole reads of a number field: its name, min, max (attributes are strings) and data-limit.
const field = (value, { min = "1", max = "4096", limit } = {}) =>
  ({ name: "d_model", value, min, max, dataset: limit === undefined ? {} : { limit } });

test("digits, with spaces around and leading zeros, are a whole number", () => {
  assert.equal(wholeNumber("512"), 512);
  assert.equal(wholeNumber("  64\t"), 64);
  assert.equal(wholeNumber("007"), 7);
  assert.equal(wholeNumber(0), 0);
});

test("anything else is no number: blank, sign, decimal point, exponent, hex, words", () => {
  for (const text of ["", "  ", "-1", "+1", "1.5", "1.", "1e3", "0x10", "Infinity", "NaN", "five", "1 2", "١٢"]) {
    assert.equal(wholeNumber(text), null, JSON.stringify(text));
  }
});

test("a whole number within the field's limits is its value, the limits included", () => {
  assert.deepEqual(readWhole(field("1")), { value: 1 });
  assert.deepEqual(readWhole(field("4096")), { value: 4096 });
  assert.deepEqual(readWhole(field("anything"), " 8 "), { value: 8 }); // text given: the field's value is not read
});

test("outside the limits or not a whole number: an error naming the field and its limits", () => {
  const message = "d_model must be a whole number from 1 to 4096.";
  for (const text of ["0", "4097", "1.5", "", "-3", "9".repeat(400)]) {
    assert.deepEqual(readWhole(field(text)), { error: message }, text);
  }
});

test("the error gives the maximum as data-limit writes it", () => {
  assert.deepEqual(readWhole(field("70000", { max: "65536", limit: "65,536" })),
    { error: "d_model must be a whole number from 1 to 65,536." });
});

test("a field with words of its own (data-words) is named in them", () => {
  const from = { name: "min_period", value: "1", min: "2", max: "32", dataset: { words: "Block length from" } };
  assert.deepEqual(readWhole(from), { error: "Block length from must be a whole number from 2 to 32." });
  assert.deepEqual(readWhole(from, "8"), { value: 8 });
});
