// widgets/runtime/memory.js: Python's memory kept for a revisit, without its pages of zeros, checked by sha256.
// Kept in, and read from, a store as Cache Storage's (match, put, delete by key), here in memory.
import assert from "node:assert/strict";
import { test } from "node:test";

globalThis.self ??= globalThis; // downloads.js, which memory.js imports, takes a worker's fetch from self
const { keepMemory, keptMemory, laidOut, memoryKey } = await import("../../../widgets/runtime/memory.js");

class Store {
  entries = new Map();
  async match(key) {
    return this.entries.get(key)?.clone();
  }
  async put(key, response) {
    this.entries.set(key, response);
  }
  async delete(key) {
    return this.entries.delete(key);
  }
}

const PAGE = 4096;
const KEY = "https://example.org/pyodide/python-memory";
const LIBRARIES = { libraries: [["/lib/a.so", 1024]], dlopened: [[3, "/lib/a.so"]] };

/** A memory of pages: each page's fill byte (0: a page of zeros), then tail extra bytes of fill. */
function memory(fills, tail = 0, tailFill = 0) {
  const bytes = new Uint8Array(fills.length * PAGE + tail);
  fills.forEach((fill, page) => bytes.fill(fill, page * PAGE, (page + 1) * PAGE));
  bytes.fill(tailFill, fills.length * PAGE);
  bytes[5] = fills[0] ? 9 : 0; // not every byte of a page alike
  return bytes;
}

test("a memory comes back as it was kept, with its libraries, its pages of zeros left out of the store", async () => {
  for (const [fills, tail, tailFill] of [[[1, 0, 0, 2, 0], 0, 0], [[0, 0, 3], 3, 7], [[0, 0], 2, 0], [[5], 4096, 0]]) {
    const store = new Store();
    const original = memory(fills, tail, tailFill);
    await keepMemory(store, KEY, { memory: original, ...LIBRARIES });
    const stored = new Uint8Array(await (await store.match(KEY)).arrayBuffer());
    const nonZero = fills.filter(Boolean).length * PAGE + (tailFill ? tail : 0);
    assert.ok(stored.length < nonZero + 8 + 4 * (fills.length + 1) + 1, `${stored.length} bytes kept`);
    const kept = await keptMemory(store, KEY);
    assert.deepEqual(kept.memory, original, JSON.stringify([fills, tail, tailFill]));
    assert.deepEqual({ libraries: kept.libraries, dlopened: kept.dlopened }, LIBRARIES);
  }
});

test("laidOut leaves out exactly the pages of zeros, and says which it kept", () => {
  const kept = laidOut(memory([1, 0, 2, 0]));
  const [length, n, ...pages] = new Uint32Array(kept.buffer, 0, 4);
  assert.deepEqual([length, n, ...pages], [4 * PAGE, 2, 0, 2]);
  assert.equal(kept.length, 16 + 2 * PAGE);
});

test("a kept memory that is not intact is not used, and is forgotten", async () => {
  const store = new Store();
  await keepMemory(store, KEY, { memory: memory([1, 2]), ...LIBRARIES });
  const { headers } = await store.match(KEY);
  const bytes = new Uint8Array(await (await store.match(KEY)).arrayBuffer());
  bytes[bytes.length - 1] ^= 1;
  await store.put(KEY, new Response(bytes, { headers }));
  assert.equal(await keptMemory(store, KEY), null);
  assert.equal(await store.match(KEY), undefined);
});

test("no store, or nothing kept under the key: no memory", async () => {
  assert.equal(await keptMemory(null, KEY), null);
  assert.equal(await keptMemory(new Store(), KEY), null);
});

test("the key names every file and its sha256: another file, or another sha256, another key", async () => {
  const files = { "https://x/a.wasm": { sha256: "aa" }, "https://x/b.whl": { sha256: "bb" } };
  const key = await memoryKey("https://x/pyodide/", files);
  assert.match(key, /^https:\/\/x\/pyodide\/python-memory\?layout=without-zero-pages-4096&files=[0-9a-f]{64}$/);
  assert.equal(await memoryKey("https://x/pyodide/", { ...files }), key);
  assert.notEqual(await memoryKey("https://x/pyodide/", { ...files, "https://x/b.whl": { sha256: "bc" } }), key);
  assert.notEqual(await memoryKey("https://x/pyodide/", { "https://x/a.wasm": { sha256: "aa" } }), key);
});
