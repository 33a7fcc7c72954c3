// The worked example: every matrix of a 3-token, 2-head layer, rendered at build time. Choosing other words,
// or "Draw new numbers" (the next seed), asks the page's Python for the widget's view (mha_page.views.worked),
// which the shared binding writes into the cells the template rendered.
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";

function mount(root) {
  const form = root.querySelector("form");
  let seed = Number(root.dataset.seed); // the seed asked for: each press of "Draw new numbers" adds one
  const tokens = () => [...form.querySelectorAll('select[name="token"]')].map((select) => select.value);
  const request = live(root, { fn: "worked_view", args: () => ({ seed, tokens: tokens() }) });
  const redraw = root.querySelector('[data-action="redraw"]');
  redraw.addEventListener("click", () => {
    seed += 1;
    request(redraw);
  });
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => request(event.target));
  // A browser that restored the words from an earlier visit shows words the built view is not for.
  if (tokens().join(" ") !== root.dataset.tokens) request(form);
}

mountEach('[data-mha-widget="worked"]', mount);
