// The shapes widget: sliders and fields for d_model, h, n and B (and more under "More"); every tensor's
// shape, the parameters, KV cache and FLOPs. The page's Python answers with the widget's view
// (mha_page.views.shapes), which the shared binding writes into the slots the template rendered; the
// shared life cycle marks what no longer matches the form. This module wires the controls, the sliders, the
// presets and the URL, and fills in Python's words for what it waits for before Python has answered.
import { bind } from "../runtime/bind.js";
import { fillIn, keepInURL, output, showMessage } from "../runtime/dom.js";
import { InputError, live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";
import { noteIgnored } from "../runtime/status.js";
import { sliderValue, syncSliders } from "./sliders.js";
import { defaultConfig, presetValues, readConfig, readURL, writeURL, writeValues } from "./state.js";

const PRESET_KEYS = ["d_model", "n_heads", "n_kv_heads", "d_head", "bias", "n_layers"];
const ADVANCED_KEYS = ["preset", "n_layers", "n_kv_heads", "d_head", "bias", "dtype_bytes"];

/** "h = 16, n = 128": the fields of config that differ from those shown (the main ones if none does), each in
 * Python's words (mha_page.views.shapes.pending_words) with its value as the form holds it. */
function changes(words, config, shown) {
  const differ = Object.keys(words.fields).filter((k) => config[k] !== shown[k]);
  return (differ.length ? differ : words.main)
    .map((k) => fillIn(words.fields[k], { value: words.values[String(config[k])] ?? config[k] })).join(words.separator);
}

/** The form's configuration as last read (w.read) and its real model (the preset: "" when the sizes are the
 * reader's) as shapes_view's arguments, or an InputError naming each field that holds no size it can take. */
function args(w) {
  const { config, errors } = w.read;
  if (errors.length) throw new InputError(errors.join(" "));
  return { ...config, preset: w.form.querySelector('select[name="preset"]').value };
}

/** Say what the widget waits for, while its results are marked stale (stale: the life cycle's marked). */
function sayPending(w, stale) {
  showMessage(w.root, "pending", stale ? w.waiting : "");
}

/** Read the form, once for this change (its fields' limits checked there, against the template's min and max:
 * mha_core's declaration), and place the sliders where it says. */
function read(w) {
  w.read = readConfig(w.form);
  syncSliders(w.form, w.read.config);
}

/** Ask for the form as read (the life cycle says what is stale, and when); keep it in the URL. */
function update(w, control) {
  read(w);
  const { config, errors } = w.read;
  w.waiting = errors.length ? "" : fillIn(w.words.waiting, { changes: changes(w.words, config, w.shown) });
  if (!output(w.root, "pending").hidden) sayPending(w, true); // already waiting: for these values now
  if (!errors.length && w.urlState) keepInURL(w, () => writeURL(w.form, config, location.search));
  w.request(control);
}

function onInput(w, target) {
  if (target.type === "range") w.form.querySelector(`input[type="number"][name="${target.name}"]`).value = sliderValue(target);
  if (target.type === "range" || target.type === "number") onEdit(w, target); // typing marks and asks at once
}

function onChange(w, target) {
  if (target.type === "range" || target.type === "number") return; // applied on input
  if (target.name !== "preset") return onEdit(w, target);
  writeValues(w.form, presetValues(w.form));
  update(w, target);
}

function onEdit(w, target) {
  if (PRESET_KEYS.includes(target.name)) w.form.querySelector('select[name="preset"]').value = "";
  update(w, target);
}

/** Apply the link's configuration: its preset first, then its other values. */
function restoreFromURL(w) {
  const { values: { preset, ...values }, ignored } = readURL(location.search, w.form);
  noteIgnored(w.root, ignored);
  if (preset) writeValues(w.form, { preset });
  if (!preset && Object.keys(values).length === 0) return;
  writeValues(w.form, { ...presetValues(w.form), ...values });
  if (preset || ADVANCED_KEYS.some((k) => k in values)) w.form.querySelector("details").open = true;
  update(w, w.form);
}

function mount(root) {
  const form = root.querySelector("form");
  const words = JSON.parse(root.querySelector("[data-shapes-words]").content.textContent);
  const w = { root, form, words, urlState: root.hasAttribute("data-url-state"), shown: defaultConfig(form), waiting: "" };
  w.request = live(root, {
    fn: "shapes_view",
    args: () => args(w),
    show: (view, config) => {
      bind(root, view);
      w.shown = config;
    },
    failure: (error, config) => fillIn(words.failed, { changes: changes(words, config, w.shown), error: error.message }),
    // Said only once the results are marked (at once before Python is ready, else after a moment): a line shown
    // and hidden again for each quick answer would move the page below twice per move, a layout each time.
    marked: (stale) => sayPending(w, stale),
    settled: () => sayPending(w, false),
  });
  read(w);
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => onInput(w, event.target));
  form.addEventListener("change", (event) => onChange(w, event.target));
  output(root, "suggestions").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-name]");
    if (!button) return;
    writeValues(form, { [button.dataset.name]: button.dataset.value });
    if (ADVANCED_KEYS.includes(button.dataset.name)) form.querySelector("details").open = true;
    onEdit(w, form.querySelector(`input[type="number"][name="${button.dataset.name}"]`));
  });
  if (w.urlState) restoreFromURL(w);
}

mountEach('[data-mha-widget="shapes"]', mount);
