// "The latest request wins", written once (no DOM: tested under node --test). A widget asks for one piece of
// work at a time: a request made meanwhile only marks that work out of date, and the inputs as they are then
// are asked for as soon as it ends, so a dragged slider never queues calls and the last thing shown is always
// the answer for the inputs the reader left.
// The work is one call (ask() returns a Promise of its answer) or a run of calls (ask() returns an async
// iterator, an async generator's: each value it yields is a step's progress, the value it returns the answer).
// A run out of date, or stopped, ends at its next step (the step of a stopped run is shown, an outdated one's
// not): the iterator's return() runs its finally blocks (the place to tell Python that a run is dropped), and the
// newest request starts (RxJS's switchMap; Observable's generator cells). A single call cannot be cut: its
// answer, still newer than what is shown, is shown.

const isRun = (work) => typeof work?.[Symbol.asyncIterator] === "function";

/** request() for ask (the work for the inputs as they are now: a Promise of its answer, or a run).
 *   show(answer, latest)  each answer that arrives; latest is false when a newer request is already waiting
 *                         (an answer still newer than what is shown, so it is shown, but the widget stays busy)
 *   step(progress)        each step of a run, as it comes (none once the run is out of date)
 *   settle(error)         once the latest request is answered, or its run stopped: null, or the error the work
 *                         failed with (a failure of out-of-date work is dropped: its inputs are gone)
 * request() returns a Promise that resolves once the widget has settled; request.stop() ends the current run
 * at its next step (it settles without an answer) and is ignored when nothing runs. */
export function latestWins({ ask, show, step = () => {}, settle }) {
  let busy = false; // a flag apart from the Promise: run() may finish before request() holds its Promise
  let outdated = false;
  let stopped = false;
  let done = Promise.resolve();

  /** The run's answer, or nothing (undefined, {ended: true}) when it ended out of date or stopped. */
  async function follow(run) {
    for (;;) {
      const { value, done: finished } = await run.next();
      if (finished) return { answer: await value }; // WebKitGTK 2.4x hands over a returned Promise unawaited
      if (!outdated) step(value); // a stopped run's last step is still the reader's (a stream's last slice)
      if (outdated || stopped) {
        await run.return?.();
        return { ended: true };
      }
    }
  }

  async function work() {
    let error = null;
    do {
      outdated = false;
      try {
        const asked = ask(); // ask may also throw at once, before any call
        const { answer, ended } = isRun(asked) ? await follow(asked[Symbol.asyncIterator]()) : { answer: await asked };
        error = null;
        if (!ended) show(answer, !outdated);
      } catch (err) {
        error = err;
      }
    } while (outdated && !stopped);
    busy = stopped = false;
    settle(error);
  }

  function request() {
    if (busy) {
      outdated = true;
      return done;
    }
    busy = true;
    done = work();
    return done;
  }
  request.stop = () => {
    if (busy) stopped = true;
  };
  return request;
}

/** Work that several requests may wait for, done once (an asset's fetch, the model's download): shared(work)
 * returns follow(), a run for ask. follow() starts work(report) unless it is under way or done, yields each
 * progress report(value) gives (the latest, when several came between two steps), and returns work's answer.
 * A run that ends early (out of date, stopped) leaves the work going, for the next request to follow; after a
 * failure the next follow() starts it again (Retry). follow.forget() drops a done work's answer, when what it
 * made is gone (a restarted Python), so that the next follow() does it again. */
export function shared(work) {
  let current = null;
  function begin() {
    const at = { progress: undefined, reports: 0, over: false };
    let wake = () => {};
    const renew = () => (at.changed = new Promise((resolve) => (wake = resolve)));
    renew();
    const report = (value) => {
      Object.assign(at, { progress: value, reports: at.reports + 1 });
      const woken = wake;
      renew();
      woken();
    };
    at.answer = Promise.resolve().then(() => work(report));
    at.ended = at.answer.then(() => {}, () => { if (current === at) current = null; }).then(() => (at.over = true));
    return at;
  }
  async function* follow() {
    const at = (current ??= begin());
    let seen = at.over ? at.reports : 0; // a work done before: its answer at once
    for (;;) {
      if (at.reports > seen) {
        seen = at.reports;
        yield at.progress;
      } else if (at.over) {
        return await at.answer;
      } else {
        await Promise.race([at.changed, at.ended]);
      }
    }
  }
  follow.forget = () => (current = null);
  return follow;
}

/** A run of work(report), work done for one request alone that says its progress through a callback (a wait for
 * Python to start, told as it goes): yields each report, returns work's answer. */
export const reported = (work) => shared(work)();
