// The files Python is made of, each downloaded once, decompressed, checked by sha256 before use and kept.
//   files: {url: {source, gzip, sha256, bytes}}: url is what Pyodide asks for; source is where the file is
//   (url itself, or a .gz copy); bytes is its size on the wire, for the progress line.
// Downloads runs in a worker of its own (fetcher.js), so that bytes keep arriving while Python computes in the
// Python worker, whose thread a start blocks for seconds; there FilesFrom asks for each file through a port.
// Each checked file is kept in Cache Storage under its url and sha256, so that a Retry (new workers) or a
// later visit reuses what already arrived; what is kept is checked again when it is read. Pyodide gets each
// file as a Response made of its checked bytes. (Handing it Cache Storage's own response did not let the
// browser reuse the WebAssembly it compiled on an earlier visit: a trace showed the whole compile again.)
import { sha256 } from "../shared/sha256.js";

const plainFetch = self.fetch.bind(self); // the network's, before the worker hands Pyodide this one
const STORE = "mha-python";
const REPORT_EVERY_MS = 250;
const TYPES = { wasm: "application/wasm", js: "text/javascript", mjs: "text/javascript", json: "application/json" };

const fileName = (url) => new URL(url).pathname.split("/").pop();
const typeOf = (url) => TYPES[url.split(".").pop()] || "application/octet-stream";

/** A response's body as bytes, counting the bytes that arrive (before decompression) with onBytes(n). */
async function readBody(response, gzip, onBytes) {
  const counted = response.body.pipeThrough(new TransformStream({
    transform(chunk, controller) {
      onBytes(chunk.byteLength);
      controller.enqueue(chunk);
    },
  }));
  const body = gzip ? counted.pipeThrough(new DecompressionStream("gzip")) : counted;
  return new Uint8Array(await new Response(body).arrayBuffer());
}

export async function openStore(name = STORE) {
  try {
    return self.caches ? await caches.open(name) : null;
  } catch {
    return null; // storage refused (e.g. blocked by the reader's settings): download every time
  }
}

const keyOf = (url, file) => `${url}?sha256=${file.sha256}`;

/** The urls of Pyodide's own files, downloaded first; the wheels (NumPy, mha_core) follow while Python starts. */
export const pyodideFiles = (files) => Object.keys(files).filter((url) => !url.endsWith(".whl"));

export class Downloads {
  /** Download every file: the urls in first at once, in parallel, the others once those have arrived (so that
   *  the files needed first get the whole connection). progress() is called as bytes arrive, at most every
   *  250 ms. store: the Cache Storage they are kept in (other files than Python's keep a store of their own,
   *  which Python's start does not clear). */
  constructor(files, progress, first, store = STORE) {
    this.files = files;
    this.progress = progress;
    this.total = Object.values(files).reduce((sum, f) => sum + f.bytes, 0);
    this.arrived = 0;
    this.lastReport = 0;
    this.store = openStore(store);
    this.stored = []; // each file's writing into the store
    this.loads = new Map(first.map((url) => [url, this.load(url)]));
    const firstArrived = Promise.allSettled(this.loads.values());
    for (const url of Object.keys(files)) {
      if (!this.loads.has(url)) this.loads.set(url, firstArrived.then(() => this.load(url)));
    }
    this.all = Promise.all(this.loads.values());
    this.all.catch(() => {}); // reported through the port
  }

  key(url) {
    return keyOf(url, this.files[url]);
  }

  count(n) {
    this.arrived += n;
    const now = performance.now();
    if (now - this.lastReport < REPORT_EVERY_MS && this.arrived < this.total) return;
    this.lastReport = now;
    this.progress();
  }

  async load(url) {
    const file = this.files[url];
    const store = await this.store;
    const kept = await store?.match(this.key(url));
    if (kept) {
      const bytes = new Uint8Array(await kept.arrayBuffer());
      if ((await sha256(bytes)) === file.sha256) {
        this.count(file.bytes);
        return bytes;
      }
      await store.delete(this.key(url));
    }
    const bytes = await this.download(url, file);
    const response = new Response(bytes, { headers: { "Content-Type": typeOf(url) } });
    // not waited for by the start; a full store only costs a later download
    if (store) this.stored.push(store.put(this.key(url), response).catch(() => {}));
    return bytes;
  }

  async download(url, file) {
    const name = fileName(url);
    const response = await plainFetch(file.source, { cache: "no-store" });
    if (!response.ok) throw new Error(`${fileName(file.source)}: HTTP ${response.status}`);
    let arrived = 0;
    let bytes;
    try {
      bytes = await readBody(response, file.gzip, (n) => {
        arrived += n;
        this.count(n);
      });
    } catch (err) {
      this.count(-arrived);
      throw new Error(`${name} could not be read: ${err.message}`);
    }
    if ((await sha256(bytes)) !== file.sha256) {
      throw new Error(`${name} is not the file this site was built with (its sha256 differs)`);
    }
    return bytes;
  }

  /** Drop what the store keeps that is not one of these files (an older build's). */
  async forgetOthers() {
    const store = await this.store;
    if (!store) return;
    const wanted = new Set(Object.keys(this.files).map((url) => this.key(url)));
    for (const request of await store.keys()) if (!wanted.has(request.url)) await store.delete(request);
  }
}

/** The Python worker's side: the checked bytes of each file, asked of Downloads (in its worker) through port. */
export class FilesFrom {
  /** progress() is called whenever Python starts or stops waiting for a file. */
  constructor(port, files, progress) {
    this.port = port;
    this.files = files;
    this.progress = progress;
    this.waiting = 0; // how many of Python's requests wait for a file that has not arrived
    this.store = openStore();
    this.asked = new Map(); // url -> {promise, resolve, reject}
    this.all = new Promise((resolve, reject) => (this.settleAll = { resolve, reject }));
    this.all.catch(() => {}); // awaited by the worker
    port.onmessage = ({ data }) => this.receive(data);
    this.fetch = this.fetch.bind(this);
  }

  receive({ url, bytes, error, all }) {
    if (all !== undefined) return all === true ? this.settleAll.resolve() : this.settleAll.reject(new Error(all));
    const asked = this.asked.get(url);
    if (error) asked.reject(new Error(error));
    else asked.resolve(bytes);
  }

  ask(url) {
    if (!this.asked.has(url)) {
      const asked = {};
      asked.promise = new Promise((resolve, reject) => Object.assign(asked, { resolve, reject }));
      this.asked.set(url, asked);
      this.port.postMessage({ url });
    }
    return this.asked.get(url).promise;
  }

  /** The checked bytes of url, one of the files (counted in waiting until there). */
  async bytes(url) {
    this.waiting++;
    this.progress();
    try {
      return await this.ask(url);
    } finally {
      this.waiting--;
      this.progress();
    }
  }

  /** fetch() for Pyodide: its files come from Downloads, anything else from the network as usual. */
  async fetch(input, init) {
    const url = new URL(input instanceof Request ? input.url : input, self.location).href;
    if (!(url in this.files)) return plainFetch(input, init);
    return new Response(await this.bytes(url), { headers: { "Content-Type": typeOf(url) } });
  }

  /** Keep Python's memory ({memory: a Uint8Array, handed over, libraries, dlopened}, memory.js; null: nothing
   *  to keep): Downloads' worker checks and stores it, so that hashing and writing 30 MB delays no answer of
   *  Python's, then tells the page once every file and the memory are kept. */
  keep(key, kept) {
    this.port.postMessage({ keep: key, kept }, kept ? [kept.memory.buffer] : []);
  }

  /** Drop kept files that are not this site's (an older build's) nor in also, once Python has started. */
  async forgetOthers(also = []) {
    const store = await this.store;
    if (!store) return;
    const wanted = new Set([...Object.keys(this.files).map((url) => keyOf(url, this.files[url])), ...also]);
    for (const request of await store.keys()) if (!wanted.has(request.url)) await store.delete(request);
  }
}
