// Honest states: while the outputs do not match the inputs (Python has not started, is computing, or
// failed), they are marked data-stale="true" and a line says what is shown instead and what it waits for.
import { output, setData, showMessage } from "../runtime/dom.js";

const STALE_AFTER_MS = 250; // with Python ready an answer takes tens of ms: no flash of "computing"

/** A job (what the reader asked for: a sentence and the knock-out) as a key. */
export const keyOf = (job) => JSON.stringify([job.sentence, job.ablate]);

/** What is shown (w.job) instead of what the reader asked for (w.wanted), and what it waits for; "" when they match. */
function staleText(w) {
  const { job: shown, wanted } = w;
  if (keyOf(shown) === keyOf(wanted)) return "";
  const instead = shown.sentence !== wanted.sentence
    ? `the patterns of ${shown.sentence === w.data.sentence ? "the built-in example sentence" : "the sentence before"}, not of the sentence in the box`
    : `the patterns ${shown.ablate ? "with" : "without"} the knock-out, not ${wanted.ablate ? "with" : "without"} it`;
  if (!wanted.sentence.trim()) return `Shown: ${instead}. Type a sentence to see its own.`;
  const waits = w.root.dataset.state === "error" || w.runtime === "error"
    ? "Python could not compute them: see the message above."
    : w.runtime === "ready" ? "Computing them…" : "Waiting for Python to start in your browser to compute them.";
  return `Shown: ${instead}. ${waits}`;
}

function showStale(root, text) {
  showMessage(root, "stale", text);
  root.querySelectorAll("[data-stale]").forEach((el) => setData(el, "stale", String(Boolean(text))));
}

/** Mark the outputs stale, or not, for the widget's state now (w.runtime: the runtime's state). */
export function markStale(w) {
  clearTimeout(w.staleTimer);
  const text = staleText(w);
  const quick = w.runtime === "ready" && w.root.dataset.state === "busy" && output(w.root, "stale").hidden;
  if (text && quick) w.staleTimer = setTimeout(() => showStale(w.root, staleText(w)), STALE_AFTER_MS);
  else showStale(w.root, text);
}
