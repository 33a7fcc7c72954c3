// Which stale line to say while the outputs do not match the controls (the life cycle, runtime/live.js, marks
// them): the lines are Python's (mha_page.views.heads.stale_lines); this picks one. No DOM: tested under node --test.

/** The key of stale_lines() for shown and wanted ({sentence, ablate}: what the view is of, what the controls hold);
 * "" when they match. example: the built-in sentence; failed: Python could not answer; ready: Python is running. */
export function staleKey(shown, wanted, { example, failed, ready }) {
  if (shown.sentence === wanted.sentence && shown.ablate === wanted.ablate) return "";
  const instead = shown.sentence !== wanted.sentence ? (shown.sentence === example ? "example" : "before")
    : shown.ablate ? "ablated" : "clean";
  const waits = !wanted.sentence.trim() ? "blank" : failed ? "failed" : ready ? "computing" : "waiting";
  return `${instead} ${waits}`;
}
