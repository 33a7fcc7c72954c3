// DOM writes the widgets share: only what changed is written, and text goes in as text (textContent),
// never as HTML.

/** The element of root marked data-output="name". */
export const output = (root, name) => root.querySelector(`[data-output="${name}"]`);

export function setText(el, text) {
  if (el && el.textContent !== text) el.textContent = text;
}

export function setData(el, key, value) {
  if (el && el.dataset[key] !== value) el.dataset[key] = value;
}

/** Show text in root's data-output="name" element, or hide that element when text is empty. */
export function showMessage(root, name, text) {
  const el = output(root, name);
  el.hidden = !text;
  setText(el, text);
}

/** text cut to at most n characters, ending in "…" when cut. */
export const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
