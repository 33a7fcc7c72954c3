// Boxes that scroll sideways (display formulas, wide tables, code blocks) can be scrolled from the keyboard:
// while its content overflows, a box is focusable (tabindex="0"; WCAG 2.1.1, axe's scrollable-region-focusable),
// and a formula or a table is a named group. Checked again whenever a box changes size (typesetting, a narrower
// window, a heatmap of a longer sentence). Material makes a wide code block focusable itself, but only on a screen with hover (it asks
// matchMedia("(hover)") once), so never on a phone, and it takes the tab stop back whenever the block's
// overflow changes there: a code block is kept focusable while it overflows, and left unnamed, as Material
// leaves it (its code is its content). document$ emits on every page Material shows.
// A code block or a display formula away from the screen may be skipped by the browser (content-visibility:
// docs/stylesheets/docs.css) and has no size of its own until it comes near: Tab would pass it by meanwhile. So a
// skipped box is measured once the page is idle, one at a time (asking where its content is lays out that box
// alone), and again after the window resizes; its observers leave it alone while it is skipped. (A widget's box is
// measured as the widget comes near: laying a whole widget out is no small task.)
// The boxes by selector, with the name each is given (overrides/main.html's words).
const BOXES = JSON.parse(document.getElementById("mha-scroll-names").content.textContent);

// Whether box's content is skipped now (a box with no element inside: itself).
const skipped = (box) => (box.firstElementChild ?? box).checkVisibility?.({ contentVisibilityAuto: true }) === false;

function measure(box, name) {
  const overflows = box.scrollWidth > box.clientWidth + 1;
  if (overflows === box.hasAttribute("tabindex")) return;
  const attributes = name ? ["tabindex", "role", "aria-label"] : ["tabindex"];
  if (overflows) {
    box.setAttribute("tabindex", "0");
    if (name) {
      box.setAttribute("role", "group");
      box.setAttribute("aria-label", name);
    }
  } else {
    for (const attribute of attributes) box.removeAttribute(attribute);
  }
}

function update(box, name) {
  if (!skipped(box)) measure(box, name);
}

let boxes = []; // [box, name] of the page shown
// The boxes left to measure, one per idle moment (null: those skipped at the next one, asked then: asking restyles
// a page that changed); a newer pass replaces an older's.
let pending = null;
let measuring = false;
// When the page is idle, or after a second at most: a headless browser that draws no frame may never be idle.
const whenIdle = window.requestIdleCallback
  ? (fn) => requestIdleCallback(fn, { timeout: 1000 })
  : (fn) => setTimeout(fn, 0);

function measureNext() {
  pending ??= boxes.filter(([box]) => skipped(box) && !box.closest("[data-mha-widget]"));
  measuring = pending.length > 0;
  if (!measuring) return;
  const [box, name] = pending.shift();
  (box.firstElementChild ?? box).getBoundingClientRect();
  measure(box, name);
  whenIdle(measureNext);
}

function measureWhenIdle() {
  pending = null;
  if (!measuring) {
    measuring = true;
    whenIdle(measureNext);
  }
}

window.addEventListener("resize", measureWhenIdle);

document$.subscribe(({ body }) => {
  boxes = [];
  for (const [selector, name] of Object.entries(BOXES)) {
    for (const box of body.querySelectorAll(`.md-content ${selector}`)) {
      boxes.push([box, name]);
      const sized = new ResizeObserver(() => update(box, name));
      sized.observe(box);
      if (box.firstElementChild) sized.observe(box.firstElementChild); // content that grows in a box that does not
      if (!name) new MutationObserver(() => update(box, name)).observe(box, { attributeFilter: ["tabindex"] });
    }
  }
  measureWhenIdle();
});
