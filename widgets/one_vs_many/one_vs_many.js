// One head against several: the reader shares one head's softmax between the subject, the clause and the
// previous token, or makes it wide; the page's Python answers with the widget's view
// (mha_core.views.one_vs_many), which the shared binding writes into the slots the template rendered.
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";

const RELATIONSHIPS = ["subject", "clause", "previous"];

/** The form's values as one_vs_many_view's arguments. */
function args(form) {
  const out = { wide: form.elements.wide.checked };
  for (const rel of RELATIONSHIPS) out[rel] = form.elements[rel].valueAsNumber;
  return out;
}

function mount(root) {
  const form = root.querySelector("form");
  const request = live(root, { fn: "one_vs_many_view", args: () => args(form) });
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("input", (event) => request(event.target));
  // A browser that restored the checkbox from an earlier visit shows a form the built view is not for.
  if (form.elements.wide.checked !== (root.dataset.wide === "true")) request(form.elements.wide);
}

mountEach('[data-mha-widget="one-vs-many"]', mount);
