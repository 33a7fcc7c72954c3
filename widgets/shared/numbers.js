// Whole numbers as a reader types them, one rule for every widget: digits only (no sign, decimal point or
// exponent), leading and trailing spaces ignored. The limits are the field's own min and max attributes,
// which the template renders from what mha_core allows: nothing here restates them.

const WHOLE = /^\d+$/; // leading zeros allowed, as Python's int() allows them; a long one is past every max

/** text's whole number, or null when text is anything else (blank included). */
export function wholeNumber(text) {
  const trimmed = String(text).trim();
  return WHOLE.test(trimmed) ? Number(trimmed) : null;
}

/** A number field's text (its value by default) -> {value} when it holds a whole number within the field's min
 * and max, else {error} naming the field (in its data-words, the reader's words for it, or by its name) and its
 * limits (data-limit: the maximum as mha_core writes it). */
export function readWhole(input, text = input.value) {
  const value = wholeNumber(text);
  const [min, max] = [Number(input.min), Number(input.max)];
  if (value !== null && value >= min && value <= max) return { value };
  const field = input.dataset.words ?? input.name;
  return { error: `${field} must be a whole number from ${min} to ${input.dataset.limit ?? max}.` };
}
