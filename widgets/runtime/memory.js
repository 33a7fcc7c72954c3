// Python's memory once NumPy and mha_core are imported (Pyodide's memory snapshot, about 30 MB), kept in the same
// Cache Storage as the files, so that a later visit restores it instead of starting Python again. It is kept as
// it is: read back gzipped it took 0.16 s to unpack, whole 0.04 s to read; gzipping it took 0.6 s after each start.
// With it go the libraries loaded into it (worker.js): [path, handle] each, and Python's dlopen handles.
// Its key names the sha256 of every file the start is made of: a memory is restored only with the very files it
// was made with. Its own sha256 travels with it and is checked before it is used.
import { openStore, sha256 } from "./downloads.js";

const CHECKED = "X-Content-SHA256";
const LIBRARIES = "X-Python-Libraries";

/** The Cache Storage key of the memory made from files ({url: {sha256}}): beside Pyodide's, under indexURL. */
export async function memoryKey(indexURL, files) {
  const made = Object.keys(files).sort().map((url) => `${url} ${files[url].sha256}`).join("\n");
  return new URL(`python-memory?files=${await sha256(new TextEncoder().encode(made))}`, indexURL).href;
}

/** The memory kept under key, checked, as {memory, libraries, dlopened}; or null (none, or not intact: then it
 * is deleted). */
export async function keptMemory(store, key) {
  const kept = await store?.match(key);
  if (!kept) return null;
  const memory = new Uint8Array(await kept.arrayBuffer());
  if ((await sha256(memory)) === kept.headers.get(CHECKED)) {
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
  const headers = { "Content-Type": "application/octet-stream", [CHECKED]: await sha256(memory),
                    [LIBRARIES]: JSON.stringify({ libraries, dlopened }) };
  await store.put(key, new Response(memory, { headers }));
}

export async function forgetMemory(store, key) {
  await store?.delete(key).catch(() => {});
}
