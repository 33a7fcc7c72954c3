// Python's memory once NumPy and mha_core are imported (Pyodide's memory snapshot, about 30 MB), kept in the same
// Cache Storage as the files, so that a later visit restores it instead of starting Python again. It is kept
// without its pages of zeros, a third of it (laidOut below), and not compressed: read back gzipped it took
// 0.16 s to unpack, whole 0.04 s to read; gzipping it took 0.6 s after each start.
// With it go the libraries loaded into it (pyodide_internals.js): [path, handle] each, and Python's dlopen handles.
// Its key names the layout and the sha256 of every file the start is made of: a memory is restored only with the
// very files it was made with. Its own sha256 (of what is kept) travels with it and is checked before it is used.
import { sha256 } from "../shared/sha256.js";
import { openStore } from "./downloads.js";

const CHECKED = "X-Content-SHA256";
const LIBRARIES = "X-Python-Libraries";
const PAGE = 4096; // bytes
const LAYOUT = `without-zero-pages-${PAGE}`;

/** The Cache Storage key of the memory made from files ({url: {sha256}}): beside Pyodide's, under indexURL. */
export async function memoryKey(indexURL, files) {
  const made = Object.keys(files).sort().map((url) => `${url} ${files[url].sha256}`).join("\n");
  return new URL(`python-memory?layout=${LAYOUT}&files=${await sha256(new TextEncoder().encode(made))}`, indexURL).href;
}

const pageBytes = (length, page) => Math.min(PAGE, length - page * PAGE);

/** memory (a Uint8Array at a 4-byte offset) without its pages of zeros: the 32-bit words [memory's length, n,
 * the n pages kept, in order], then those pages' bytes. */
export function laidOut(memory) {
  const words = new Uint32Array(memory.buffer, memory.byteOffset, memory.length >> 2);
  const tailIsZero = memory.subarray(words.length * 4).every((b) => b === 0); // the last 0-3 bytes
  const tailPage = Math.floor((words.length * 4) / PAGE);
  const isZero = (page) => {
    const end = Math.min((page + 1) * PAGE / 4, words.length);
    for (let i = page * PAGE / 4; i < end; i++) if (words[i] !== 0) return false;
    return page !== tailPage || tailIsZero;
  };
  const pages = [];
  for (let page = 0; page * PAGE < memory.length; page++) if (!isZero(page)) pages.push(page);
  const header = Uint32Array.from([memory.length, pages.length, ...pages]); // not spread into a call: no limit
  const kept = new Uint8Array(header.byteLength + pages.reduce((n, page) => n + pageBytes(memory.length, page), 0));
  kept.set(new Uint8Array(header.buffer));
  let at = header.byteLength;
  for (const page of pages) {
    kept.set(memory.subarray(page * PAGE, page * PAGE + PAGE), at);
    at += pageBytes(memory.length, page);
  }
  return kept;
}

/** The memory laid out in kept (laidOut's), its pages of zeros back; null if kept is not laid out so. */
function withZeroPages(kept) {
  if (kept.length < 8 || kept.byteOffset % 4) return null;
  const [length, n] = new Uint32Array(kept.buffer, kept.byteOffset, 2);
  if (kept.length < 8 + 4 * n) return null;
  const pages = new Uint32Array(kept.buffer, kept.byteOffset + 8, n);
  let bytes = 8 + 4 * n;
  for (const [i, page] of pages.entries()) {
    if (page * PAGE >= length || (i && page <= pages[i - 1])) return null;
    bytes += pageBytes(length, page);
  }
  if (bytes !== kept.length) return null;
  const memory = new Uint8Array(length);
  let at = 8 + 4 * n;
  for (const page of pages) {
    memory.set(kept.subarray(at, at + pageBytes(length, page)), page * PAGE);
    at += pageBytes(length, page);
  }
  return memory;
}

/** The memory kept under key, checked, as {memory, libraries, dlopened}; or null (none, or not intact: then it
 * is deleted). */
export async function keptMemory(store, key) {
  const kept = await store?.match(key);
  if (!kept) return null;
  const bytes = new Uint8Array(await kept.arrayBuffer());
  const memory = (await sha256(bytes)) === kept.headers.get(CHECKED) && withZeroPages(bytes);
  if (memory) {
    const { libraries, dlopened } = JSON.parse(kept.headers.get(LIBRARIES) || "{}");
    if (Array.isArray(libraries) && Array.isArray(dlopened)) return { memory, libraries, dlopened };
  }
  await forgetMemory(store, key);
  return null;
}

/** Whether a memory made from these files is kept (then so is every file it was made from, unless the browser
 * evicted some): a start that downloads nothing. */
export async function memoryKept(indexURL, files) {
  const store = await openStore();
  return Boolean(await store?.match(await memoryKey(indexURL, files)));
}

/** Keep {memory, libraries, dlopened} under key (not waited for by the start: a full store only costs a slower
 * later start). */
export async function keepMemory(store, key, { memory, libraries, dlopened }) {
  if (!store || !memory) return;
  const kept = laidOut(memory);
  const headers = { "Content-Type": "application/octet-stream", [CHECKED]: await sha256(kept),
                    [LIBRARIES]: JSON.stringify({ libraries, dlopened }) };
  await store.put(key, new Response(kept, { headers }));
}

export async function forgetMemory(store, key) {
  await store?.delete(key).catch(() => {});
}
