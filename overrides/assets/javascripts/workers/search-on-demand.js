// Material's search worker, its index built when the reader first searches instead of at every page load:
// building lunr's index of the site took 0.14–0.17 s of CPU at each load (traced, 2 cores), just as the page
// and Python start.
// Material's page sends SETUP with the site's text and waits for READY before it sends a QUERY, answered by
// a RESULT; at READY it sends the search field's text at once, blank until the reader types. Here READY is
// answered at once and SETUP kept until the first query that is not blank (a blank one gets no results, as
// from Material's worker); then Material's worker (imported below: ?material= names it, beside this file)
// builds the index, its READY is not passed on, and the queries that came meanwhile are answered in order.
const SETUP = 0;
const READY = 1;
const QUERY = 2;
const RESULT = 3;
let kept = null; // Material's SETUP, until the first query
let waiting = null; // while the index is built: the queries that came, in order

const post = self.postMessage.bind(self);
const pass = (data) => self.dispatchEvent(new MessageEvent("message", { data }));

self.postMessage = (message) => {
  if (message?.type !== READY || !waiting) return post(message);
  const queries = waiting; // the index is built: the waiting queries go on to Material's worker
  waiting = null;
  queries.forEach(pass);
};

addEventListener("message", (event) => {
  const { data } = event;
  if (data?.type === SETUP && waiting) return; // passed on by the first query: Material's worker builds
  if (data?.type !== SETUP && !waiting && !kept) return; // the index is built: Material's worker answers
  event.stopImmediatePropagation();
  if (data?.type === SETUP) {
    kept = data;
    post({ type: READY });
  } else if (waiting) {
    waiting.push(data);
  } else if (data?.type === QUERY && !String(data.data).trim()) {
    post({ type: RESULT, data: { items: [] } });
  } else { // the first query
    waiting = [data];
    const setup = kept;
    kept = null;
    pass(setup);
  }
});

const material = new URLSearchParams(location.search).get("material");
if (!/^search\.\w+\.min\.js$/.test(material)) throw new Error(`not Material's search worker: ${material}`);
importScripts(material);
