// Material's search worker, its index built when the reader first searches instead of at every page load:
// building lunr's index of the site took 0.14–0.17 s of CPU at each load (traced, four loads, 2 cores), just as
// the page and Python start; with this, 0.02 s. The first search waits for the index: from the query typed to
// its results 0.30 s against 0.02 s (five each); the searches after it 0.02 s as before.
//
// This is the one module that leans on Material for MkDocs' search internals. The contract, as pinned
// (requirements.txt: mkdocs-material 9.8.2; tests/site/test_material_internals.py checks each fact in the
// installed package and fails the day one changes):
//   1. The page learns where the search worker is from its config (base.html's config block):
//      "search": "assets/javascripts/workers/search.<hash>.min.js". overrides/main.html points it at this file
//      instead, with Material's script as ?material=search.<hash>.min.js, which this file imports.
//   2. Page and worker exchange {type, data}: SETUP (0, the site's text) from the page, answered by READY (1);
//      only then the page sends QUERY (2, the search field's text, blank until the reader types), answered by
//      RESULT (3, {items}).
//   3. Material's worker listens with addEventListener("message") and answers through the global postMessage.
// Here READY is answered at once and SETUP kept until the first query that is not blank (a blank one gets no
// results, as from Material's worker); then Material's worker builds the index, its READY is not passed on, and
// the queries that came meanwhile are answered in order.
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
