// Pyodide in a module Web Worker, shared by all the widgets of a page.
// In:  {type: "init", indexURL, wheelURL, wheelSHA256}, then {type: "call", id, fn, args} (args: JSON text).
// Out: {type: "progress", message}..., then {type: "ready", ms} or {type: "failed", message};
//      {type: "result", id, json} for each call.
// fn and args reach mha_core.bridge.call as Python strings: data, never Python source.
const SITE_PACKAGES = "/lib/python3.12/site-packages"; // Pyodide 0.27's Python 3.12

// Emscripten reports a .wasm it cannot fetch or compile (404, wrong MIME type, corrupt file) only with
// console.warn, and loadPyodide then never settles: watch for it while Python starts.
const FATAL = /instantiation failed|WebAssembly|^Aborted/;

let bridgeCall = null;

/** loadPyodide, rejected as soon as a fatal start-up error is reported. */
async function startPyodide(loadPyodide, indexURL) {
  const warn = console.warn;
  try {
    return await new Promise((resolve, reject) => {
      const lines = [];
      console.warn = (...args) => {
        warn(...args);
        lines.push(args.join(" "));
        if (FATAL.test(lines.at(-1))) setTimeout(() => reject(new Error(lines.slice(-2).join(": "))), 0);
      };
      const packages = ["numpy"];
      loadPyodide({ indexURL, packages, stdout: () => {}, stderr: console.warn }).then(resolve, reject);
    });
  } finally {
    console.warn = warn;
  }
}

async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function fetchWheel(url, expected) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${response.url}: HTTP ${response.status}`);
  const bytes = await response.arrayBuffer();
  if (crypto.subtle && (await sha256(bytes)) !== expected) throw new Error(`${response.url}: the file is not the one built`);
  return bytes;
}

const progress = (message) => postMessage({ type: "progress", message });

async function init({ indexURL, wheelURL, wheelSHA256 }) {
  const t0 = performance.now();
  progress("Starting Python…");
  const wheel = fetchWheel(wheelURL, wheelSHA256);
  wheel.catch(() => {}); // awaited below
  const { loadPyodide } = await import(new URL("pyodide.mjs", indexURL).href);
  const pyodide = await startPyodide(loadPyodide, indexURL); // numpy downloads meanwhile
  if (!pyodide.loadedPackages.numpy) throw new Error("NumPy could not be loaded");
  progress("Loading mha_core…");
  pyodide.unpackArchive(await wheel, "wheel", { extractDir: SITE_PACKAGES });
  bridgeCall = pyodide.pyimport("mha_core.bridge").call;
  return performance.now() - t0;
}

/** The line that says what went wrong (a Python traceback's last), at most 300 characters. */
function lastLine(text) {
  const lines = String(text).trim().split("\n");
  const line = lines.findLast((l) => /^\w*(Error|Exception)\b/.test(l)) || lines.at(-1);
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

function answer(fn, args) {
  try {
    return bridgeCall(fn, args);
  } catch (err) {
    return JSON.stringify({ ok: false, error: lastLine(err.message || err) });
  }
}

self.onmessage = async ({ data }) => {
  if (data.type === "init") {
    try {
      postMessage({ type: "ready", ms: await init(data) });
    } catch (err) {
      postMessage({ type: "failed", message: `Python could not start: ${lastLine(err.message || err)}` });
    }
  } else if (data.type === "call") {
    postMessage({ type: "result", id: data.id, json: answer(data.fn, data.args) });
  }
};
