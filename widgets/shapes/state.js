// The widget's configuration: read from its form with checks a reader can act on, written back to it,
// and kept in the page's URL. Whatever the reader types or links stays data: it is parsed, never run.
import { clip } from "../runtime/dom.js";
import { fmtInt } from "./render.js";

const OPTIONAL = ["n_kv_heads", "d_head"]; // empty means "derive it" (h, d_model / h)
const URL_KEYS = ["d_model", "n_heads", "seq_len", "batch", ...OPTIONAL, "bias", "dtype_bytes"];
const SHOWN_CHARS = 40;

const numberField = (form, name) => form.querySelector(`input[type="number"][name="${name}"]`);

/** "512" -> {value: 512}; anything but a whole number in min..max -> {error}. */
export function parseWhole(text, name, min, max) {
  const trimmed = String(text).trim();
  const value = /^\d{1,16}$/.test(trimmed) ? Number(trimmed) : NaN;
  if (value >= min && value <= max) return { value };
  return { error: `${name} must be a whole number from ${fmtInt(min)} to ${fmtInt(max)}.` };
}

/** A number field's text (its value, or a URL's): blank is null (derived) where the field is optional. */
function parseNumber(input, text, badInput = false) {
  if (OPTIONAL.includes(input.name) && text.trim() === "" && !badInput) return { value: null };
  return parseWhole(text, input.name, Number(input.min), Number(input.max));
}

function parseChoice(form, name, text) {
  if (name === "bias") return ["1", "true", "0", "false"].includes(text) ? { value: text === "1" || text === "true" } : {};
  if (name === "dtype_bytes") {
    const options = [...form.querySelector('select[name="dtype_bytes"]').options].map((o) => o.value);
    return options.includes(text) ? { value: Number(text) } : {};
  }
  return parseNumber(numberField(form, name), text);
}

/** {config, errors}: the form's configuration; each invalid number field is marked aria-invalid. */
export function readConfig(form) {
  const config = {};
  const errors = [];
  for (const input of form.querySelectorAll('input[type="number"]')) {
    const { value, error } = parseNumber(input, input.value, input.validity.badInput);
    const invalid = String(Boolean(error));
    if (input.getAttribute("aria-invalid") !== invalid) input.setAttribute("aria-invalid", invalid);
    if (error) errors.push(error);
    else config[input.name] = value;
  }
  config.bias = form.querySelector('input[name="bias"]').checked;
  config.dtype_bytes = Number(form.querySelector('select[name="dtype_bytes"]').value);
  return { config, errors };
}

/** Put values ({name: value}) into the form: number fields, their sliders, bias, bytes per number. */
export function writeValues(form, values) {
  for (const [name, value] of Object.entries(values)) {
    if (name === "bias") form.querySelector('input[name="bias"]').checked = Boolean(value);
    else if (name === "dtype_bytes") form.querySelector('select[name="dtype_bytes"]').value = String(value);
    else for (const input of form.querySelectorAll(`input[name="${name}"]`)) input.value = value ?? "";
  }
}

/** {values, ignored}: the configuration in a URL's query; entries that do not parse are listed, not used. */
export function readURL(search, form) {
  const values = {};
  const ignored = [];
  for (const [key, text] of new URLSearchParams(search)) {
    if (!URL_KEYS.includes(key)) continue;
    const { value, error } = parseChoice(form, key, text);
    if (value === undefined || error) ignored.push(`${key}=${clip(text, SHOWN_CHARS)}`);
    else values[key] = value;
  }
  return { values, ignored };
}

/** The query string for config, keeping the URL's other parameters. */
export function writeURL(config, search) {
  const params = new URLSearchParams(search);
  for (const key of URL_KEYS) {
    const value = config[key];
    if (value === null || value === undefined) params.delete(key);
    else params.set(key, key === "bias" ? (value ? "1" : "0") : String(value));
  }
  return `?${params}`;
}
