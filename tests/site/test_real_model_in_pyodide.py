"""mha_core.llama runs in the browser's Python: Pyodide 0.27.7 and its NumPy 2.0.2 (no BLAS), run in Node (the same
WebAssembly engine as Chromium's), read the model's GGUF from its bytes, tokenize, run the 30 layers and give the
tokens, patterns and logits CPython gives, in float32; and mha_core.llama.lab's numbers as CPython's."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import mha_core.llama as llama
from sitebuild import ROOT, assets, node

TEXT = "Heads of a real model, in the browser's own Python."

RUN = """
import path from "node:path";
import { pathToFileURL } from "node:url";
const [pyodideDir, ...mounts] = process.argv.slice(2);
const indexURL = `${path.resolve(pyodideDir)}/`;
const { loadPyodide } = await import(pathToFileURL(`${indexURL}pyodide.mjs`).href);
const pyodide = await loadPyodide({ indexURL });
await pyodide.loadPackage("numpy", { messageCallback: () => {} });
for (const mount of mounts) {
  const [dir, at] = mount.split("=");
  pyodide.FS.mkdir(at);
  pyodide.FS.mount(pyodide.FS.filesystems.NODEFS, { root: dir }, at);
}
let source = "";
for await (const chunk of process.stdin) source += chunk;
process.stdout.write(pyodide.runPython(source));
"""

CHECK = """
import json, sys
import numpy as np
sys.path.insert(0, "/src")
import mha_core.llama as llama
from mha_core.attention import NO_BLAS

with open("/model/MODEL", "rb") as f:
    model = llama.read_gguf(f.read())  # bytes, as a browser has them
ids = llama.tokenizer_from_gguf(model).encode(TEXT)
logits, patterns = llama.forward(model, ids)
found = {"no_blas": NO_BLAS, "numpy": np.__version__, "ids": ids, "dtypes": [str(logits.dtype), str(patterns.dtype)],
         "logits": float(np.abs(logits - np.load("/expected/logits.npy")).max()),
         "patterns": float(np.abs(patterns - np.load("/expected/patterns.npy")).max())}
"""


LAB = """
import time
ids = IDS
seconds = {}
start = time.perf_counter()
clean = llama.run(model, ids)
seconds["forward"] = time.perf_counter() - start
start = time.perf_counter()
predicted = llama.predictions(model, clean)
seconds["predictions"] = time.perf_counter() - start
start = time.perf_counter()
knocked = llama.predictions(model, llama.run(model, ids, knocked=KNOCKED, clean=clean))
seconds["knock-out"] = time.perf_counter() - start
start = time.perf_counter()
attribution = llama.logit_attribution(model, clean, POSITION - 3, ids[POSITION - 2])
seconds["attribution"] = time.perf_counter() - start
start = time.perf_counter()
lens = llama.logit_lens(model, clean, POSITION - 3)
seconds["lens"] = time.perf_counter() - start
found["lab"] = {"losses": predicted["losses"][1:].tolist(), "top_ids": predicted["top_ids"].tolist(),
                "knocked": knocked["losses"][1:].tolist(), "heads": attribution["heads"].tolist(),
                "lens": lens["top_ids"].tolist(), "seconds": seconds}
json.dumps(found)
"""


def test_the_model_and_its_laboratory_in_pyodide_give_what_cpython_gives(tmp_path):
    """One Pyodide: the forward's tokens, patterns and logits; then the laboratory's losses, predictions, a
    knock-out restarted from the clean run, attribution and the lens (float32 sums in another order: a loss
    within 1e-3, a head's share within 1e-3)."""
    model_path = assets.fetch_model()
    model = llama.read_gguf(model_path)
    tokenizer = llama.tokenizer_from_gguf(model)
    ids = tokenizer.encode(TEXT)
    logits, patterns = llama.forward(model, ids)
    np.save(tmp_path / "logits.npy", logits)
    np.save(tmp_path / "patterns.npy", patterns)
    lab_ids = tokenizer.encode(TEXT + TEXT)
    knocked, position = [[17, 3], [18, 6]], len(lab_ids) - 2
    script = tmp_path / "run.mjs"
    script.write_text(RUN, encoding="utf-8")
    mounts = {ROOT: "/src", model_path.resolve().parent: "/model", tmp_path: "/expected"}
    check = CHECK.replace("MODEL", model_path.name).replace("TEXT", json.dumps(TEXT)) + (
        LAB.replace("IDS", json.dumps(lab_ids)).replace("KNOCKED", json.dumps(knocked))
        .replace("POSITION", str(position)))
    out = node(script, str(assets.fetch_pyodide()), *(f"{Path(d).resolve()}={at}" for d, at in mounts.items()),
               stdin=check, doing="running mha_core.llama in Pyodide")
    found = json.loads(out.strip().splitlines()[-1])
    assert found["no_blas"] and found["numpy"] == "2.0.2"
    assert found["ids"] == ids and found["dtypes"] == ["float32", "float32"]
    assert found["patterns"] < 1e-4 and found["logits"] < 2e-3  # float32 sums in another order: test_model.py

    found = found["lab"]
    print("Pyodide, Node, this host:", len(lab_ids), "tokens,", {k: round(v, 2) for k, v in found["seconds"].items()})
    clean = llama.run(model, lab_ids)
    predicted = llama.predictions(model, clean)
    np.testing.assert_allclose(found["losses"], predicted["losses"][1:], atol=1e-3)
    assert found["top_ids"] == predicted["top_ids"].tolist()
    expected = llama.predictions(model, llama.run(model, lab_ids, knocked=knocked, clean=clean))["losses"][1:]
    np.testing.assert_allclose(found["knocked"], expected, atol=1e-3)
    heads = llama.logit_attribution(model, clean, position - 3, lab_ids[position - 2])["heads"]
    np.testing.assert_allclose(found["heads"], heads, atol=1e-3)
    assert found["lens"] == llama.logit_lens(model, clean, position - 3)["top_ids"].tolist()
