// "The latest request wins", written once (no DOM: tested under node --test). A widget asks Python one
// call at a time: a request made while a call is on its way only marks that call out of date, and the
// inputs as they are then are asked for as soon as it returns, so a dragged slider never queues calls and
// the last thing shown is always the answer for the inputs the reader left.

/** request() for ask (a call for the inputs as they are now: a Promise of its answer).
 *   show(answer, latest)  each answer that arrives; latest is false when a newer request is already waiting
 *                         (an answer still newer than what is shown, so it is shown, but the widget stays busy)
 *   settle(error)         once the latest request is answered: null, or the error that call failed with (a
 *                         failure of an out-of-date call is dropped: its inputs are gone)
 * request() returns a Promise that resolves once the widget has settled. */
export function latestWins({ ask, show, settle }) {
  let busy = false; // a flag apart from the Promise: run() may finish before request() holds its Promise
  let outdated = false;
  let done = Promise.resolve();
  async function run() {
    let error = null;
    do {
      outdated = false;
      try {
        const answer = await ask(); // ask may also throw at once, before any call
        error = null;
        show(answer, !outdated);
      } catch (err) {
        error = err;
      }
    } while (outdated);
    busy = false;
    settle(error);
  }
  return function request() {
    if (busy) {
      outdated = true;
      return done;
    }
    busy = true;
    done = run();
    return done;
  };
}
