// The widget's configuration: read from its form with checks a reader can act on, written back to it,
// and kept in the page's URL (only what differs from the widget's defaults, or from the chosen preset's
// values). Whatever the reader types or links stays data: it is parsed, never run.
import { readWhole } from "../shared/numbers.js";

const OPTIONAL = ["n_kv_heads", "d_head"]; // empty means "derive it" (h, d_model / h)
const URL_KEYS = ["preset", "d_model", "n_heads", "seq_len", "batch", "n_layers", ...OPTIONAL, "bias", "dtype_bytes"];

const numberField = (form, name) => form.querySelector(`input[type="number"][name="${name}"]`);
const presetSelect = (form) => form.querySelector('select[name="preset"]');

/** A number field's text (its value, or a URL's) -> {value}: a whole number within the field's limits, or
 * null (derived) for a blank optional field; anything else -> {error}. */
function parseNumber(input, text, badInput = false) {
  if (OPTIONAL.includes(input.name) && String(text).trim() === "" && !badInput) return { value: null };
  return readWhole(input, text);
}

function parseChoice(form, name, text) {
  if (name === "bias") return ["1", "true", "0", "false"].includes(text) ? { value: text === "1" || text === "true" } : {};
  if (name === "dtype_bytes" || name === "preset") {
    const options = [...form.querySelector(`select[name="${name}"]`).options].map((o) => o.value);
    return options.includes(text) && text ? { value: name === "preset" ? text : Number(text) } : {};
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

/** The configuration the page was built with (the form's default values: what the widget first shows). */
export function defaultConfig(form) {
  const config = {};
  for (const input of form.querySelectorAll('input[type="number"]')) config[input.name] = parseNumber(input, input.defaultValue).value;
  config.bias = form.querySelector('input[name="bias"]').defaultChecked;
  config.dtype_bytes = Number([...form.querySelector('select[name="dtype_bytes"]').options].find((o) => o.defaultSelected).value);
  return config;
}

/** The values the chosen preset sets ({} for "Custom"). */
export function presetValues(form) {
  const option = presetSelect(form).selectedOptions[0];
  return option?.value ? JSON.parse(option.dataset.values) : {};
}

/** Put values ({name: value}) into the form: number fields, bias, bytes per number, the preset. */
export function writeValues(form, values) {
  for (const [name, value] of Object.entries(values)) {
    if (name === "bias") form.querySelector('input[name="bias"]').checked = Boolean(value);
    else if (name === "dtype_bytes" || name === "preset") form.querySelector(`select[name="${name}"]`).value = String(value);
    else numberField(form, name).value = value ?? "";
  }
}

/** {values, ignored}: the configuration in a URL's query; entries that do not parse are listed, not used. */
export function readURL(search, form) {
  const values = {};
  const ignored = [];
  for (const [key, text] of new URLSearchParams(search)) {
    if (!URL_KEYS.includes(key)) continue;
    const { value, error } = parseChoice(form, key, text);
    if (value === undefined || error) ignored.push(`${key}=${text}`);
    else values[key] = value;
  }
  return { values, ignored };
}

/** The query string for config: the preset, and each value that differs from what the defaults and the
 * preset give; the URL's other parameters are kept. */
export function writeURL(form, config, search) {
  const preset = presetSelect(form).value;
  const base = { ...defaultConfig(form), ...presetValues(form) };
  const params = new URLSearchParams(search);
  for (const key of URL_KEYS) params.delete(key);
  if (preset) params.set("preset", preset);
  for (const key of URL_KEYS.slice(1)) {
    const value = config[key] ?? null;
    if (value === (base[key] ?? null)) continue;
    params.set(key, value === null ? "" : typeof value === "boolean" ? (value ? "1" : "0") : String(value));
  }
  const query = params.toString();
  return query ? `?${query}` : location.pathname;
}
