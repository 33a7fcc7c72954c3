// Whole numbers as a reader types them, one rule for every widget: digits only (no sign, decimal point or
// exponent), leading and trailing spaces ignored. The limits are the field's own min and max attributes, and
// its refusal its data-error (mha_page.views.whole_error's words), which the template renders from what
// mha_core allows: nothing here restates them.

const WHOLE = /^\d+$/; // leading zeros allowed, as Python's int() allows them; a long one is past every max

/** text's whole number, or null when text is anything else (blank included). */
export function wholeNumber(text) {
  const trimmed = String(text).trim();
  return WHOLE.test(trimmed) ? Number(trimmed) : null;
}

/** A number field's text (its value by default) -> {value} when it holds a whole number within the field's min
 * and max, else {error}: the field's data-error, which names it and its limits in the reader's words. */
export function readWhole(input, text = input.value) {
  const value = wholeNumber(text);
  if (value !== null && value >= Number(input.min) && value <= Number(input.max)) return { value };
  return { error: input.dataset.error };
}
