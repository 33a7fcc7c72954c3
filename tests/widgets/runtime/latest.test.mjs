// latestWins: one piece of work at a time (a call or a run of calls), the inputs as they are when it starts, a run
// ended at its next step by a newer request or Stop, out-of-date failures dropped; shared: work done once for many.
import assert from "node:assert/strict";
import { test } from "node:test";
import { latestWins, shared } from "../../../widgets/runtime/latest.js";

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

// A run: an async generator whose yields are steps; the test releases each step's call.
function runWidget() {
  const w = { input: 0, runs: [], steps: [], shown: [], settled: [], ended: [] };
  w.request = latestWins({
    ask: () => {
      const input = w.input;
      const calls = [];
      w.runs.push(calls);
      return (async function* run() {
        try {
          for (let layer = 0; layer < 3; layer++) {
            const d = deferred();
            calls.push(d);
            yield `${input}: layer ${await d.promise}`;
          }
          return `answer ${input}`;
        } finally {
          w.ended.push(input); // where a widget tells Python the run is dropped
        }
      })();
    },
    step: (progress) => w.steps.push(progress),
    show: (answer, latest) => w.shown.push([answer, latest]),
    settle: (error) => w.settled.push(error && error.message),
  });
  return w;
}

/** Release the next call of the run i. */
async function advance(w, i, value) {
  await tick();
  w.runs[i].at(-1).resolve(value);
  await tick();
}

test("a run: each step's progress as it comes, then its answer, settled once", async () => {
  const w = runWidget();
  const done = w.request();
  for (const layer of [0, 1, 2]) await advance(w, 0, layer);
  await done;
  assert.deepEqual(w.steps, ["0: layer 0", "0: layer 1", "0: layer 2"]);
  assert.deepEqual(w.shown, [["answer 0", true]]);
  assert.deepEqual(w.settled, [null]);
  assert.deepEqual(w.ended, [0]);
});

test("a newer request ends a run at its next step (its finally runs), then the newest runs to its end", async () => {
  const w = runWidget();
  const done = w.request();
  await advance(w, 0, 0);
  w.input = 1;
  w.request();
  w.input = 2;
  w.request();
  await advance(w, 0, 1); // the step in flight ends; its progress is not shown
  assert.deepEqual(w.ended, [0]);
  assert.equal(w.runs.length, 2); // one run for the newest inputs, none for the middle ones
  for (const layer of [0, 1, 2]) await advance(w, 1, layer);
  await done;
  assert.deepEqual(w.steps, ["0: layer 0", "2: layer 0", "2: layer 1", "2: layer 2"]);
  assert.deepEqual(w.shown, [["answer 2", true]]); // the ended run's answer never comes
  assert.deepEqual(w.settled, [null]);
});

test("stop ends a run at its next step (shown) and settles without an answer; the next request runs afresh", async () => {
  const w = runWidget();
  const done = w.request();
  await advance(w, 0, 0);
  w.request.stop();
  await advance(w, 0, 1);
  await done;
  assert.deepEqual([w.shown, w.settled, w.ended], [[], [null], [0]]);
  assert.deepEqual(w.steps, ["0: layer 0", "0: layer 1"]); // the step in hand when stopped: still the reader's
  const again = w.request();
  for (const layer of [0, 1, 2]) await advance(w, 1, layer);
  await again;
  assert.deepEqual(w.shown, [["answer 0", true]]);
  w.request.stop(); // nothing runs: nothing to stop, and the next request is not affected
  const third = w.request();
  for (const layer of [0, 1, 2]) await advance(w, 2, layer);
  await third;
  assert.equal(w.shown.length, 2);
});

test("a run that fails settles with its error; a failure of a run already out of date is dropped", async () => {
  const w = runWidget();
  let done = w.request();
  await tick();
  w.runs[0][0].reject(new Error("cut"));
  await done;
  assert.deepEqual(w.settled, ["cut"]);
  done = w.request();
  w.request(); // out of date at once
  await tick();
  w.runs[1][0].reject(new Error("old"));
  for (const layer of [0, 1, 2]) await advance(w, 2, layer);
  await done;
  assert.deepEqual(w.settled, ["cut", null]);
});

test("shared work: done once for every follower, its progress to each, its answer kept; after a failure, again", async () => {
  const works = [];
  const follow = shared((report) => {
    const d = deferred();
    works.push({ report, ...d });
    return d.promise;
  });
  const read = async (run, into) => {
    for (let next = await run.next(); ; next = await run.next()) {
      if (next.done) return next.value;
      into.push(next.value);
    }
  };
  const first = [];
  const ending = follow();
  const firstAnswer = read(follow(), first);
  await tick();
  works[0].report("1 of 3 MB");
  await tick();
  assert.deepEqual((await ending.next()).value, "1 of 3 MB"); // a second follower of the same work
  await ending.return(); // ended early: the work goes on
  works[0].report("2 of 3 MB");
  works[0].report("3 of 3 MB"); // two reports between steps: the latest
  await tick();
  works[0].resolve("files");
  assert.equal(await firstAnswer, "files");
  assert.deepEqual(first, ["1 of 3 MB", "3 of 3 MB"]);
  assert.equal(works.length, 1);
  const later = [];
  assert.equal(await read(follow(), later), "files"); // done before: its answer at once, no progress
  assert.deepEqual([later, works.length], [[], 1]);

  follow.forget(); // what it made is gone: the next follow does it again
  const failing = read(follow(), []);
  await tick();
  works[1].reject(new Error("cut"));
  await assert.rejects(failing, /cut/);
  const retried = read(follow(), []);
  await tick();
  assert.equal(works.length, 3); // Retry starts it again
  works[2].resolve("files again");
  assert.equal(await retried, "files again");
});
