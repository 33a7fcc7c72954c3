// The shapes widget: sliders and fields for d_model, h, n and B (and more under "More"); every
// tensor's shape, the parameters, KV cache and FLOPs, computed by mha_core.shape_report in the page's
// Python worker. The page arrives pre-rendered (data-state="initial"); this module keeps it live.
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { output, showMessage } from "../runtime/dom.js";
import { noteIgnored, recomputeOnReady } from "../runtime/status.js";
import { render } from "./render.js";
import { readConfig, readURL, writeURL, writeValues } from "./state.js";

const PRESET_KEYS = ["d_model", "n_heads", "n_kv_heads", "d_head", "bias"];
const URL_DELAY_MS = 250;

/** Ask Python for w.next; changes made meanwhile coalesce into one more request (latest wins). */
async function compute(w) {
  if (w.busy) return;
  w.busy = true;
  w.root.dataset.state = "busy";
  while (w.next) {
    const config = w.next;
    w.next = null;
    try {
      render(w.root, await call("shape_report", config));
      w.root.dataset.state = w.next ? "busy" : "live";
    } catch (err) {
      w.root.dataset.state = "error";
      showMessage(w.root, "input-error", `Could not compute this configuration: ${err.message}`);
    }
  }
  w.busy = false;
}

/** Write config into the page's URL once the reader pauses (browsers throttle frequent writes). */
function keepInURL(w, config) {
  clearTimeout(w.urlTimer);
  w.urlTimer = setTimeout(() => history.replaceState(history.state, "", writeURL(config, location.search) + location.hash), URL_DELAY_MS);
}

/** Read the form; if it is valid, keep it in the URL and compute it. */
function update(w) {
  const { config, errors } = readConfig(w.form);
  showMessage(w.root, "input-error", errors.join(" "));
  if (errors.length) {
    output(w.root, "results").dataset.stale = "true"; // until the input is valid again
    return;
  }
  if (w.urlState) keepInURL(w, config);
  w.next = config;
  compute(w);
}

/** A preset's sizes; n_kv_heads and d_head stay empty (derived) where the preset uses the defaults. */
function presetValues(option) {
  const p = JSON.parse(option.dataset.config);
  return { ...p, n_kv_heads: p.n_kv_heads === p.n_heads ? "" : p.n_kv_heads,
    d_head: p.d_head * p.n_heads === p.d_model ? "" : p.d_head };
}

function onInput(w, target) {
  if (target.type !== "range") return;
  w.form.querySelector(`input[type="number"][name="${target.name}"]`).value = target.value;
  onEdit(w, target);
}

function onChange(w, target) {
  if (target.type === "range") return; // applied on input
  if (target.name !== "preset") return onEdit(w, target);
  if (target.value) writeValues(w.form, presetValues(target.selectedOptions[0]));
  update(w);
}

function onEdit(w, target) {
  if (PRESET_KEYS.includes(target.name)) w.form.querySelector('select[name="preset"]').value = "";
  if (target.type === "number") {
    const slider = w.form.querySelector(`input[type="range"][name="${target.name}"]`);
    if (slider) slider.value = target.value;
  }
  update(w);
}

function restoreFromURL(w) {
  const { values, ignored } = readURL(location.search, w.form);
  noteIgnored(w.root, ignored);
  if (Object.keys(values).length === 0) return;
  writeValues(w.form, values);
  if (["n_kv_heads", "d_head", "bias", "dtype_bytes"].some((k) => k in values)) w.form.querySelector("details").open = true;
  update(w);
}

function mount(root) {
  const w = { root, form: root.querySelector("form"), urlState: root.hasAttribute("data-url-state"), busy: false, next: null };
  w.form.addEventListener("submit", (event) => event.preventDefault());
  w.form.addEventListener("input", (event) => onInput(w, event.target));
  w.form.addEventListener("change", (event) => onChange(w, event.target));
  output(root, "suggestions").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-name]");
    if (!button) return;
    writeValues(w.form, { [button.dataset.name]: button.dataset.value });
    onEdit(w, w.form.querySelector(`input[type="number"][name="${button.dataset.name}"]`));
  });
  recomputeOnReady(root, () => update(w));
  if (w.urlState) restoreFromURL(w);
}

mountEach('[data-mha-widget="shapes"]', mount);
