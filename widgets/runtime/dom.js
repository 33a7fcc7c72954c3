// DOM writes the widgets share: only what changed is written, and text goes in as text (textContent),
// never as HTML; and the one way a widget keeps its state in the page's URL.

/** The element of root marked data-output="name". */
export const output = (root, name) => root.querySelector(`[data-output="${name}"]`);

export function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

export function setData(el, key, value) {
  if (el && el.dataset[key] !== value) el.dataset[key] = value;
}

/** A sentence of Python's (a view's or a template's) with its {name} marks filled from values: the page fills in
 * texts made elsewhere (a token, an error's message, a download's progress), never a number of its own. */
export const fillIn = (sentence, values) => sentence.replace(/\{(\w+)\}/g, (mark, name) => values[name] ?? mark);

/** Show text in root's data-output="name" element, or hide that element when text is empty. */
export function showMessage(root, name, text) {
  const el = output(root, name);
  el.hidden = !text;
  setText(el, text);
}

const URL_DELAY_MS = 250;

/** Write the query search() gives into the page's URL once the reader pauses: browsers throttle frequent
 * writes, and replaceState lays out the page, which costs tens of milliseconds right after a redraw and
 * little once the frame is drawn. w: the widget ({root}), which holds its pending write. A reader who has
 * moved to another page meanwhile (instant navigation changes the URL at the click, then replaces the
 * widgets) keeps that page's URL, and so does one who came back to a new copy of this one. */
export function keepInURL(w, search) {
  clearTimeout(w.urlTimer);
  const page = location.pathname;
  w.urlTimer = setTimeout(() => {
    if (w.root.isConnected && location.pathname === page) {
      history.replaceState(history.state, "", search() + location.hash);
    }
  }, URL_DELAY_MS);
}

/** Whether the reader can use el now: on the page, shown, enabled. */
const usable = (el) => Boolean(el?.isConnected && !el.disabled && !el.closest("[hidden]") && el.getClientRects().length);

/** The first control of root the reader can use now (a widget's, where its focus goes when nothing better acts). */
export const firstControl = (root) => [...root.querySelectorAll("button, input, select, textarea, [tabindex='0']")]
  .find((el) => usable(el) && !el.closest("[data-mha-status]")); // the status line's buttons hide when pressed

/** change() (which disables or hides els); when one of els held the focus and can no longer hold it, the focus
 * moves to the first usable of targets (an element, or a function that finds one), so that it never falls to the
 * page, where its ring vanishes and Enter does nothing. */
function keepFocus(els, change, targets) {
  const held = els.includes(document.activeElement);
  change();
  const now = document.activeElement; // the element disabled or hidden, or already the page's body
  if (held && (now === document.body || (els.includes(now) && !usable(now)))) {
    targets.map((t) => (typeof t === "function" ? t() : t)).find(usable)?.focus({ focusVisible: true });
  }
}

/** Disable or enable controls; when one that holds the focus is disabled, the focus moves to the first usable of
 * fallbacks (the control that now acts, e.g. Stop once Train is pressed). */
export function setDisabled(controls, disabled, ...fallbacks) {
  keepFocus([...controls], () => { for (const control of controls) control.disabled = disabled; }, fallbacks);
}

/** Hide or show el; when it held the focus, the focus moves to the first usable of fallbacks. */
export function setHidden(el, hidden, ...fallbacks) {
  if (el) keepFocus([el], () => (el.hidden = hidden), fallbacks);
}

/** text cut to at most n characters, ending in "…" when cut. */
export const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
