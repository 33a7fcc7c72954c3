// The worked example: every matrix of a 3-token, 2-head layer, pre-rendered at build time. Choosing
// other words, or "Draw new numbers" (the next seed), asks mha_core.worked in the page's Python worker
// and refills the cells and labels with the text Python formatted.
import { call } from "../runtime/bridge.js";
import { mountEach } from "../runtime/page.js";
import { output, setText, showMessage } from "../runtime/dom.js";
import "../runtime/status.js";

/** Each cell's text from Python's answer; a transposed matrix (Kᵀ) reads its cells the other way. */
function fill(root, example) {
  for (const table of root.querySelectorAll("table[data-matrix]")) {
    const text = example.matrices[table.dataset.matrix].text;
    const transposed = table.hasAttribute("data-transposed");
    for (const td of table.querySelectorAll("td[data-r]")) {
      const [r, c] = [Number(td.dataset.r), Number(td.dataset.c)];
      setText(td, transposed ? text[c][r] : text[r][c]);
    }
  }
  for (const th of root.querySelectorAll("th[data-token-index]")) setText(th, example.tokens[Number(th.dataset.tokenIndex)]);
  setText(output(root, "seed"), String(example.seed));
  root.dataset.seed = String(example.seed);
  root.dataset.tokens = example.tokens.join(" ");
}

/** The example for seed and the words chosen in the form. */
async function show(root, seed) {
  const tokens = [...root.querySelectorAll('select[name="token"]')].map((select) => select.value);
  root.dataset.state = "busy";
  try {
    fill(root, await call("worked_example", { seed, tokens }));
    showMessage(root, "error", "");
    root.dataset.state = "live";
  } catch (err) {
    root.dataset.state = "error";
    showMessage(root, "error", `Could not draw new numbers: ${err.message}`);
  }
}

function mount(root) {
  root.querySelector('[data-action="redraw"]').addEventListener("click", () => show(root, Number(root.dataset.seed) + 1));
  const form = root.querySelector("form");
  form.addEventListener("submit", (event) => event.preventDefault());
  form.addEventListener("change", () => show(root, Number(root.dataset.seed)));
}

mountEach('[data-mha-widget="worked"]', mount);
