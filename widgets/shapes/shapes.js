// The shapes widget: sliders and fields for d_model, h, n and B (and more under "More"); every
// tensor's shape, the parameters, KV cache and FLOPs, computed by mha_core.shape_report in the page's
// Python worker. The page arrives pre-rendered (data-state="initial"); this module keeps it live. Until
// Python answers for the form's values, what is shown is marked stale and a line says what it waits for
// (or, if Python cannot answer, why).
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { keepInURL, output, setData, setText, showMessage } from "../runtime/dom.js";
import { noteIgnored, recomputeOnReady } from "../runtime/status.js";
import { markStale, render } from "./render.js";
import { syncSliders, sliderValue } from "./sliders.js";
import { defaultConfig, presetValues, readConfig, readURL, writeURL, writeValues } from "./state.js";

const PRESET_KEYS = ["d_model", "n_heads", "n_kv_heads", "d_head", "bias", "n_layers"];
const ADVANCED_KEYS = ["preset", "n_layers", "n_kv_heads", "d_head", "bias", "dtype_bytes"];
const SYMBOLS = { d_model: "d_model", n_heads: "h", seq_len: "n", batch: "B", n_layers: "L", n_kv_heads: "h_kv",
  d_head: "d_head", bias: "bias", dtype_bytes: "bytes per number" };

/** "h = 16, n = 128": the values of config that differ from those shown (all of them if none do). */
function changes(config, shown) {
  const differ = Object.keys(SYMBOLS).filter((k) => config[k] !== shown[k]);
  return (differ.length ? differ : ["d_model", "n_heads", "seq_len", "batch"])
    .map((k) => `${SYMBOLS[k]} = ${config[k] ?? "derived"}`).join(", ");
}

/** What the chosen preset's whole-model KV cache covers, under the figure; for a model that keeps no KV
 * cache (an encoder), the KV cache figures say so instead of a size. */
function showCache(w) {
  const option = w.form.querySelector('select[name="preset"]').selectedOptions[0];
  const note = output(w.root, "cache_note");
  setText(note, option?.dataset.cacheNote || "");
  note.hidden = !option?.dataset.cacheNote;
  if (!option?.hasAttribute("data-no-cache")) return;
  for (const name of ["kv_cache", "kv_cache_model"]) {
    setData(output(w.root, name), "value", "0");
    setText(output(w.root, name), "none");
  }
}

/** Ask Python for w.next; changes made meanwhile coalesce into one more request (latest wins). */
async function compute(w) {
  if (w.busy) return;
  w.busy = true;
  w.root.dataset.state = "busy";
  while (w.next) {
    const config = w.next;
    w.next = null;
    try {
      const report = await call("shape_report", config);
      render(w.root, report.display);
      showCache(w);
      w.shown = config;
      if (w.next) markStale(w.root, true, true);
      else showMessage(w.root, "pending", "");
      w.root.dataset.state = w.next ? "busy" : "live";
    } catch (err) {
      w.root.dataset.state = "error";
      showMessage(w.root, "pending", "");
      showMessage(w.root, "input-error", `Could not compute ${changes(config, w.shown)}: ${err.message}`);
    }
  }
  w.busy = false;
}

/** Read the form; if it is valid, keep it in the URL and compute it; until then mark the outputs stale. */
function update(w) {
  const { config, errors } = readConfig(w.form);
  showMessage(w.root, "input-error", errors.join(" "));
  markStale(w.root, true, true);
  if (errors.length) return showMessage(w.root, "pending", "");
  if (w.urlState) keepInURL(w, () => writeURL(w.form, config, location.search));
  showMessage(w.root, "pending", `Waiting for Python to compute ${changes(config, w.shown)}…`);
  w.next = config;
  compute(w);
}

function onInput(w, target) {
  if (target.type !== "range") return;
  w.form.querySelector(`input[type="number"][name="${target.name}"]`).value = sliderValue(target);
  onEdit(w, target);
}

function onChange(w, target) {
  if (target.type === "range") return; // applied on input
  if (target.name !== "preset") return onEdit(w, target);
  writeValues(w.form, presetValues(w.form));
  syncSliders(w.form);
  update(w);
}

function onEdit(w, target) {
  if (PRESET_KEYS.includes(target.name)) w.form.querySelector('select[name="preset"]').value = "";
  syncSliders(w.form);
  update(w);
}

/** Apply the link's configuration: its preset first, then its other values. */
function restoreFromURL(w) {
  const { values: { preset, ...values }, ignored } = readURL(location.search, w.form);
  noteIgnored(w.root, ignored);
  if (preset) writeValues(w.form, { preset });
  if (!preset && Object.keys(values).length === 0) return;
  writeValues(w.form, { ...presetValues(w.form), ...values });
  syncSliders(w.form);
  if (preset || ADVANCED_KEYS.some((k) => k in values)) w.form.querySelector("details").open = true;
  update(w);
}

function mount(root) {
  const form = root.querySelector("form");
  const w = { root, form, urlState: root.hasAttribute("data-url-state"), busy: false, next: null, shown: defaultConfig(form) };
  syncSliders(form);
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
  recomputeOnReady(root, () => update(w));
  if (w.urlState) restoreFromURL(w);
}

mountEach('[data-mha-widget="shapes"]', mount);
