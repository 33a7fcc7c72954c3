// Everything the runtime takes from Pyodide's and Emscripten's internals. Most of it is for one purpose: the memory
// kept for a revisit (memory.js stores it). Pyodide's public memory snapshots cannot hold packages with compiled
// extensions (pyodide/pyodide#5195, #6418), such as NumPy's; Cloudflare's workerd keeps them by preloading the
// libraries and recording their handles, and so does this module. The rest is how worker.js starts Pyodide: the
// files it fetches, the failure it only prints, where packages go, and what Python must forget once they are in.
//
// The contract, as pinned (sitebuild/assets.py's PYODIDE_VERSION; tests/site/test_pyodide_internals.py reads the
// pinned files, records the sha256 of the files it was checked against, and fails the day one of these changes):
//   Pyodide 0.27.7 (its Emscripten's dynamic linker, in pyodide.asm.js; Python 3.12)
//   1. loadPyodide's private options: {_makeSnapshot: true} allows pyodide.makeMemorySnapshot(); {_loadSnapshot:
//      bytes} starts Python from a snapshot so made.
//   2. A snapshot is a header then Python's whole memory: the header's length in bytes is its 32-bit word 1.
//   3. pyodide._module: loadDynamicLibrary(path, flags, localScope, handle), LDSO.loadedLibsByName (by path, and
//      Pyodide's loadDynlib adds the file name), LDSO.loadedLibsByHandle, _calloc, HEAP8, HEAPU32, wasmTable.
//   4. A handle is Emscripten's struct dso in Python's memory: loadDynamicLibrary sets a flag at DSO.loaded and
//      records where the library went at DSO.memoryBase, memorySize, tableBase, tableSize; finding the flag set,
//      it loads the library at those places again. Zero at DSO.data and DSO.dataSize means "read the file".
//      The fields end at DSO.bytes.
//   5. Pyodide loads a library with LOADING's flags.
//   6. loadPyodide fetches pyodide.asm.js only if no global _createPyodideModule is defined: importing that
//      script first (worker.js, from its checked bytes) defines it.
//   7. An error that ends Python for good carries pyodide_fatal_error (isFatal).
//   8. loadPyodide fetches its other files (pyodide.asm.wasm, python_stdlib.zip, pyodide-lock.json) with the
//      global fetch, looked up at each request: a worker that replaces self.fetch first answers them (serveFiles).
//   9. A .wasm that does not compile is reported only by console.warn ("wasm instantiation failed!", then the
//      error), and loadPyodide then never settles; Emscripten's abort prints "Aborted(...)" on stderr
//      (loadWatched watches both).
//  10. Packages go into Python 3.12's site-packages, SITE_PACKAGES (pyodide.mjs: API.sitePackages).
//  11. Python's importlib keeps each folder's finder in sys.path_importer_cache under the folder's path, and lists
//      the folder again only when its modification time changes (newFilesSeen).
// So each library is loaded with a handle of its own, and a memory kept after loading them is restored with its
// libraries: each loaded again where the memory expects it, and its static memory, which loading initialises
// anew, put back as it was kept.
//
// What it buys on the reader's path (bench/kept_memory.py: a warm revisit to the shapes page on localhost, every
// file already in Cache Storage, headless Chromium, four of each in alternating pairs, medians, on a quiet 2-core
// machine):
//   with the kept memory     ready 1.15 s after navigation, Python's start in its worker 0.6 s
//   without it               ready 1.89 s,                  Python's start in its worker 1.3 s
// Python's start is halved: nothing is imported or loaded afresh, NumPy's libraries are only put back in place.
export const PYODIDE_VERSION = "0.27.7";
export const DSO = { loaded: 8, memoryBase: 12, memorySize: 16, tableBase: 20, tableSize: 24, data: 28, dataSize: 32,
  bytes: 36 };
const LOADING = { loadAsync: true, nodelete: true, allowUndefined: true, global: false };
export const SITE_PACKAGES = "/lib/python3.12/site-packages";
const FATAL = /instantiation failed|WebAssembly|^Aborted/; // what console.warn says when a start cannot go on

/** Pyodide's own requests for its files answered by fetch (a function as the global fetch). */
export function serveFiles(fetch) {
  self.fetch = fetch;
}

/** loadPyodide(options), rejected as soon as console.warn reports a start that cannot go on (with the last two
 * lines it printed), where loadPyodide itself would never settle. Pyodide's stderr goes to console.warn. */
export async function loadWatched(loadPyodide, options) {
  const warn = console.warn;
  const lines = [];
  try {
    return await new Promise((resolve, reject) => {
      console.warn = (...args) => {
        warn(...args);
        lines.push(args.join(" "));
        if (FATAL.test(lines.at(-1))) setTimeout(() => reject(new Error(lines.slice(-2).join(": "))), 0);
      };
      loadPyodide({ ...options, stderr: console.warn }).then(resolve, reject);
    });
  } finally {
    console.warn = warn;
  }
}

/** Python lists site-packages again at its next import, so that files just written there are found even within
 * the modification time it last saw. (importlib.invalidate_caches() would do it too, but in Python 3.12 it
 * imports importlib.metadata, 0.1 s of a fresh start, and has zipimport read the standard library again.) */
export function newFilesSeen(pyodide) {
  pyodide.runPython(`import sys; sys.path_importer_cache.pop("${SITE_PACKAGES}", None)`);
}

/** loadPyodide's options to start from memory (a snapshot's bytes), or, without, afresh, ready to make one. */
export const snapshotOptions = (memory) => (memory ? { _loadSnapshot: memory } : { _makeSnapshot: true });

/** Whether err ended Python for good (no call can be answered after it). */
export const isFatal = (err) => Boolean(err?.pyodide_fatal_error);

/** Python's memory now, as a snapshot (a Uint8Array). */
export const makeSnapshot = (pyodide) => pyodide.makeMemorySnapshot();

async function loadLibrary(module, path, handle) {
  await module.loadDynamicLibrary(path, { ...LOADING, fs: module.FS }, {}, handle);
  const name = path.split("/").pop(); // as Pyodide's loadDynlib: known by its file name too
  module.LDSO.loadedLibsByName[name] ||= module.LDSO.loadedLibsByName[path];
}

/** Load every extension module among the files (paths), each with a handle of its own. Returns what a restore
 * needs: each library's path and handle, in the order they were loaded, and Python's own dlopen handles. */
export async function loadLibraries(pyodide, files) {
  const module = pyodide._module;
  const libraries = [];
  for (const path of files.filter((f) => f.endsWith(".so")).sort()) {
    const handle = module._calloc(DSO.bytes, 1);
    await loadLibrary(module, path, handle);
    libraries.push([path, handle]);
  }
  return libraries;
}

/** Python's dlopen handles, [handle, library], to be given their libraries back on a restore. */
export function dlopenHandles(pyodide) {
  return Object.entries(pyodide._module.LDSO.loadedLibsByHandle).filter(([handle]) => handle !== "0")
    .map(([handle, dso]) => [Number(handle), dso.name]);
}

/** The libraries loaded again where the restored memory (the snapshot) expects them, their static memory as it
 * was kept; Python's own dlopen handles given their libraries back. */
export async function restoreLibraries(pyodide, { memory, libraries, dlopened }) {
  const module = pyodide._module;
  const heap = memory.subarray(new Uint32Array(memory.buffer, memory.byteOffset, 2)[1]); // past the header
  const word = (handle, field) => module.HEAPU32[(handle + DSO[field]) >> 2];
  for (const [path, handle] of libraries) {
    const [memoryBase, memorySize, tableBase, tableSize] =
      ["memoryBase", "memorySize", "tableBase", "tableSize"].map((field) => word(handle, field));
    // The function table must have grown as it did when the memory was made: the library's entries go on from
    // where the table ends.
    if (module.HEAP8[handle + DSO.loaded] !== 1 || (tableSize && module.wasmTable.length !== tableBase)) {
      throw new Error(`the kept memory does not hold ${path.split("/").pop()} where it says`);
    }
    await loadLibrary(module, path, handle);
    module.HEAP8.set(heap.subarray(memoryBase, memoryBase + memorySize), memoryBase);
  }
  for (const [handle, name] of dlopened) module.LDSO.loadedLibsByHandle[handle] = module.LDSO.loadedLibsByName[name];
}
