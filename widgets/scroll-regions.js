// Boxes that scroll sideways (display formulas, wide tables, code blocks) can be scrolled from the keyboard:
// while its content overflows, a box is focusable (tabindex="0"; WCAG 2.1.1, axe's scrollable-region-focusable),
// and a formula or a table is a named group. Checked again whenever a box changes size (typesetting, a narrower
// window, a heatmap of a longer sentence). Material makes a wide code block focusable itself, but only on a screen with hover (it asks
// matchMedia("(hover)") once), so never on a phone, and it takes the tab stop back whenever the block's
// overflow changes there: a code block is kept focusable while it overflows, and left unnamed, as Material
// leaves it (its code is its content). document$ emits on every page Material shows.
// A code block is skipped by the browser while it is away from the screen (SKIPPED: docs/stylesheets/docs.css's
// content-visibility), and its ResizeObserver gets no size until it comes near: Tab would pass it by meanwhile. So
// the code blocks are measured once the page is idle, one at a time (the query lays out that block alone), and
// again after the window resizes.
const BOXES = { "div.arithmatex": "Formula", ".md-typeset__scrollwrap": "Table", "pre > code": null,
  ".mha-heads__scroll--grid": "Attention weights", ".mha-tiling__scroll": "Table",
  ".mha-rm__pattern-scroll": "Attention pattern" };
const SKIPPED = ".md-typeset > .highlight";

function update(box, name) {
  const overflows = box.scrollWidth > box.clientWidth + 1;
  if (overflows === box.hasAttribute("tabindex")) return;
  const attributes = name ? ["tabindex", "role", "aria-label"] : ["tabindex"];
  if (overflows) {
    box.setAttribute("tabindex", "0");
    if (name) {
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", `${name} (scrolls sideways)`);
    }
  } else {
    for (const attribute of attributes) box.removeAttribute(attribute);
  }
}

let skipped = []; // [box, name] of the page shown in a SKIPPED block
let pending = []; // the boxes left to measure, one per idle moment: a newer pass replaces an older's
let measuring = false;
const whenIdle = window.requestIdleCallback ?? ((fn) => setTimeout(fn, 0));

function measureNext() {
  measuring = pending.length > 0;
  if (!measuring) return;
  update(...pending.shift());
  whenIdle(measureNext);
}

function measureWhenIdle() {
  pending = [...skipped];
  if (!measuring) {
    measuring = true;
    whenIdle(measureNext);
  }
}

window.addEventListener("resize", measureWhenIdle);

document$.subscribe(({ body }) => {
  skipped = [];
  for (const [selector, name] of Object.entries(BOXES)) {
    for (const box of body.querySelectorAll(`.md-content ${selector}`)) {
      if (box.closest(SKIPPED)) skipped.push([box, name]);
      const sized = new ResizeObserver(() => update(box, name));
      sized.observe(box);
      if (box.firstElementChild) sized.observe(box.firstElementChild); // content that grows in a box that does not
      if (!name) new MutationObserver(() => update(box, name)).observe(box, { attributeFilter: ["tabindex"] });
    }
  }
  measureWhenIdle();
});
