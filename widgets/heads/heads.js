// The heads widget: the constructed heads' attention patterns on a sentence, as a heatmap, small
// multiples and highlights in the sentence, with the knock-out of the previous-token head. This module
// wires the events and asks Python (head_patterns, head_weights); render.js draws. One head_patterns
// call answers all five heads, so switching heads renders from the result in hand, without Python.
// The page arrives pre-rendered (data-state="initial"); this module keeps it live.
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { keepInURL, output, showMessage } from "../runtime/dom.js";
import { noteIgnored, recomputeOnReady, whileShown } from "../runtime/status.js";
import { adoptGrid, cellAt, moveFrom, setActive } from "../shared/grid.js";
import { makePalette } from "../shared/palette.js";
import { renderHead, selectQuery, showCell, showResult } from "./render.js";
import { keyOf, markStale } from "./stale.js";
import { readURL, writeURL } from "./state.js";
import { renderWeights } from "./weights.js";

const CACHE_SIZE = 8; // results kept, by sentence and knock-out

// The knock-out box's value is the head it zeroes.
const argsOf = (w, job) => ({ text_or_tokens: job.sentence, ablate: job.ablate ? [w.ablate.value] : [] });

/** The result for job: from the cache at once, else from Python (requests made meanwhile: latest wins). */
async function request(w, job) {
  w.wanted = job;
  const hit = w.cache.get(keyOf(job));
  if (hit) return finish(w, job, hit);
  w.root.dataset.state = "busy";
  markStale(w);
  if (w.pending) return;
  w.pending = true;
  while (w.pending) {
    const asked = w.wanted;
    try {
      const result = await call("head_patterns", argsOf(w, asked));
      w.cache.set(keyOf(asked), result);
      if (w.cache.size > CACHE_SIZE) w.cache.delete(w.cache.keys().next().value);
      if (asked === w.wanted) finish(w, asked, result);
    } catch (err) {
      if (asked === w.wanted) fail(w, err);
    }
    w.pending = asked !== w.wanted && !w.cache.has(keyOf(w.wanted));
  }
}

/** The shown state, kept in the page's URL. */
function keepState(w) {
  if (w.urlState) keepInURL(w, () => writeURL(location.search, { ...w.job, head: w.head }, w.data.sentence));
}

function finish(w, job, result) {
  showResult(w, job, result);
  w.root.dataset.state = "live";
  markStale(w);
  if (w.details.open) showWeights(w);
  keepState(w);
}

function fail(w, err) {
  w.root.dataset.state = "error";
  showMessage(w.root, "error", `Could not compute the patterns of this sentence: ${err.message}`);
  markStale(w);
}

/** Apply the sentence field (on change, Enter or submit) and the knock-out box. */
function apply(w) {
  const sentence = w.textarea.value;
  const job = { sentence, ablate: w.ablate.checked };
  if (!sentence.trim()) { // nothing to compute: what is shown stays, marked as not the box's
    w.wanted = job;
    markStale(w);
    return showMessage(w.root, "error", "Type a sentence: at least one word or punctuation mark.");
  }
  if (keyOf(job) !== keyOf(w.wanted) || w.root.dataset.state === "error") request(w, job);
  else showMessage(w.root, "error", ""); // the sentence asked for already: only a message about the field goes
}

/** Enter applies the sentence, Shift+Enter starts a new line (and Enter that confirms an input method's text does neither). */
function onFieldKey(w, event) {
  if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  event.preventDefault();
  apply(w);
}

const say = (el, text) => el.replaceChildren(Object.assign(document.createElement("p"), { textContent: text }));

/** The selected head's matrices in the open details; one head_weights call per sentence, shared by all waiting. */
async function showWeights(w) {
  const el = output(w.root, "weights");
  const key = keyOf(w.job);
  if (w.weights?.key !== key) {
    say(el, "Loading the matrices from Python…");
    w.weights = { key, reply: call("head_weights", argsOf(w, w.job)) };
  }
  try {
    const reply = await w.weights.reply;
    if (key === keyOf(w.job)) renderWeights(el, reply, w.head); // else a newer sentence loads its own
  } catch (err) {
    if (w.weights?.key === key) w.weights = null;
    say(el, `Could not load the matrices: ${err.message}`);
  }
}

function selectHead(w, head) {
  if (head === w.head) return;
  w.head = head;
  renderHead(w);
  if (w.details.open) showWeights(w);
  keepState(w);
}

function onGridKey(w, event) {
  const td = event.target.closest("td[data-q]");
  const to = td && moveFrom(w.grid, Number(td.dataset.q), Number(td.dataset.k), event);
  if (!to) return;
  event.preventDefault();
  cellAt(w.grid, ...to).focus();
}

function onGridFocus(w, event) {
  const td = event.target.closest("td[data-q]");
  if (!td) return;
  const [q, k] = [Number(td.dataset.q), Number(td.dataset.k)];
  setActive(w.grid, q, k);
  showCell(w, q, k);
  if (q !== w.query) selectQuery(w, q);
}

/** The query picker's choice: row q selected, and the grid's keyboard position moved into it. */
function pickQuery(w, q) {
  selectQuery(w, q);
  setActive(w.grid, q, Math.min(w.grid.active.k, q));
}

function restoreFromURL(w) {
  const { values, ignored } = readURL(location.search, [...w.buttons].map((b) => b.dataset.head));
  noteIgnored(w.root, ignored);
  if (values.head) selectHead(w, values.head);
  if (values.sentence === undefined && values.ablate === undefined) return;
  if (values.sentence !== undefined) w.textarea.value = values.sentence;
  if (values.ablate !== undefined) w.ablate.checked = values.ablate;
  apply(w);
}

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-heads-data]").content.textContent);
  const job = { sentence: data.sentence, ablate: false };
  const w = {
    root, data, job, wanted: job, result: data.result, head: root.dataset.head, query: Number(root.dataset.query),
    palette: makePalette(data.palette, data.steps), layers: data.layers, grid: adoptGrid(root.querySelector("table")),
    buttons: root.querySelectorAll("button[data-head]"), textarea: root.querySelector('textarea[name="sentence"]'),
    picker: root.querySelector('select[name="query"]'),
    ablate: root.querySelector('input[name="ablate"]'), details: output(root, "weights-details"),
    cache: new Map([[keyOf(job), data.result]]), urlState: root.hasAttribute("data-url-state"), readout: null,
    prompt: output(root, "cell").textContent, // the readout's words until a cell is read
  };
  w.ablate.checked = false; // a reloaded page may keep the box ticked; the pre-rendered patterns are without
  showResult(w, job, data.result);
  whileShown(root, ({ state }) => {
    w.runtime = state;
    markStale(w);
  });
  root.querySelector("form").addEventListener("submit", (event) => { event.preventDefault(); apply(w); });
  w.textarea.addEventListener("change", () => apply(w));
  w.textarea.addEventListener("keydown", (event) => onFieldKey(w, event));
  w.ablate.addEventListener("change", () => {
    if (w.ablate.checked) selectHead(w, "induction"); // the head the knock-out breaks
    apply(w);
  });
  root.querySelector(".mha-heads__heads").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-head]");
    if (button) selectHead(w, button.dataset.head);
  });
  const table = root.querySelector("table");
  table.addEventListener("focusin", (event) => onGridFocus(w, event));
  table.addEventListener("keydown", (event) => onGridKey(w, event));
  table.addEventListener("mouseover", (event) => {
    const td = event.target.closest("td[data-q]");
    if (td) showCell(w, Number(td.dataset.q), Number(td.dataset.k));
  });
  w.picker.addEventListener("change", () => pickQuery(w, Number(w.picker.value)));
  output(root, "sentence").addEventListener("click", (event) => {
    const token = event.target.closest("button[data-token-index]");
    if (token) showCell(w, w.query, Number(token.dataset.tokenIndex));
  });
  w.details.addEventListener("toggle", () => w.details.open && showWeights(w));
  recomputeOnReady(root, () => request(w, w.wanted));
  if (w.urlState) restoreFromURL(w);
}

mountEach('[data-mha-widget="heads"]', mount);
