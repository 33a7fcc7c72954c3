// The tiling widget: one head's attention computed tile by tile, FlashAttention's online softmax. Changing the
// sentence, d_head, the block or the mask asks the page's Python for the widget's view (mha_page.views.tiling),
// which holds every step's slots; the step slider binds the chosen step's slots with the shared binding, without
// Python. This module only wires the controls.
import { bind } from "../runtime/bind.js";
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";

/** The form's values as tiling_view's arguments. */
const args = (form) => ({
  text_or_tokens: form.sentence.value, d_head: Number(form.d_head.value), block: Number(form.block.value),
  causal: form.causal.checked,
});

function mount(root) {
  const form = root.querySelector("form");
  const slider = root.querySelector('input[name="step"]');
  let steps = JSON.parse(root.querySelector("[data-tiling-steps]").content.textContent);
  const showStep = () => bind(root, { outputs: steps[Number(slider.value)] });
  const show = (view) => {
    const atEnd = slider.value === slider.max;
    steps = view.steps;
    bind(root, view);
    form.block.min = root.dataset.minBlock; // the view's bounds for the block: at most its tiles, at most n
    form.block.max = root.dataset.n;
    slider.max = String(steps.length - 1); // the same step if the new tiles have it, else the last;
    if (atEnd) slider.value = slider.max; // the last stays the last: the whole output
    showStep();
  };
  const request = live(root, { fn: "tiling_view", args: () => args(form), show });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    request(form.sentence);
  });
  form.addEventListener("input", (event) => {
    if (event.target === form.block) request(form.block); // as it moves: the latest request wins
  });
  form.addEventListener("change", (event) => {
    if (event.target !== form.sentence && event.target !== form.block) request(event.target);
  });
  for (const type of ["input", "change"]) slider.addEventListener(type, showStep);
  // A browser that restored the controls from an earlier visit shows controls the built view is not for.
  const built = args(form);
  if (built.block !== Number(root.dataset.block) || String(built.causal) !== root.dataset.causal
    || built.d_head !== Number(root.dataset.dHead) || form.sentence.value !== form.sentence.defaultValue) request(form);
  else if (slider.value !== "0") showStep();
}

mountEach('[data-mha-widget="tiling"]', mount);
