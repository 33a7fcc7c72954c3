// widgets/shared/numbers.js: whole numbers as a reader types them, checked against a field's limits.
import assert from "node:assert/strict";
import { test } from "node:test";
import { readWhole, wholeNumber } from "../../../widgets/shared/numbers.js";

// What readWhole reads of a number field: its min, max (attributes are strings) and data-error.
const ERROR = "d_model must be a whole number from 1 to 4,096.";
const field = (value, { min = "1", max = "4096" } = {}) => ({ name: "d_model", value, min, max, dataset: { error: ERROR } });

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

test("outside the limits or not a whole number: the field's own error (data-error)", () => {
  for (const text of ["0", "4097", "1.5", "", "-3", "9".repeat(400)]) {
    assert.deepEqual(readWhole(field(text)), { error: ERROR }, text);
  }
  assert.deepEqual(readWhole(field("3", { min: "4", max: "8" })), { error: ERROR }); // the limits are min and max
  assert.deepEqual(readWhole(field("9", { min: "4", max: "8" })), { error: ERROR });
  assert.deepEqual(readWhole(field("8", { min: "4", max: "8" })), { value: 8 });
});
