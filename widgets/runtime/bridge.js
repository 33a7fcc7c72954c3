// The one path from the page to Python. Every widget imports `call`:
//   const report = await call("shapes_view", { d_model: 512, n_heads: 8, seq_len: 10, batch: 2 });
// One module Web Worker runs Pyodide (worker.js), another downloads its files (fetcher.js); requests carry ids,
// plain JSON in and out. With instant navigation the same workers serve every page the reader moves to.
// <html data-mha-runtime="idle|loading|ready|error"> and onStatus() tell where the runtime is:
//   idle     not started: Python starts once the page has loaded (at once, if an earlier visit kept it whole)
//            and a widget is about to be seen, or at the first call; on a connection that asks to save data,
//            only when the reader presses "Load". A widget marked ON_REQUEST (the real model's, which computes
//            nothing until its own Load) starts it only by asking.
//   loading  downloading and starting, with the bytes that arrived in the message
// A runtime that fails (a file missing or not the one built, the worker crashing, Python failing fatally,
// nothing arriving or answered for STALL_TIMEOUT_MS) is ended, every waiting call is rejected, and retry()
// starts a new one, which reuses every file that already arrived intact.
import config from "./config.js";
import { memoryKept } from "./memory.js";
import { eachPage, whenNear } from "./page.js";

// No byte for this long while Python waits for a download, or no word from Python for the longer period while
// it starts or computes (a slow phone may need many seconds): the start or the call has stalled.
const STALL_TIMEOUT_MS = 20000;
export const BUSY_TIMEOUT_MS = 60000;

/** A widget that needs Python only once the reader asks for a computation: its being seen starts nothing. */
export const ON_REQUEST = '[data-python="on-request"]';

const listeners = new Set();
let status = { state: "idle", message: "" };
let runtime = null; // the Runtime (below), started by start()
let started = null; // resolves once start() has been called
let begin = null;
let nextId = 1;

/** A call that Python answered with {ok: false, error}. */
export class CallError extends Error {}

/** A call Python refused (refused: true): the arguments cannot be computed, in words for the reader. */
export class Refusal extends CallError {}

const failed = (reply) => new (reply.refused ? Refusal : CallError)(reply.error);

/** Listeners hear a change only: Python's steps and bytes often repeat the words shown, and each change is a frame. */
function setStatus(state, message) {
  if (state === status.state && message === status.message) return;
  status = { state, message };
  document.documentElement.dataset.mhaRuntime = state;
  for (const listener of listeners) listener(status);
}

/** listener({state, message}) now and on every change; returns an unsubscribe function. */
export function onStatus(listener) {
  listeners.add(listener);
  listener(status);
  return () => listeners.delete(listener);
}

const WIRE_BYTES = [...Object.values(config.files), ...config.wheels].reduce((sum, f) => sum + f.bytes, 0);
const megabytes = (bytes) => (bytes / 1e6).toFixed(1);

/** The size of Python's download, in MB on the wire. */
export const downloadMB = () => megabytes(WIRE_BYTES);

/** A download's progress, the one way every download says it (Python's, and a widget's through download()):
 * "4.8 of 7.0 MB". */
export const downloaded = (arrived, total) => `${megabytes(arrived)} of ${megabytes(total)} MB`;

/** Every file Python is made of ({indexURL, files: {url: {source, gzip, sha256, bytes}}}; the wheels end in .whl). */
function pythonFiles() {
  const indexURL = config.pyodide || new URL("../../pyodide/", import.meta.url).href;
  const wheelURL = (name) => new URL(`../../wheels/${name}`, import.meta.url).href;
  const files = {};
  for (const { name, ...wheel } of config.wheels) files[wheelURL(name)] = { ...wheel, source: wheelURL(wheel.path) };
  for (const [name, f] of Object.entries(config.files)) {
    files[new URL(name, indexURL).href] = { ...f, source: new URL(f.path, indexURL).href };
  }
  return { indexURL, files };
}

/** The worker's init message: every file Python is made of, where it is, its sha256 and size. */
function initMessage() {
  const lock = `mha-python-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return { type: "init", ...pythonFiles(), lock };
}

/** "Downloading Python: 4.8 of 7.0 MB" while Python waits for its files, the step it is at once it works
 * ("Starting Python… (downloading: 5.2 of 7.0 MB)" while the rest still arrives). */
function progressMessage({ step, waiting, arrived, total }) {
  if (arrived >= total) return step;
  const bytes = downloaded(arrived, total);
  return waiting ? `Downloading Python: ${bytes}` : `${step} (downloading: ${bytes})`;
}

/** Two workers running Python, one downloading its files (fetcher.js), one starting and running it
 * (worker.js): their start, calls and end (stop), after which they answer nothing.
 *   entry    the Python module whose call(fn, args) answers the calls (the widgets': mha_page.bridge)
 *   keep     keep Python's memory, once started, for a later start (the widgets' Python does)
 *   report   report(state, message, runtime) on each change of state (loading, ready, error)
 *   print    print(text) for what Python writes on its stdout (the reader's prints in an exercise)
 *   stallMs  how long a start may wait for a file with no byte arriving (a second Python, whose files come from
 *            the browser's store at once, is silent while its thread compiles them: it waits longer)
 * `kept` resolves once the files (and the memory) are kept in the browser, or the runtime stopped. */
export class Runtime {
  constructor({
    entry = "mha_page.bridge", keep = true, report = () => {}, print = () => {}, stallMs = STALL_TIMEOUT_MS,
  } = {}) {
    this.stallMs = stallMs;
    this.print = print;
    this.report = (state, message) => report(state, message, this);
    this.kept = new Promise((resolve) => (this.settleKept = resolve));
    this.worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.fetcher = new Worker(new URL("./fetcher.js", import.meta.url), { type: "module" });
    this.pending = new Map(); // call id -> {resolve, reject}
    this.failure = null;
    this.init = initMessage();
    this.progress = { step: "Starting Python…", waiting: true, arrived: 0, total: WIRE_BYTES };
    this.ready = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.ready.catch(() => {}); // callers see the rejection; this keeps it from being "unhandled"
    for (const [worker, name] of [[this.worker, "Python worker"], [this.fetcher, "worker downloading Python"]]) {
      worker.onmessage = ({ data }) => this.receive(data);
      worker.onerror = (event) => {
        event.preventDefault();
        this.stop(`The ${name} stopped: ${event.message || "it could not be loaded"}.`);
      };
    }
    this.watch("Starting Python stalled", stallMs);
    const { port1, port2 } = new MessageChannel();
    this.worker.postMessage({ ...this.init, entry, keep, port: port1 }, [port1]);
    this.fetcher.postMessage({ files: this.init.files, port: port2 }, [port2]);
  }

  /** End the workers and reject every waiting call; its status says why. */
  stop(message) {
    if (this.failure) return;
    this.failure = new Error(message);
    clearTimeout(this.timer);
    this.worker.terminate();
    this.fetcher.terminate();
    this.settle.reject(this.failure);
    for (const { reject } of this.pending.values()) reject(this.failure);
    this.pending.clear();
    this.settleKept();
    this.report("error", message);
  }

  /** Stop with "<what>: nothing arrived for N s." unless the worker has news before then. */
  watch(what, ms = BUSY_TIMEOUT_MS) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.stop(`${what}: nothing arrived for ${ms / 1000} s.`), ms);
  }

  /** Python's JSON answer to fn(args), args being JSON text. */
  send(fn, args) {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const id = nextId++;
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) this.watch("Python has not answered");
      this.worker.postMessage({ type: "call", id, fn, args });
    });
  }

  /** Download files into Python's folder (worker.js's "files" request); onBytes(arrived, total) as they arrive.
   * A silence of stallMs with no byte is a stall; the answer is a call's. */
  download(folder, store, files, onBytes) {
    return new Promise((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      const id = nextId++;
      this.pending.set(id, { resolve, reject, onBytes });
      this.watch("Downloading the model stalled", this.stallMs);
      this.worker.postMessage({ type: "files", id, folder, store, files });
    });
  }

  receive(data) {
    if (data.type === "files") { // a download's bytes (download above)
      this.pending.get(data.id)?.onBytes(data.arrived, data.total);
      this.watch("Downloading the model stalled", this.stallMs);
    } else if (data.type === "progress" || data.type === "bytes") { // from the Python worker, from the downloads
      if (this.failure || this.isReady) return;
      Object.assign(this.progress, data);
      const { waiting, step } = this.progress;
      this.watch(`${waiting ? "Downloading Python" : step.replace("…", "")} stalled`,
                 waiting ? this.stallMs : BUSY_TIMEOUT_MS);
      this.report("loading", progressMessage(this.progress));
    } else if (data.type === "result") {
      this.pending.get(data.id)?.resolve(data.json);
      this.pending.delete(data.id);
      if (this.pending.size) this.watch("Python has not answered");
      else clearTimeout(this.timer);
    } else if (data.type === "ready") {
      this.isReady = true;
      clearTimeout(this.timer);
      this.settle.resolve();
      this.report("ready", data.message);
    } else if (data.type === "kept") { // from the downloads worker
      this.settleKept();
    } else if (data.type === "print") {
      this.print(data.text);
    } else if (data.type === "failed") {
      this.stop(data.message);
    } else if (data.type === "held") { // the lock is granted once the worker has ended, whatever ended it
      navigator.locks.request(this.init.lock, () => this.stop("The Python worker stopped unexpectedly."));
    }
  }
}

/** Start Python now, unless it has started already. */
export function start() {
  if (runtime) return;
  runtime = new Runtime({ report: (state, message, from) => from === runtime && setStatus(state, message) });
  setStatus("loading", "Starting Python…");
  begin();
}

/** Throw the current runtime away (its waiting calls are rejected) and start a new one. */
export function retry() {
  const old = runtime;
  runtime = null;
  old?.stop("Python was restarted.");
  start();
}

/** Call mha_page.bridge.call(fn, JSON(args)) in the worker; resolve with its result. A call starts Python
 * (except where the reader chose when to load it: then it waits for that). */
export async function call(fn, args) {
  const json = JSON.stringify(args);
  if (!savesData()) start();
  await started;
  const current = runtime; // a retry meanwhile does not move this call to the new runtime
  await current.ready;
  const reply = JSON.parse(await current.send(fn, json));
  if (!reply.ok) throw failed(reply);
  return reply.result;
}

/** Download files ({url: {source, gzip, sha256, bytes, name}}) into folder in the widgets' Python, each checked by
 * its sha256 and kept in the Cache Storage named store (a revisit downloads nothing; after a failure, what had
 * arrived is not downloaded again); onBytes(arrived, total) reports progress. Starts Python if need be. */
export async function download(folder, store, files, onBytes) {
  if (runtime?.failure) retry();
  start();
  await started;
  const current = runtime;
  await current.ready;
  const reply = JSON.parse(await current.download(folder, store, files, onBytes));
  if (!reply.ok) throw failed(reply);
  return reply.result;
}

/** Resolves once the widgets' Python has started and its files are kept in the browser (starting it if need
 * be, or again if it failed, as Retry does): another Python started then downloads nothing again. Rejects with
 * the reason if that start fails. */
export async function pythonKept() {
  if (runtime?.failure) retry();
  start();
  await started;
  const current = runtime;
  await current.ready;
  await current.kept;
}

/** The connection asks to save data, or is 2G-class: Python (several MB) loads only when the reader asks. */
export function savesData() {
  const c = navigator.connection;
  return Boolean(c && (c.saveData || /(^|-)2g$/.test(c.effectiveType || "")));
}

/** Start once a widget comes near the screen (each page's widgets but those ON_REQUEST, until Python has started). */
let watching = false;
function startWhenNear() {
  if (watching) return;
  watching = true;
  eachPage(() => {
    if (!runtime) document.querySelectorAll(`[data-mha-widget]:not(${ON_REQUEST})`).forEach((w) => whenNear(w, start));
  });
}

started = new Promise((resolve) => (begin = resolve));
setStatus("idle", savesData()
  ? `Live Python is not loaded on this connection: the numbers shown were computed when the site was built.`
  : "Python starts when a widget comes into view.");
// Python waits for the page's own load, so that its downloads do not slow the page's; unless an earlier visit
// kept it whole (its memory, so the files it is made of), when it downloads nothing.
if (!savesData()) {
  if (document.readyState === "complete") startWhenNear();
  else {
    addEventListener("load", startWhenNear, { once: true });
    const { indexURL, files } = pythonFiles();
    memoryKept(indexURL, files).then((kept) => kept && startWhenNear(), () => {});
  }
}
