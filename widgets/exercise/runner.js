// The exercises' own Python: a second runtime (bridge.js's Runtime), started from the files the widgets' Python
// already keeps in the browser, whose calls go to mha_core.bridge.exercises. The reader's code runs there, never in
// the widgets' Python: Stop, or a run longer than TIME_LIMIT_MS, ends its workers at once (a loop in Python
// cannot be interrupted otherwise), and the next run starts a fresh one. One serves every exercise of the page.
//   const result = await runExercise("split_heads", code, (message) => ...);  // {status, message, output}
import { BUSY_TIMEOUT_MS, onStatus, pythonKept, Runtime } from "../runtime/bridge.js";

const TIME_LIMIT_MS = 5000;

let runtime = null; // the exercises' Runtime, null until a run needs it and after it was stopped
let startStep = ""; // what that runtime's start is doing, for the waiting message

/** The exercises' Runtime, started (once the widgets' Python has kept its files) if there is none. */
async function exercisesPython(tell) {
  if (runtime) return runtime;
  const unsubscribe = onStatus(({ state, message }) => state === "loading" && tell(`Waiting for Python: ${message}`));
  try {
    await pythonKept();
  } finally {
    unsubscribe();
  }
  runtime ||= new Runtime({
    entry: "mha_core.bridge.exercises",
    keep: false,
    stallMs: BUSY_TIMEOUT_MS,
    report: (state, message, from) => {
      if (from === runtime && state === "loading") startStep = message;
    },
  });
  return runtime;
}

/** End the exercises' Python now (Stop, or the time limit), with why. */
export function stopPython(reason) {
  const current = runtime;
  runtime = null;
  current?.stop(reason);
}

const STOPPED = {
  "time limit": `Stopped after ${TIME_LIMIT_MS / 1000} s: your code was still running (a loop that never ends?). ` +
                "Run starts a fresh Python.",
  stopped: "Stopped. Run starts a fresh Python.",
};

/** The answer of a run whose Python ended (err: why it ended). */
function ended(current, err) {
  const why = current?.failure?.message;
  if (why in STOPPED) return { status: "stopped", message: STOPPED[why], output: "" };
  if (current && runtime === current) runtime = null; // the next run starts a fresh Python
  const sentence = /[.!?]$/.test(err.message) ? err.message : `${err.message}.`;
  return { status: "error", message: `${sentence} Press Run to start a fresh Python.`, output: "" };
}

/** Run the reader's code for exercise name in the exercises' Python: {status, message, output}. status is
 * pass, fail or error (mha_core.exercises.run_exercise), or stopped (Stop, or the time limit). tell(message)
 * says what the run waits for meanwhile; inputs, run_exercise's other arguments (params). */
export async function runExercise(name, code, tell, inputs = {}) {
  let current = null;
  try {
    current = await exercisesPython(tell);
    const waiting = setInterval(() => tell(`Starting a Python for your code${startStep ? `: ${startStep}` : "…"}`), 250);
    try {
      await current.ready;
    } finally {
      clearInterval(waiting);
    }
  } catch (err) {
    return ended(current, new Error(`Python could not start: ${err.message.replace(/^Python could not start: /, "")}`));
  }
  tell("Running your code…");
  const limit = setTimeout(() => stopPython("time limit"), TIME_LIMIT_MS);
  try {
    const reply = JSON.parse(await current.send("run_exercise", JSON.stringify({ ...inputs, name, code })));
    return reply.ok ? reply.result : { status: "error", message: reply.error, output: "" };
  } catch (err) {
    return ended(current, err);
  } finally {
    clearTimeout(limit);
  }
}
