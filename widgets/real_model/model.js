// The real model's files and failures, for real_model.js (no DOM: tested under node --test).

const MEMORY = /MemoryError|out of memory|OOM|allocation failed|Array buffer/i;

/** The reader's words for a failure: not enough memory said plainly, anything else as it is. */
export function failure(error) {
  if (MEMORY.test(error.message)) {
    return "This device has not enough free memory to run the model (about 0.5 GB): the heads shown are the ones computed when the page was built.";
  }
  return `The model could not run: ${error.message}`;
}

/** The model's files as the runtime's download() takes them ({url: {source, gzip, sha256, bytes, name}}), from the
 * page's list of them (data.files: {name: {sha256, bytes}}, under data.dir), relative to base (the widget's folder). */
export function modelFiles(data, base) {
  const files = {};
  for (const [name, f] of Object.entries(data.files)) {
    const url = new URL(`./${data.dir}/${name}`, base).href;
    files[url] = { source: url, gzip: false, sha256: f.sha256, bytes: f.bytes, name };
  }
  return files;
}
