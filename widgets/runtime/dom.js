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

/** text cut to at most n characters, ending in "…" when cut. */
export const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
