// Typeset the math pymdownx.arithmatex (generic mode) leaves as \( \) and \[ \] in .arithmatex elements,
// with the KaTeX files the site hosts itself. document$ emits on every page Material shows. The work is
// cut into slices of about 30 ms, so that a page full of formulas blocks the main thread for no longer.
const DELIMITERS = [
  { left: "\\(", right: "\\)", display: false },
  { left: "\\[", right: "\\]", display: true },
];
const SLICE_MS = 30;

async function typeset(elements) {
  let start = performance.now();
  for (const el of elements) {
    renderMathInElement(el, { delimiters: DELIMITERS, throwOnError: false });
    if (performance.now() - start > SLICE_MS) {
      await new Promise((resolve) => setTimeout(resolve, 0));
      start = performance.now();
    }
  }
}

document$.subscribe(({ body }) => typeset(body.querySelectorAll(".arithmatex")));
