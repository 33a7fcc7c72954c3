// widgets/real_model/model.js and pattern.js's pure part: the model's files as the runtime downloads them, the
// reader's words for a failure (not enough memory said plainly), a head's rows read from the patterns asset.
import assert from "node:assert/strict";
import { test } from "node:test";
import { failure, modelFiles } from "../../../widgets/real_model/model.js";
import { rowsFromBytes } from "../../../widgets/real_model/pattern.js";

test("each file is listed under the widget's folder with its sha256, size and name", () => {
  const data = { dir: "model", files: { "layer-00.gguf": { sha256: "ab", bytes: 12 } } };
  assert.deepEqual(modelFiles(data, "https://example.org/site/assets/widgets/real_model/real_model.js"), {
    "https://example.org/site/assets/widgets/real_model/model/layer-00.gguf": {
      source: "https://example.org/site/assets/widgets/real_model/model/layer-00.gguf", gzip: false, sha256: "ab",
      bytes: 12, name: "layer-00.gguf",
    },
  });
});

test("not enough memory is said plainly, whatever raised it; other failures as they are", () => {
  for (const message of ["MemoryError", "RangeError: Array buffer allocation failed", "Aborted(OOM)",
                         "WebAssembly.Memory.grow(): Maximum memory size exceeded: out of memory"]) {
    assert.match(failure(new Error(message)), /^This device has not enough free memory to run the model/);
  }
  assert.equal(failure(new Error("layer-07.gguf is not the file this site was built with (its sha256 differs)")),
    "The model could not run: layer-07.gguf is not the file this site was built with (its sha256 differs)");
});

test("a head's rows are its lower triangle, a byte a weight, heads one after the other", () => {
  const n = 3;
  const size = (n * (n + 1)) / 2; // 6
  const bytes = new Uint8Array(2 * size);
  bytes.set([255, 51, 204, 0, 102, 153], size); // head 1: rows [1], [0.2, 0.8], [0, 0.4, 0.6]
  assert.deepEqual(rowsFromBytes(bytes, 1, n), [[1], [0.2, 0.8], [0, 0.4, 0.6]]);
  assert.deepEqual(rowsFromBytes(bytes, 0, n), [[0], [0, 0], [0, 0, 0]]);
});
