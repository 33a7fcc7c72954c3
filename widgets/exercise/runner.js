// The exercises' own Python: a second runtime (bridge.js's Runtime), started from the files the widgets' Python
// already keeps in the browser, whose calls go to mha_page.bridge.exercises. The reader's code runs there, never in
// the widgets' Python: Stop, or a run longer than its limit (mha_core.exercises.TIME_LIMIT_S), ends its workers at
// once (a loop in Python cannot be interrupted otherwise), and the next run starts a fresh one; what the code had
// printed by then (sent as it is written) is kept in the answer. One serves every exercise of the page.
// What it says is the page's words (mha_core.exercises.page_messages, in the exercise's template).
//   const result = await runExercise("split_heads", code, (message) => ..., { words, limitMs });  // {status, message, output}
import { BUSY_TIMEOUT_MS, onStatus, pythonKept, Runtime } from "../runtime/bridge.js";
import { fillIn } from "../runtime/dom.js";

let runtime = null; // the exercises' Runtime, null until a run needs it and after it was stopped
let printed = []; // what the current run printed so far: what a run the page ends keeps
let startStep = ""; // what that runtime's start is doing, for the waiting message

/** The exercises' Runtime, started (once the widgets' Python has kept its files) if there is none. */
async function exercisesPython(tell, words) {
  if (runtime) return runtime;
  const unsubscribe = onStatus(({ state, message }) => state === "loading" && tell(fillIn(words.waiting, { status: message })));
  try {
    await pythonKept();
  } finally {
    unsubscribe();
  }
  runtime ||= new Runtime({
    entry: "mha_page.bridge.exercises",
    keep: false,
    stallMs: BUSY_TIMEOUT_MS,
    print: (text) => printed.push(text),
    report: (state, message, from) => {
      if (from === runtime && state === "loading") startStep = message;
    },
  });
  return runtime;
}

/** End the exercises' Python now, with why: "stopped" (Stop) or "time-limit". */
export function stopPython(reason) {
  const current = runtime;
  runtime = null;
  current?.stop(reason);
}

const STOPPED = ["time-limit", "stopped"]; // why the page ended a run: the words' own messages

/** The answer of a run whose Python ended (err: why it ended). */
function ended(current, err, words) {
  const why = current?.failure?.message;
  if (STOPPED.includes(why)) return { status: "stopped", message: words[why], output: printed.join("") };
  if (current && runtime === current) runtime = null; // the next run starts a fresh Python
  const reason = /[.!?]$/.test(err.message) ? err.message : `${err.message}.`; // a sentence, the next after it
  return { status: "error", message: fillIn(words.ended, { reason }), output: printed.join("") };
}

/** Run the reader's code for exercise name in the exercises' Python: {status, message, output[, pointer]}. status
 * is pass, fail or error (mha_core.exercises.run_exercise), or stopped (Stop, or the time limit). tell(message)
 * says what the run waits for meanwhile; words, what it says (page_messages); limitMs, how long a run may take;
 * inputs, run_exercise's other arguments (params). */
export async function runExercise(name, code, tell, { words, limitMs, inputs = {} }) {
  let current = null;
  printed = [];
  try {
    current = await exercisesPython(tell, words);
    const starting = () => (startStep ? fillIn(words["starting-step"], { step: startStep }) : words.starting);
    const waiting = setInterval(() => tell(starting()), 250);
    try {
      await current.ready;
    } finally {
      clearInterval(waiting);
    }
  } catch (err) {
    const error = err.message.replace(/^Python could not start: /, ""); // the runtime's own words, said once
    return ended(current, new Error(fillIn(words["no-start"], { error })), words);
  }
  tell(words.running);
  const limit = setTimeout(() => stopPython("time-limit"), limitMs);
  try {
    const reply = JSON.parse(await current.send("run_exercise", JSON.stringify({ ...inputs, name, code })));
    return reply.ok ? reply.result : { status: "error", message: reply.error, output: "" };
  } catch (err) {
    return ended(current, err, words);
  } finally {
    clearTimeout(limit);
  }
}
