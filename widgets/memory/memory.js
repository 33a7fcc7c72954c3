// The memory widget: q's numbers from the projection to the merge, drawn as NumPy stores them, with the
// strides at each step. Changing n, h or the split asks the page's Python for the widget's view
// (mha_page.views.memory), which the shared binding writes into the slots the template rendered; this
// module only wires the controls and plays the copy.
import { live } from "../runtime/live.js";
import { mountEach } from "../runtime/page.js";

/** Slide the copied numbers from where they were in z's buffer to where the merge puts them: each moved
 * cell starts at the place of the cell --from cells away, measured, since the row may wrap. */
function play(li) {
  li.classList.remove("mha-memory--play");
  const row = [...li.querySelectorAll('[data-row="memory"] .mha-memory__cell')];
  const at = row.map((cell) => cell.getBoundingClientRect());
  row.forEach((cell, i) => {
    const source = at[i + Number(cell.style.getPropertyValue("--from") || 0)];
    cell.style.setProperty("--dx", `${source.left - at[i].left}px`);
    cell.style.setProperty("--dy", `${source.top - at[i].top}px`);
  });
  void li.offsetWidth; // restart the animation
  li.classList.add("mha-memory--play");
}

/** The form's values as memory_view's arguments. */
const args = (form) => ({ n_tokens: Number(form.n_tokens.value), n_heads: Number(form.n_heads.value), wrong: form.wrong.checked });

function mount(root) {
  const form = root.querySelector("form");
  const request = live(root, { fn: "memory_view", args: () => args(form) });
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", (event) => request(event.target));
  root.addEventListener("click", (event) => {
    const button = event.target.closest('button[data-action="play"]');
    if (button) play(button.closest("li"));
  });
  // A browser that restored the form from an earlier visit shows controls the built view is not for.
  const built = args(form);
  if (built.n_tokens !== Number(root.dataset.n) || built.n_heads !== Number(root.dataset.h)
    || String(built.wrong) !== root.dataset.wrong) request(form);
}

mountEach('[data-mha-widget="memory"]', mount);
