// Pyodide in a module Web Worker, shared by all the widgets of a page.
// In:  {type: "init", indexURL, files: {url: sha256}, wheelURL, lock}, then {type: "call", id, fn, args}
//      (args: JSON text).
// Out: {type: "held"} once the worker holds the Web Lock named lock (released when the worker ends, however
//      it ends); {type: "progress", message}..., then {type: "ready", ms} or {type: "failed", message};
//      {type: "result", id, json} for each call, or {type: "failed", message} if Python fails fatally.
// fn and args reach mha_core.bridge.call as Python strings: data, never Python source.
const SITE_PACKAGES = "/lib/python3.12/site-packages"; // Pyodide 0.27's Python 3.12

// Emscripten reports a .wasm it cannot fetch or compile (404, wrong type, corrupt file) only with console.warn,
// and loadPyodide then never settles: watch for it while Python starts.
const FATAL = /instantiation failed|WebAssembly|^Aborted/;
const TYPES = { mjs: /javascript/, js: /javascript/, wasm: /^application\/wasm/ }; // as browsers insist

let bridgeCall = null; // mha_core.bridge.call once Python is ready; null again if Python fails fatally

const progress = (message) => postMessage({ type: "progress", message });
const fileName = (url) => new URL(url).pathname.split("/").pop();

/** The line that says what went wrong (a Python traceback's last), at most 300 characters. */
function lastLine(text) {
  const lines = String(text).trim().split("\n");
  const line = lines.findLast((l) => /^\w*(Error|Exception)\b/.test(l)) || lines.at(-1);
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The bytes at url, if they are the file the site was built with (sha256, where the browser has it). */
async function fetchChecked(url, expected) {
  const response = await fetch(url);
  const name = fileName(url);
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  const type = response.headers.get("content-type") || "no type";
  const ext = name.split(".").pop();
  if (TYPES[ext] && !TYPES[ext].test(type)) {
    throw new Error(`${name} is served as ${type}, which browsers refuse for a .${ext} file`);
  }
  const bytes = await response.arrayBuffer();
  if (crypto.subtle && (await sha256(bytes)) !== expected) {
    throw new Error(`${name} is not the file this site was built with (its sha256 differs)`);
  }
  return bytes;
}

/** loadPyodide with numpy, rejected as soon as a fatal start-up error is reported. */
async function startPyodide(indexURL) {
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  const warn = console.warn;
  const lines = [];
  try {
    const pyodide = await new Promise((resolve, reject) => {
      console.warn = (...args) => {
        warn(...args);
        lines.push(args.join(" "));
        if (FATAL.test(lines.at(-1))) setTimeout(() => reject(new Error(lines.slice(-2).join(": "))), 0);
      };
      const packages = ["numpy"];
      loadPyodide({ indexURL, packages, stdout: () => {}, stderr: console.warn }).then(resolve, reject);
    });
    if (!pyodide.loadedPackages.numpy) throw new Error(`NumPy could not be loaded: ${lines.at(-1) || "no reason"}`);
    return pyodide;
  } finally {
    console.warn = warn;
  }
}

async function init({ indexURL, files, wheelURL }) {
  const t0 = performance.now();
  progress("Starting Python…");
  // Pyodide fetches its files itself; the same requests, answered from the HTTP cache, check each one's
  // hash meanwhile. A file that is not the one built is the reason for a failure, whatever else fails.
  const checks = Object.fromEntries(Object.entries(files).map(([url, hash]) => [url, fetchChecked(url, hash)]));
  const checked = Promise.all(Object.values(checks));
  checked.catch(() => {}); // awaited below
  const started = startPyodide(indexURL).catch(async (err) => {
    await checked;
    throw err;
  });
  const [pyodide] = await Promise.all([started, checked]);
  progress("Loading mha_core…");
  pyodide.unpackArchive(await checks[wheelURL], "wheel", { extractDir: SITE_PACKAGES });
  bridgeCall = pyodide.pyimport("mha_core.bridge").call;
  return performance.now() - t0;
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
      postMessage({ type: "ready", ms: await init(data) });
    } catch (err) {
      postMessage({ type: "failed", message: `Python could not start: ${lastLine(err.message || err)}` });
    }
  } else if (data.type === "call") {
    if (bridgeCall) answer(data.id, data.fn, data.args);
    else postMessage({ type: "failed", message: "Python is not running." });
  }
};
