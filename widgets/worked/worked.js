// The worked example: every matrix of a 3-token, 2-head layer, pre-rendered at build time. "Draw new
// numbers" asks mha_core.worked for the next seed in the page's Python worker and refills the cells
// with the text Python formatted.
import { call } from "../runtime/bridge.js";
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
  setText(output(root, "seed"), String(example.seed));
  root.dataset.seed = String(example.seed);
}

async function redraw(root) {
  const seed = Number(root.dataset.seed) + 1;
  root.dataset.state = "busy";
  try {
    fill(root, await call("worked_example", { seed }));
    showMessage(root, "error", "");
    root.dataset.state = "live";
  } catch (err) {
    root.dataset.state = "error";
    showMessage(root, "error", `Could not draw new numbers: ${err.message}`);
  }
}

function mount(root) {
  root.querySelector('[data-action="redraw"]').addEventListener("click", () => redraw(root));
}

document.querySelectorAll('[data-mha-widget="worked"]').forEach(mount);
