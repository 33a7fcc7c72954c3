// One head against several: the reader shares one head's softmax between the subject, the clause and the
// previous token, or makes it wide; mha_core.one_vs_many, in the page's Python worker, answers with what
// reaches the verb from that one head and from three heads, and this writes it into the elements
// one_vs_many.html.j2 rendered at build time (text from Python, formatted there; numbers as --v/--w).
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { setData, setText } from "../runtime/dom.js";
import { recomputeOnReady } from "../runtime/status.js";

const RELATIONSHIPS = ["subject", "clause", "previous"];
const LAYERS = ["one", "many"];

/** el's text and data-value from one of Python's {text, value}. */
function show(el, { text, value }) {
  setText(el, text);
  setData(el, "value", value);
}

const outputOf = (root, name) => root.querySelector(`[data-output="${name}"]`);
const clamp01 = (v) => String(Math.min(Math.max(v, 0), 1));

/** Each head's row of attention at the verb: one row of cells per head, with its sentence for screen readers. */
function drawLooks(root, name, layer) {
  const box = root.querySelector(`[data-looks="${name}"]`);
  const template = box.querySelector(".mha-ovm__row");
  while (box.children.length < layer.weights.length) box.append(template.cloneNode(true));
  while (box.children.length > layer.weights.length) box.lastElementChild.remove();
  layer.weights.forEach((row, h) => {
    const div = box.children[h];
    div.setAttribute("aria-label", layer.shown.looks[h]);
    row.forEach((w, k) => div.children[k].style.setProperty("--w", String(w)));
  });
}

function drawLayer(root, name, layer) {
  show(outputOf(root, `${name}-label`), { text: layer.shown.label, value: String(layer.n_heads) });
  drawLooks(root, name, layer);
  RELATIONSHIPS.forEach((rel, i) => {
    show(outputOf(root, `${name}-${rel}`), layer.shown.arrives[i]);
    root.querySelector(`[data-bar="${name}-${rel}"]`).style.setProperty("--v", clamp01(layer.arrives[i]));
    layer.blocks.forEach((block, b) => {
      root.querySelector(`[data-segment="${name}-${b}-${rel}"]`).style.setProperty("--v", clamp01(block[i]));
    });
  });
  show(outputOf(root, `${name}-number`), layer.shown.number);
  show(outputOf(root, `${name}-verb`), { text: layer.verb_form, value: layer.verb_form });
}

function render(root, r) {
  RELATIONSHIPS.forEach((rel, i) => show(outputOf(root, `share-${rel}`), r.shown_shares[i]));
  for (const name of LAYERS) drawLayer(root, name, r[name]);
  setText(root.querySelector("[data-summary]"), r.summary);
  setData(root, "wide", String(r.wide));
}

function showError(root, text) {
  const el = root.querySelector('[data-message="error"]');
  el.hidden = !text;
  setText(el, text);
}

/** The form's values as one_vs_many's arguments. */
function args(form) {
  const out = { wide: form.elements.wide.checked };
  for (const rel of RELATIONSHIPS) out[rel] = form.elements[rel].valueAsNumber;
  return out;
}

/** Ask Python for the form's values and draw each answer. One call at a time: a move while an answer is on
 * its way marks it out of date, and the latest values are asked for as soon as it arrives, so a dragged
 * slider never queues calls. The widget is live once the answer matches the form. */
async function update(root, form) {
  root.dataset.state = "busy";
  if (root.asking) {
    root.outdated = true;
    return;
  }
  root.asking = true;
  let error = null;
  do {
    root.outdated = false;
    try {
      render(root, await call("one_vs_many", args(form)));
      error = null;
    } catch (err) {
      error = err;
    }
  } while (root.outdated);
  root.asking = false;
  showError(root, error ? `Could not compute this: ${error.message}` : "");
  root.dataset.state = error ? "error" : "live";
}

function mount(root) {
  const form = root.querySelector("form");
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", () => update(root, form));
  recomputeOnReady(root, () => update(root, form));
}

mountEach('[data-mha-widget="one-vs-many"]', mount);
