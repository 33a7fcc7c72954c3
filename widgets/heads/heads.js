// The heads widget: the constructed heads' attention patterns on the reader's sentence, with the knock-out of the
// previous-token head. The page's Python answers with the widget's view (mha_page.views.heads), every head's
// outputs in one view: the shared binding writes the shown head's into the slots the template rendered, so
// switching heads needs no Python. This module wires the controls; runtime/live.js is the life cycle (of the
// sentence's view, and of the matrices in the details, asked for when they are opened).
import { bind } from "../runtime/bind.js";
import { call } from "../runtime/bridge.js";
import { keepInURL, output, setText, showMessage } from "../runtime/dom.js";
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";
import { noteIgnored, whileShown } from "../runtime/status.js";
import { moveFrom } from "../shared/grid.js";
import { cellAt, drawThumb, headCells, keepTokenStop, maskedNames, moveTokenFocus, placeCells, selectQuery, setActive,
  showCell } from "./cells.js";
import { staleKey } from "./stale.js";
import { readURL, writeURL } from "./state.js";

/** What the controls ask for: {sentence, ablate}. */
const wanted = (w) => ({ sentence: w.textarea.value, ablate: w.ablate.checked });

/** heads_view's arguments for the controls (the knock-out box's value is the head it zeroes). */
function args(w) {
  const { sentence, ablate } = wanted(w);
  w.asked = sentence;
  return { text_or_tokens: sentence, ablate: ablate ? [w.ablate.value] : [] };
}

/** The stale line: what is shown instead of what the controls hold, and why (empty when the view is theirs). */
function sayStale(w, stale) {
  const failed = w.root.dataset.state === "error" || w.runtime === "error";
  const key = stale && staleKey(w.shown, wanted(w), { example: w.example, failed, ready: w.runtime === "ready" });
  showMessage(w.root, "stale", key ? w.staleLines[key] : "");
}

function keepState(w) {
  if (w.urlState) keepInURL(w, () => writeURL(location.search, { ...w.shown, head: w.head }, w.example));
}

/** Bind the shown head's outputs and redraw what reads them: the tab order, the query, the readout. */
function showHead(w) {
  bind(w.root, { outputs: { ...w.view.heads[w.head].outputs, grid: { cells: headCells(w.view, w.head) } } });
  w.root.dataset.head = w.head;
  for (const button of w.buttons) button.setAttribute("aria-pressed", String(button.dataset.head === w.head));
  setActive(w, w.active.q, w.active.k);
  selectQuery(w, w.query);
  if (w.readout) showCell(w, w.readout.q, w.readout.k);
  showWeights(w);
}

/** A new view (a new sentence, or the knock-out toggled): the shared outputs, the pictures, then the head. */
function showView(w, view, asked) {
  const sentenceChanged = asked.text_or_tokens !== w.shown.sentence;
  w.view = view;
  w.shown = { sentence: asked.text_or_tokens, ablate: asked.ablate.length > 0 };
  bind(w.root, view);
  placeCells(w.table);
  keepTokenStop(w.sentence);
  bind(w.root, { outputs: { masked: { cells: { label: maskedNames(view) } } } });
  w.root.style.setProperty("--n", w.root.dataset.tokens);
  [...w.picker.options].forEach((option, i) => { option.value = String(i); });
  const n = view.outputs.sentence.rows.length;
  if (sentenceChanged || w.query >= n) w.query = view.query; // mha_core's choice, as at build time
  if (w.readout && (sentenceChanged || w.readout.q >= n)) { // a cell of another text: its tokens go too
    w.readout = null;
    setText(w.readoutEl, w.prompt);
  }
  drawThumbs(w);
  showHead(w);
  keepState(w);
}

const drawThumbs = (w) => w.buttons.forEach((b) => drawThumb(b.querySelector("canvas"), w.view, w.view.heads[b.dataset.head].cells.shade));

/** The life cycle of the open details' matrices (runtime/live.js, on the details): heads_weights_view's answer for
    the view shown holds every head's, so a head selected after it binds at once, without a call. */
function liveWeights(w) {
  const el = output(w.root, "weights");
  let answered = null; // {key, reply}: the view shown's matrices
  return live(w.details, {
    args: () => ({ text_or_tokens: w.shown.sentence, ablate: w.shown.ablate ? [w.ablate.value] : [] }),
    ask: async (asked) => {
      const key = JSON.stringify(asked);
      return answered?.key === key ? answered : { key, reply: await call("heads_weights_view", asked) };
    },
    show: (answer) => {
      answered = answer;
      bind(el, { outputs: answer.reply.heads[w.head] });
    },
    errors: '[data-message="weights-error"]',
  });
}

/** The shown head's matrices, when the details are open. */
const showWeights = (w) => w.details.open && w.weights(w.details);

function selectHead(w, head) {
  if (head === w.head) return;
  w.head = head;
  showHead(w);
  keepState(w);
}

function onGridKey(w, event) {
  const td = event.target.closest("td[data-q]");
  const to = td && moveFrom({ n: w.table.tBodies[0].rows.length }, Number(td.dataset.q), Number(td.dataset.k), event);
  if (!to) return;
  event.preventDefault();
  cellAt(w.table, ...to).focus();
}

function onGridFocus(w, event) {
  const td = event.target.closest("td[data-q]");
  if (!td) return;
  const [q, k] = [Number(td.dataset.q), Number(td.dataset.k)];
  setActive(w, q, k);
  showCell(w, q, k);
  if (q !== w.query) selectQuery(w, q);
}

function restoreFromURL(w, request) {
  const { values, ignored } = readURL(location.search, [...w.buttons].map((b) => b.dataset.head));
  noteIgnored(w.root, ignored);
  if (values.head) selectHead(w, values.head);
  if (values.sentence === undefined && values.ablate === undefined) return;
  if (values.sentence !== undefined) w.textarea.value = values.sentence;
  if (values.ablate !== undefined) w.ablate.checked = values.ablate;
  request(w.textarea);
}

function wire(w, request) {
  const { root, table } = w;
  root.querySelector("form").addEventListener("submit", (event) => { event.preventDefault(); request(w.textarea); });
  w.textarea.addEventListener("change", () => request(w.textarea));
  // A text applied by Enter is not the field's last change to the browser: typing back the text applied by a
  // change before it and leaving the field fires no change, so leaving asks for any text not asked for last.
  w.textarea.addEventListener("blur", () => {
    if (w.textarea.value !== w.asked) request(w.textarea);
  });
  w.textarea.addEventListener("keydown", (event) => { // Enter shows the sentence, Shift+Enter starts a new line
    if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
    event.preventDefault();
    request(w.textarea);
  });
  w.ablate.addEventListener("change", () => {
    if (w.ablate.checked) selectHead(w, "induction"); // the head the knock-out breaks
    request(w.ablate);
  });
  root.querySelector(".mha-heads__heads").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-head]");
    if (button) selectHead(w, button.dataset.head);
  });
  table.addEventListener("focusin", (event) => onGridFocus(w, event));
  table.addEventListener("keydown", (event) => onGridKey(w, event));
  table.addEventListener("mouseover", (event) => {
    const td = event.target.closest("td[data-q]");
    if (td) showCell(w, Number(td.dataset.q), Number(td.dataset.k));
  });
  w.picker.addEventListener("change", () => {
    selectQuery(w, Number(w.picker.value));
    setActive(w, w.query, Math.min(w.active.k, w.query));
  });
  w.sentence.addEventListener("click", (event) => {
    const token = event.target.closest("button[data-token-index]");
    if (token) showCell(w, w.query, Number(token.dataset.tokenIndex));
  });
  w.sentence.addEventListener("keydown", (event) => moveTokenFocus(w.sentence, event));
  w.details.addEventListener("toggle", () => showWeights(w));
}

function mount(root) {
  const data = JSON.parse(root.querySelector("[data-heads-data]").content.textContent);
  const table = root.querySelector("table");
  const focusable = table.querySelector('td[tabindex="0"]');
  const w = {
    root, table, view: data.view, example: data.sentence, staleLines: data.stale, asked: data.sentence, shown: { sentence: data.sentence, ablate: false },
    head: root.dataset.head, query: Number(root.dataset.query),
    active: { q: Number(focusable.dataset.q), k: Number(focusable.dataset.k) },
    buttons: [...root.querySelectorAll("button[data-head]")], textarea: root.querySelector('textarea[name="sentence"]'),
    picker: root.querySelector('select[name="query"]'), ablate: root.querySelector('input[name="ablate"]'),
    details: output(root, "weights-details"), sentence: output(root, "sentence"), attends: output(root, "query"),
    urlState: root.hasAttribute("data-url-state"), readout: null, readoutEl: output(root, "cell"),
    prompt: output(root, "cell").textContent, // the readout's words until a cell is read
  };
  w.ablate.checked = false; // a reloaded page may keep the box ticked; the built view is without
  drawThumbs(w);
  w.weights = liveWeights(w);
  const request = live(root, {
    fn: "heads_view", args: () => args(w), show: (view, asked) => showView(w, view, asked),
    marked: (stale) => sayStale(w, stale),
    settled: () => sayStale(w, root.querySelector("[data-results]").dataset.stale === "true"),
  });
  whileShown(root, ({ state }) => {
    w.runtime = state;
    sayStale(w, root.querySelector("[data-results]").dataset.stale === "true");
  });
  wire(w, request);
  if (w.urlState) restoreFromURL(w, request);
}

mountEach('[data-mha-widget="heads"]', mount);
