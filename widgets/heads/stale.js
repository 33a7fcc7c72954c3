// What the stale line says while the outputs do not match the controls (the life cycle, runtime/live.js, marks
// them): what is shown instead of what the reader asked for, and what it waits for. No DOM: tested under node --test.

/** The line for shown and wanted ({sentence, ablate}: what the view is of, what the controls hold); "" when they
 * match. example: the built-in sentence; failed: Python could not answer; ready: Python is running. */
export function staleText(shown, wanted, { example, failed, ready }) {
  if (shown.sentence === wanted.sentence && shown.ablate === wanted.ablate) return "";
  const instead = shown.sentence !== wanted.sentence
    ? `the patterns of ${shown.sentence === example ? "the built-in example sentence" : "the sentence before"}, not of the sentence in the box`
    : `the patterns ${shown.ablate ? "with" : "without"} the knock-out, not ${wanted.ablate ? "with" : "without"} it`;
  if (!wanted.sentence.trim()) return `Shown: ${instead}. Type a sentence to see its own.`;
  const waits = failed ? "Python could not compute them: see the message above."
    : ready ? "Computing them…" : "Waiting for Python to start in your browser to compute them.";
  return `Shown: ${instead}. ${waits}`;
}
