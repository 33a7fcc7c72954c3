// The one path from the page to Python. Every widget imports `call`:
//   const report = await call("shape_report", { d_model: 512, n_heads: 8, seq_len: 10, batch: 2 });
// One module Web Worker per page runs Pyodide (worker.js); requests carry ids, plain JSON in and out.
// <html data-mha-runtime="loading|ready|error"> and onStatus() tell where the runtime is. A runtime that
// fails (a file missing or not the one built, the worker crashing, Python failing fatally, no answer for
// STALL_TIMEOUT_MS) is ended, every waiting call is rejected, and retry() starts a new one.
import config from "./config.js";

// A start or a call that stalls (no word from the worker for this long) ends in "error", not an endless spinner.
const STALL_TIMEOUT_MS = 20000;

const listeners = new Set();
let status = { state: "loading", message: "Starting Python…" };
let runtime = null; // the page's Runtime (below), started on the first call or right after the first paint
let nextId = 1;

/** A call that Python answered with {ok: false, error}. */
export class CallError extends Error {}

function setStatus(state, message) {
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

/** The worker's init message: where Pyodide is, and every file Python is made of with its sha256. */
function initMessage() {
  const indexURL = config.pyodide || new URL("../../pyodide/", import.meta.url).href;
  const wheelURL = new URL(`../../wheels/${config.wheel}?v=${config.wheel_sha256.slice(0, 16)}`, import.meta.url).href;
  const files = { [wheelURL]: config.wheel_sha256 };
  for (const [name, hash] of Object.entries(config.pyodide_sha256)) files[new URL(name, indexURL).href] = hash;
  const lock = `mha-python-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  return { type: "init", indexURL, wheelURL, files, lock };
}

/** One worker running Python: its start, its calls and its end (stop), after which it answers nothing. */
class Runtime {
  constructor() {
    this.worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
    this.pending = new Map(); // call id -> {resolve, reject}
    this.failure = null;
    this.init = initMessage();
    this.ready = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.ready.catch(() => {}); // callers see the rejection; this keeps it from being "unhandled"
    this.worker.onmessage = ({ data }) => this.receive(data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this.stop(`The Python worker stopped: ${event.message || "it could not be loaded"}.`);
    };
    this.watch("Starting Python stalled");
    this.worker.postMessage(this.init);
  }

  /** End the worker and reject every waiting call; the page's status says why if this is its runtime. */
  stop(message) {
    if (this.failure) return;
    this.failure = new Error(message);
    clearTimeout(this.timer);
    this.worker.terminate();
    this.settle.reject(this.failure);
    for (const { reject } of this.pending.values()) reject(this.failure);
    this.pending.clear();
    if (runtime === this) setStatus("error", message);
  }

  /** Stop with "<what> for 20 s." unless the worker has news before then. */
  watch(what) {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.stop(`${what} for ${STALL_TIMEOUT_MS / 1000} s.`), STALL_TIMEOUT_MS);
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

  receive(data) {
    if (data.type === "progress") {
      this.watch(`${data.message.replace("…", "")} stalled`);
      setStatus("loading", data.message);
    } else if (data.type === "result") {
      this.pending.get(data.id)?.resolve(data.json);
      this.pending.delete(data.id);
      if (this.pending.size) this.watch("Python has not answered");
      else clearTimeout(this.timer);
    } else if (data.type === "ready") {
      clearTimeout(this.timer);
      this.settle.resolve();
      setStatus("ready", `Python ready in ${(data.ms / 1000).toFixed(1)} s: the numbers are computed in your browser.`);
    } else if (data.type === "failed") {
      this.stop(data.message);
    } else if (data.type === "held") { // the lock is granted once the worker has ended, whatever ended it
      navigator.locks.request(this.init.lock, () => this.stop("The Python worker stopped unexpectedly."));
    }
  }
}

function start() {
  runtime = new Runtime();
  setStatus("loading", "Starting Python…");
}

/** Throw the current runtime away (its waiting calls are rejected) and start a new one. */
export function retry() {
  const old = runtime;
  runtime = null;
  old?.stop("Python was restarted.");
  start();
}

/** Call mha_core.bridge.call(fn, JSON(args)) in the worker; resolve with its result. */
export async function call(fn, args) {
  if (!runtime) start();
  const current = runtime; // a retry meanwhile does not move this call to the new runtime
  const json = JSON.stringify(args);
  await current.ready;
  const reply = JSON.parse(await current.send(fn, json));
  if (!reply.ok) throw new CallError(reply.error);
  return reply.result;
}

// Right after the first paint (the frame after the first animation frame), so that Python's downloads
// never hold up the page's own; a call made earlier starts it at once.
setStatus("loading", status.message);
requestAnimationFrame(() => setTimeout(() => runtime || start(), 0));
