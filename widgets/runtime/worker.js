// Pyodide in a module Web Worker, shared by all the widgets of a page (and, with instant navigation, of the
// pages after it).
// In:  {type: "init", indexURL, wheelURL, files: {url: {source, gzip, sha256, bytes}}, lock, port} (port: the
//      downloads worker's, fetcher.js), then
//      {type: "call", id, fn, args} (args: JSON text).
// Out: {type: "held"} once the worker holds the Web Lock named lock (released when the worker ends, however
//      it ends); {type: "progress", step, waiting}..., then {type: "ready", ms, restored} (restored: Python
//      came from the memory an earlier start kept) or {type: "failed", message};
//      {type: "result", id, json} for each call, or {type: "failed", message} if Python fails fatally.
// fn and args reach mha_core.bridge.call as Python strings: data, never Python source.
import { FilesFrom } from "./downloads.js";
import { forgetMemory, keptMemory, memoryKey } from "./memory.js";

const SITE_PACKAGES = "/lib/python3.12/site-packages"; // Pyodide 0.27's Python 3.12

// Standard-library modules that installing NumPy, importing it and importing mha_core load: a fresh start
// imports them before its memory is kept, so that a revisit restores them instead of compiling them again.
const KEPT_IMPORTS = "importlib.metadata, tarfile, csv, pickle, ctypes, platform, dataclasses, unicodedata, " +
  "fractions, decimal, json";

// Emscripten reports a .wasm it cannot compile only with console.warn, and loadPyodide then never settles:
// watch for it while Python starts.
const FATAL = /instantiation failed|WebAssembly|^Aborted/;

let bridgeCall = null; // mha_core.bridge.call once Python is ready; null again if Python fails fatally

// What the reader is told: the step Python is at (the page adds the bytes that arrived), and whether Python
// waits for a file (then the page's watchdog expects bytes) or works (then a silence is Python computing).
let step = "Starting Python…";
let downloads = null;
const post = () => postMessage({ type: "progress", step, waiting: Boolean(downloads?.waiting) });
function stepTo(message) {
  step = message;
  post();
}

/** The line that says what went wrong (a Python traceback's last), at most 300 characters. */
function lastLine(text) {
  const lines = String(text).trim().split("\n");
  const line = lines.findLast((l) => /^\w*(Error|Exception)\b/.test(l)) || lines.at(-1);
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** The module made of a script's checked bytes. */
async function importChecked(bytes) {
  const url = URL.createObjectURL(new Blob([bytes], { type: "text/javascript" }));
  try {
    return await import(url);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** loadPyodide, rejected as soon as a fatal start-up error is reported. With the memory kept (a promise: read
 * while Pyodide's scripts are imported) from an earlier start Python is restored from it; without, it starts
 * afresh, ready to make a memory snapshot. */
async function startPyodide(downloads, indexURL, kept) {
  const file = (name) => downloads.bytes(new URL(name, indexURL).href);
  const { loadPyodide } = await importChecked(await file("pyodide.mjs"));
  await importChecked(await file("pyodide.asm.js")); // defines the factory, so loadPyodide does not fetch it
  const memory = await kept;
  const warn = console.warn;
  const lines = [];
  try {
    return await new Promise((resolve, reject) => {
      console.warn = (...args) => {
        warn(...args);
        lines.push(args.join(" "));
        if (FATAL.test(lines.at(-1))) setTimeout(() => reject(new Error(lines.slice(-2).join(": "))), 0);
      };
      const from = memory ? { _loadSnapshot: memory } : { _makeSnapshot: true };
      loadPyodide({ indexURL, stdout: () => {}, stderr: console.warn, ...from }).then(resolve, reject);
    });
  } finally {
    console.warn = warn;
  }
}

// Python 3.12's zipimport re-reads the whole standard-library archive's directory whenever import caches are
// invalidated, which installing a package does many times (about 0.2 s here; 3.13 made it lazy). The archive
// never changes while the page lives.
const ZIP_CACHES_KEPT = "import zipimport; zipimport.zipimporter.invalidate_caches = lambda self: None";

async function loadNumPy(pyodide) {
  stepTo("Loading NumPy…");
  pyodide.runPython(ZIP_CACHES_KEPT);
  const errors = [];
  await pyodide.loadPackage("numpy", { messageCallback: () => {}, errorCallback: (m) => errors.push(m) });
  if (!pyodide.loadedPackages.numpy) throw new Error(`NumPy could not be loaded: ${errors.at(-1) || "no reason"}`);
}

/** Python started from Pyodide's files: restored from the memory kept under memoryURL if there is one (a kept
 * memory that fails is forgotten), else afresh. Returns (pyodide, the memory to keep or null). */
async function startPython(downloads, indexURL, memoryURL) {
  const store = await downloads.store;
  const kept = keptMemory(store, memoryURL).catch(() => null); // storage that fails keeps nothing: start afresh
  try {
    const pyodide = await startPyodide(downloads, indexURL, kept);
    if (await kept) return [pyodide, null];
    pyodide.runPython(`import ${KEPT_IMPORTS}`);
    return [pyodide, pyodide.makeMemorySnapshot()];
  } catch (err) {
    if (await kept) await forgetMemory(store, memoryURL);
    throw err;
  }
}

async function init({ indexURL, files, wheelURL, port }) {
  const t0 = performance.now();
  // Each file is downloaded once, in the downloads worker; Pyodide's own requests get the checked bytes.
  downloads = new FilesFrom(port, files, post);
  self.fetch = downloads.fetch;
  const memoryURL = await memoryKey(indexURL, files);
  const python = (async () => {
    const [pyodide, memory] = await startPython(downloads, indexURL, memoryURL);
    await loadNumPy(pyodide);
    stepTo("Loading mha_core…");
    pyodide.unpackArchive(await downloads.bytes(wheelURL), "wheel", { extractDir: SITE_PACKAGES });
    bridgeCall = pyodide.pyimport("mha_core.bridge").call;
    return memory;
  })();
  // A file that did not arrive intact is the reason for a failure, whatever else fails because of it.
  const [memory] = await Promise.all([python.catch(async (err) => {
    await downloads.all;
    throw err;
  }), downloads.all]);
  const ms = performance.now() - t0;
  if (memory) downloads.keep(memoryURL, memory); // hashed and stored on the downloads worker's thread
  downloads.forgetOthers([memoryURL]);
  return { ms, restored: !memory };
}

/** Hold lock as long as this worker lives: the page learns of its end, a crash included, by the lock's release. */
function holdLock(lock) {
  if (!lock || !navigator.locks) return;
  navigator.locks.request(lock, () => {
    postMessage({ type: "held" });
    return new Promise(() => {});
  });
}

/** Python can no longer be used: this worker answers no more calls. */
function stopPython(reason) {
  bridgeCall = null;
  postMessage({ type: "failed", message: `Python stopped after a fatal error: ${reason}` });
}

/** Answer one call. bridge.call never raises; an error here is Pyodide's, and a fatal one ends Python. */
function answer(id, fn, args) {
  try {
    const json = bridgeCall(fn, args);
    if (typeof json !== "string") return stopPython("it gave no answer");
    postMessage({ type: "result", id, json });
  } catch (err) {
    if (err?.pyodide_fatal_error) return stopPython(lastLine(err.message || err));
    postMessage({ type: "result", id, json: JSON.stringify({ ok: false, error: lastLine(err.message || err) }) });
  }
}

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    holdLock(data.lock);
    try {
      postMessage({ type: "ready", ...(await init(data)) });
    } catch (err) {
      postMessage({ type: "failed", message: `Python could not start: ${lastLine(err.message || err)}` });
    }
  } else if (data.type === "call") {
    if (bridgeCall) answer(data.id, data.fn, data.args);
    else postMessage({ type: "failed", message: "Python is not running." });
  }
};
