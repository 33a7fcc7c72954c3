// latestWins: one call at a time, the inputs as they are when a call starts, out-of-date failures dropped.
import assert from "node:assert/strict";
import { test } from "node:test";
import { latestWins } from "../../../widgets/runtime/latest.js";

/** A call whose answer the test releases: {promise, resolve, reject}. */
function deferred() {
  let resolve, reject;
  const promise = new Promise((ok, fail) => { resolve = ok; reject = fail; });
  return { promise, resolve, reject };
}

function widget() {
  const w = { input: 0, calls: [], shown: [], settled: [] };
  w.request = latestWins({
    ask: () => { const d = deferred(); w.calls.push({ input: w.input, ...d }); return d.promise; },
    show: (answer, latest) => w.shown.push([answer, latest]),
    settle: (error) => w.settled.push(error && error.message),
  });
  return w;
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test("one request: one call, its answer shown as the latest, settled without error", async () => {
  const w = widget();
  const done = w.request();
  w.calls[0].resolve("a0");
  await done;
  assert.deepEqual(w.calls.map((c) => c.input), [0]);
  assert.deepEqual(w.shown, [["a0", true]]);
  assert.deepEqual(w.settled, [null]);
});

test("requests during a call coalesce into one call for the inputs as they are then", async () => {
  const w = widget();
  const done = w.request();
  for (const input of [1, 2, 3]) { w.input = input; w.request(); }
  assert.equal(w.calls.length, 1); // never two at once
  w.calls[0].resolve("a0");
  await tick();
  assert.deepEqual(w.calls.map((c) => c.input), [0, 3]); // the middle inputs were never asked
  w.calls[1].resolve("a3");
  await done;
  assert.deepEqual(w.shown, [["a0", false], ["a3", true]]);
  assert.deepEqual(w.settled, [null]);
});

// The latest call fails or answers after an out-of-date call failed: only the latest call's outcome counts.
for (const [latest, settled] of [["fails", ["new"]], ["answers", [null]]]) {
  test(`the failure of an out-of-date call is dropped when the latest call ${latest}`, async () => {
    const w = widget();
    const done = w.request();
    w.input = 1;
    w.request();
    w.calls[0].reject(new Error("old"));
    await tick();
    if (latest === "fails") w.calls[1].reject(new Error("new"));
    else w.calls[1].resolve("a1");
    await done;
    assert.deepEqual(w.settled, settled);
    assert.deepEqual(w.shown, latest === "fails" ? [] : [["a1", true]]);
    const again = w.request(); // a later request starts afresh
    w.calls[2].resolve("ok");
    await again;
    assert.deepEqual(w.settled, [...settled, null]);
  });
}

test("an ask that throws at once (the controls hold nothing to ask) settles, and the next request runs", async () => {
  const shown = [];
  const settled = [];
  let valid = false;
  const request = latestWins({
    ask: () => { if (!valid) throw new Error("d_model must be a whole number"); return Promise.resolve("view"); },
    show: (answer) => shown.push(answer),
    settle: (error) => settled.push(error && error.message),
  });
  await request();
  valid = true;
  await request();
  assert.deepEqual(settled, ["d_model must be a whole number", null]);
  assert.deepEqual(shown, ["view"]);
});
