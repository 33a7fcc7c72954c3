// The one path from the page to Python. Every widget imports `call`:
//   const report = await call("shape_report", { d_model: 512, n_heads: 8, seq_len: 10, batch: 2 });
// One module Web Worker per page runs Pyodide (worker.js); requests carry ids, plain JSON in and out.
// <html data-mha-runtime="loading|ready|error"> and onStatus() tell where the runtime is.
import config from "./config.js";

// A start that stalls (no progress from the worker for this long) ends in "error", not an endless spinner.
export const STALL_TIMEOUT_MS = 20000;

const listeners = new Set();
let status = { state: "loading", message: "Starting Python…" };
let runtime = null; // { worker, ready: Promise, pending: Map<id, {resolve, reject}> }
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

function runtimeURLs() {
  const wheel = `../../wheels/${config.wheel}?v=${config.wheel_sha256.slice(0, 16)}`;
  return {
    indexURL: config.pyodide || new URL("../../pyodide/", import.meta.url).href,
    wheelURL: new URL(wheel, import.meta.url).href,
    wheelSHA256: config.wheel_sha256,
  };
}

function start() {
  const worker = new Worker(new URL("./worker.js", import.meta.url), { type: "module" });
  const pending = new Map();
  let settle;
  let timer;
  const ready = new Promise((resolve, reject) => (settle = { resolve, reject }));
  ready.catch(() => {}); // callers see the rejection; this keeps it from being "unhandled"
  const fail = (message) => {
    clearTimeout(timer);
    worker.terminate();
    settle.reject(new Error(message));
    for (const { reject } of pending.values()) reject(new Error(message));
    pending.clear();
    if (runtime?.worker === worker) setStatus("error", message);
  };
  const watch = (message) => {
    clearTimeout(timer);
    timer = setTimeout(() => fail(`${message} stalled for ${STALL_TIMEOUT_MS / 1000} s.`), STALL_TIMEOUT_MS);
  };
  watch("Starting Python");
  worker.onmessage = ({ data }) => {
    if (data.type === "progress") {
      watch(data.message.replace("…", ""));
      setStatus("loading", data.message);
    } else if (data.type === "result") {
      pending.get(data.id)?.resolve(data.json);
      pending.delete(data.id);
    } else if (data.type === "ready") {
      clearTimeout(timer);
      settle.resolve();
      setStatus("ready", `Python ready in ${(data.ms / 1000).toFixed(1)} s: the numbers are computed in your browser.`);
    } else if (data.type === "failed") {
      fail(data.message);
    }
  };
  worker.onerror = (event) => {
    event.preventDefault();
    fail(`The Python worker stopped: ${event.message || "it could not be loaded"}.`);
  };
  worker.postMessage({ type: "init", ...runtimeURLs() });
  runtime = { worker, ready, pending };
  setStatus("loading", "Starting Python…");
}

/** Throw the current runtime away and start a new one. */
export function retry() {
  runtime?.worker.terminate();
  runtime = null;
  start();
}

/** Call mha_core.bridge.call(fn, JSON(args)) in the worker; resolve with its result. */
export async function call(fn, args) {
  if (!runtime) start();
  const { worker, ready, pending } = runtime;
  await ready;
  const id = nextId++;
  const json = await new Promise((resolve, reject) => {
    pending.set(id, { resolve, reject });
    worker.postMessage({ type: "call", id, fn, args: JSON.stringify(args) });
  });
  const reply = JSON.parse(json);
  if (!reply.ok) throw new CallError(reply.error);
  return reply.result;
}

// Right after the first paint (the frame after the first animation frame), so that Python's downloads
// never hold up the page's own; a call made earlier starts it at once.
setStatus("loading", status.message);
requestAnimationFrame(() => setTimeout(() => runtime || start(), 0));
