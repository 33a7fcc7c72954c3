// The circuits widget: the recorded run's circuits at the checkpoint the step control names. Every step's view
// (mha_core.views.circuits, made at build time) is in the page, so moving the step binds that view into the
// slots the template rendered with the shared binding: no Python is needed, and no request is made.
import { bind } from "../runtime/bind.js";
import { mountEach } from "../runtime/page.js";

function mount(root) {
  const views = JSON.parse(root.querySelector("[data-circuits-views]").content.textContent);
  const form = root.querySelector("form");
  const step = form.elements.step;
  const show = () => {
    const view = views[step.value];
    if (view) bind(root, view);
  };
  form.addEventListener("submit", (event) => event.preventDefault());
  step.addEventListener("input", show);
  if (step.value !== root.dataset.step) show(); // a browser that restored the slider from an earlier visit
  root.dataset.state = "live";
}

mountEach('[data-mha-widget="circuits"]', mount);
