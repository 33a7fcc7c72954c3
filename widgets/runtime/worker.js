// Pyodide in a module Web Worker, shared by all the widgets of a page (and, with instant navigation, of the
// pages after it).
// In:  {type: "init", indexURL, files: {url: {source, gzip, sha256, bytes}}, lock, port, entry, keep} (port: the
//      downloads worker's, fetcher.js; the files ending in .whl are the wheels: NumPy and mha_core; entry: the
//      module whose call answers the calls; keep: whether a fresh start's memory is kept for later starts), then
//      {type: "call", id, fn, args} (args: JSON text).
// Out: {type: "held"} once the worker holds the Web Lock named lock (released when the worker ends, however
//      it ends); {type: "progress", step, waiting}..., then {type: "ready", ms, restored} (restored: Python
//      came from the memory an earlier start kept) or {type: "failed", message};
//      {type: "result", id, json} for each call, or {type: "failed", message} if Python fails fatally.
// fn and args reach the entry's call (mha_core.bridge.call) as Python strings: data, never Python source.
import { FilesFrom } from "./downloads.js";
import { forgetMemory, keptMemory, memoryKey } from "./memory.js";
import { unpackWheel } from "./wheels.js";

const SITE_PACKAGES = "/lib/python3.12/site-packages"; // Pyodide 0.27's Python 3.12

// Emscripten reports a .wasm it cannot compile only with console.warn, and loadPyodide then never settles:
// watch for it while Python starts.
const FATAL = /instantiation failed|WebAssembly|^Aborted/;

let bridgeCall = null; // the entry's call once Python is ready; null again if Python fails fatally

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

/** loadPyodide, rejected as soon as a fatal start-up error is reported. With the memory kept (a promise) by an
 * earlier start Python is restored from it; without, it starts afresh, ready to make a memory snapshot. */
async function startPyodide(downloads, indexURL, kept) {
  const file = (name) => downloads.bytes(new URL(name, indexURL).href);
  const [mjs, asm] = ["pyodide.mjs", "pyodide.asm.js"].map(file); // asked for at once
  asm.catch(() => {}); // a failure is met below, once pyodide.mjs is imported
  const { loadPyodide } = await importChecked(await mjs);
  await importChecked(await asm); // defines the factory, so loadPyodide does not fetch it
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

// Python remembers the files of each folder on its path (a FileFinder) and looks again only when the folder's
// modification time changes, which writes within one tick can leave the same: once the wheels are in,
// site-packages is forgotten, so that the next import reads it anew. (importlib.invalidate_caches() would do
// it too, but in Python 3.12 it imports importlib.metadata, 0.1 s of a fresh start, and has zipimport read the
// standard library's whole directory again.)
const NEW_FILES_SEEN = `import sys; sys.path_importer_cache.pop("${SITE_PACKAGES}", None)`;

// The extension modules (NumPy's) are WebAssembly libraries that Emscripten's dynamic linker loads into Python's
// memory and function table. Given a handle (its struct dso: 36 bytes of Python's memory), loadDynamicLibrary
// records there where a library went (a flag at +8; the memory base and size, the table base and size at +12 to
// +24; zero at +28 and +32 means "read the file") and, finding the flag set, loads it at those places again. So each
// library is loaded with a handle of its own, and a memory kept after loading them can be restored with its
// libraries: each loaded again where the memory expects it, and its static memory, which loading initialises
// anew, put back as it was kept.
const HANDLE_BYTES = 36;
const LOADING = { loadAsync: true, nodelete: true, allowUndefined: true, global: false }; // as Pyodide loads them

async function loadLibrary(module, path, handle) {
  await module.loadDynamicLibrary(path, { ...LOADING, fs: module.FS }, {}, handle);
  const name = path.split("/").pop(); // as Pyodide's loadDynlib: known by its file name too
  module.LDSO.loadedLibsByName[name] ||= module.LDSO.loadedLibsByName[path];
}

/** Load every extension module among the files (paths), each with a handle of its own. Returns what a restore
 * needs: each library's path and handle, in the order they were loaded. */
async function loadLibraries(pyodide, files) {
  const module = pyodide._module;
  const libraries = [];
  for (const path of files.filter((f) => f.endsWith(".so")).sort()) {
    const handle = module._calloc(HANDLE_BYTES, 1);
    await loadLibrary(module, path, handle);
    libraries.push([path, handle]);
  }
  return libraries;
}

/** The libraries loaded again where the restored memory expects them, their static memory as it was kept. Python's
 * own handles (dlopen's, in its memory) are given their libraries back. */
async function restoreLibraries(pyodide, { memory, libraries, dlopened }) {
  const module = pyodide._module;
  const heap = memory.subarray(new Uint32Array(memory.buffer, memory.byteOffset, 2)[1]); // past the snapshot's header
  for (const [path, handle] of libraries) {
    const [memoryBase, memorySize, tableBase, tableSize] =
      [12, 16, 20, 24].map((at) => module.HEAPU32[(handle + at) >> 2]);
    // The function table must have grown as it did when the memory was made: the library's entries go on from
    // where the table ends.
    if (module.HEAP8[handle + 8] !== 1 || (tableSize && module.wasmTable.length !== tableBase)) {
      throw new Error(`the kept memory does not hold ${path.split("/").pop()} where it says`);
    }
    await loadLibrary(module, path, handle);
    module.HEAP8.set(heap.subarray(memoryBase, memoryBase + memorySize), memoryBase);
  }
  for (const [handle, name] of dlopened) module.LDSO.loadedLibsByHandle[handle] = module.LDSO.loadedLibsByName[name];
}

/** Python's dlopen handles, [handle, library], to be given their libraries back on a restore. */
function dlopenHandles(module) {
  return Object.entries(module.LDSO.loadedLibsByHandle).filter(([handle]) => handle !== "0")
    .map(([handle, dso]) => [Number(handle), dso.name]);
}

/** Unpack the wheels (NumPy, mha_core) into site-packages; returns the paths of their files. */
async function unpackWheels(pyodide, downloads, wheels) {
  const files = [];
  for (const url of wheels) files.push(...await unpackWheel(pyodide.FS, await downloads.bytes(url), SITE_PACKAGES));
  pyodide.runPython(NEW_FILES_SEEN);
  return files;
}

/** Python started with NumPy and mha_core: restored from the memory kept under memoryURL (a promise) if there is
 * one (looked up and read while Pyodide's scripts arrive and are imported; a kept memory that fails is
 * forgotten), else afresh, mha_core imported. Returns (pyodide, what to keep: {memory, libraries, dlopened}, or
 * null). */
async function startPython(downloads, indexURL, wheels, memoryURL) {
  const kept = (async () => keptMemory(await downloads.store, await memoryURL))()
    .catch(() => null); // storage that fails keeps nothing: start afresh
  try {
    const pyodide = await startPyodide(downloads, indexURL, kept.then((k) => k?.memory));
    stepTo("Loading NumPy and mha_core…");
    const files = await unpackWheels(pyodide, downloads, wheels);
    if (await kept) {
      await restoreLibraries(pyodide, await kept);
      return [pyodide, null];
    }
    const libraries = await loadLibraries(pyodide, files);
    pyodide.runPython("import mha_core.bridge");
    const memory = pyodide.makeMemorySnapshot();
    return [pyodide, { memory, libraries, dlopened: dlopenHandles(pyodide._module) }];
  } catch (err) {
    if (await kept) await forgetMemory(await downloads.store, await memoryURL);
    throw err;
  }
}

async function init({ indexURL, files, port, entry, keep }) {
  const t0 = performance.now();
  // Each file is downloaded once, in the downloads worker; Pyodide's own requests get the checked bytes.
  downloads = new FilesFrom(port, files, post);
  self.fetch = downloads.fetch;
  const wheels = Object.keys(files).filter((url) => url.endsWith(".whl"));
  const memoryURL = memoryKey(indexURL, files); // awaited only by what needs it: Pyodide's files are asked for first
  const python = (async () => {
    const [pyodide, kept] = await startPython(downloads, indexURL, wheels, memoryURL);
    bridgeCall = pyodide.pyimport(entry).call;
    return kept;
  })();
  // A file that did not arrive intact is the reason for a failure, whatever else fails because of it.
  const [kept] = await Promise.all([python.catch(async (err) => {
    await downloads.all;
    throw err;
  }), downloads.all]);
  const ms = performance.now() - t0;
  const key = await memoryURL;
  downloads.keep(key, keep ? kept : null); // hashed and stored on the downloads worker's thread
  downloads.forgetOthers([key]);
  return { ms, restored: !kept };
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
