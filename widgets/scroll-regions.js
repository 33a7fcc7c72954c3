// Boxes that scroll sideways (display formulas, wide tables) can be scrolled from the keyboard: while
// its content overflows, a box is a named, focusable group (tabindex="0"; WCAG 2.1.1, axe's
// scrollable-region-focusable). Checked again whenever a box changes size (typesetting, a narrower window).
// document$ emits on every page Material shows.
const BOXES = { ".arithmatex": "Formula", ".md-typeset__scrollwrap": "Table" };

function update(box, name) {
  const overflows = box.scrollWidth > box.clientWidth + 1;
  if (overflows === box.hasAttribute("tabindex")) return;
  if (overflows) {
    box.setAttribute("tabindex", "0");
    box.setAttribute("role", "group");
    box.setAttribute("aria-label", `${name} (scrolls sideways)`);
  } else {
    for (const attribute of ["tabindex", "role", "aria-label"]) box.removeAttribute(attribute);
  }
}

document$.subscribe(({ body }) => {
  for (const [selector, name] of Object.entries(BOXES)) {
    for (const box of body.querySelectorAll(`.md-content ${selector}`)) {
      if (getComputedStyle(box).display === "inline") continue; // inline math wraps with the text
      new ResizeObserver(() => update(box, name)).observe(box);
    }
  }
});
