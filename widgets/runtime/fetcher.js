// The worker that downloads Python's files (downloads.js), on a thread of its own: bytes keep arriving while
// the Python worker's thread is busy starting Python.
// In:  {files, port}: port is the Python worker's; it asks {url} and is answered
//      {url, bytes} or {url, error}, and told {all: true} once every file arrived intact, or {all: reason};
//      it also sends {keep: key, kept} once Python has started: Python's memory, to be kept (memory.js), or null.
// Out: {type: "bytes", arrived, total} to the page as bytes arrive (at most every 250 ms); {type: "kept"} once
//      every file and the memory are kept in Cache Storage (another Python started then downloads nothing).
import { Downloads, pyodideFiles } from "./downloads.js";
import { keepMemory } from "./memory.js";

self.onmessage = ({ data: { files, port } }) => {
  const downloads = new Downloads(files, () => {
    postMessage({ type: "bytes", arrived: downloads.arrived, total: downloads.total });
  }, pyodideFiles(files));
  port.onmessage = async ({ data: { url, keep, kept } }) => {
    if (keep) {
      if (kept) await keepMemory(await downloads.store, keep, kept).catch(() => {});
      await Promise.all(downloads.stored);
      return postMessage({ type: "kept" });
    }
    try {
      const bytes = await downloads.loads.get(url); // asked once per url: handed over, not copied
      port.postMessage({ url, bytes }, [bytes.buffer]);
    } catch (err) {
      port.postMessage({ url, error: err.message });
    }
  };
  downloads.all.then(() => port.postMessage({ all: true }), (err) => port.postMessage({ all: err.message }));
};
