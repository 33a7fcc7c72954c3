// One head against several: the reader shares one head's softmax between the subject, the clause and the
// previous token, or makes it wide, and gives the other side 1, 2 or 3 heads (with 2, which relationship keeps
// a head of its own); the page's Python answers with the widget's view
// (mha_page.views.one_vs_many), which the shared binding writes into the slots the template rendered.
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";

const RELATIONSHIPS = ["subject", "clause", "previous"];

/** The form's values as one_vs_many_view's arguments. */
function args(form) {
  const { wide, heads, alone } = form.elements;
  const out = { wide: wide.checked, heads: Number(heads.value), alone: alone.value };
  for (const rel of RELATIONSHIPS) out[rel] = form.elements[rel].valueAsNumber;
  return out;
}

function mount(root) {
  const form = root.querySelector("form");
  const request = live(root, { fn: "one_vs_many_view", args: () => args(form) });
  form.addEventListener("submit", (event) => event.preventDefault());
  // The choice of the lone relationship means something only with 2 heads.
  const choosable = () => { form.elements.alone.disabled = form.elements.heads.value !== "2"; };
  form.addEventListener("input", (event) => {
    choosable();
    request(event.target);
  });
  choosable();
  // A browser that restored the controls from an earlier visit shows a form the built view is not for.
  const { wide, heads, alone } = args(form);
  const shown = { wide: String(wide), heads: String(heads), alone };
  if (Object.keys(shown).some((key) => shown[key] !== root.dataset[key])) request(form);
}

mountEach('[data-mha-widget="one-vs-many"]', mount);
