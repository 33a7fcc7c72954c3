"""The real model live, as the browser runs it, here in CPython: the model's files (split_model's) in a folder,
a text started, advanced a layer a call, its view's scores those of mha_core.llama's whole forward; each head's
pattern; a newer text replaces a run; a long text is cut to 128 tokens and says so; refusals, through the bridge."""
from __future__ import annotations

import json

import numpy as np
import pytest

from mha_core import bridge
from mha_core.bridge import real_model as live
from mha_core.llama import forward, head_scores, read_gguf, split_model, tokenizer_from_gguf
from mha_core.views.real_model import KIND_NAMES, KINDS
from sitebuild.assets import fetch_model

TEXT = "The cat sat on the mat. The cat sat on the"


@pytest.fixture(scope="module")
def gguf():
    return read_gguf(fetch_model())


@pytest.fixture(scope="module")
def folder(gguf, tmp_path_factory):
    folder = tmp_path_factory.mktemp("real-model")
    for name, data in split_model(gguf).items():
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def loaded(folder, monkeypatch):
    monkeypatch.setattr(live, "MODEL_FOLDER", str(folder))
    monkeypatch.setattr(live, "LOADED", {})
    monkeypatch.setattr(live, "RUNS", {})


def run_all(text: str) -> tuple[dict, dict]:
    started = live.real_model_start(text)
    steps = [live.real_model_advance(started["run"]) for _ in range(started["n_layers"])]
    assert [s["layers_done"] for s in steps] == list(range(1, 31))
    assert all(s["view"] is None for s in steps[:-1])
    n = started["n_tokens"]  # the words shown while each layer runs, then none
    assert [started["progress"]] + [s["progress"] for s in steps] == (
        [f"Layer {layer} of 30, {n:,} token{'s' * (n != 1)}\u2026" for layer in range(1, 31)] + [""])
    return started, steps[-1]["view"]


def test_layer_by_layer_the_view_holds_the_whole_forward_s_scores_and_patterns(gguf, loaded):
    started, view = run_all(TEXT)
    ids = tokenizer_from_gguf(gguf).encode(TEXT)
    assert started["n_tokens"] == started["n_given"] == len(ids)
    patterns = forward(gguf, ids)[1]
    expected = head_scores(patterns, ids)
    for kind in KINDS:
        shown = np.array([[float(view["outputs"][f"head-{l}-{h}"]["data"][f"score-{KIND_NAMES[kind]}"])
                           for h in range(9)] for l in range(30)])
        np.testing.assert_allclose(shown, expected[kind], atol=5e-5)
    rows = live.real_model_pattern(started["run"], 18, 6)["rows"]
    assert [len(r) for r in rows] == list(range(1, len(ids) + 1))
    for i, row in enumerate(rows):  # a byte a weight: round(255 · w)
        np.testing.assert_allclose(np.array(row) / 255, patterns[18, 6, i, :i + 1], atol=0.5 / 255 + 1e-6)
    assert [r["text"] for r in view["outputs"]["tokens"]["rows"]][:3] == ["The", " cat", " sat"]


def test_a_newer_text_replaces_the_run_in_progress(loaded):
    first = live.real_model_start("An older text.")
    live.real_model_advance(first["run"])
    second = live.real_model_start("A newer one.")
    with pytest.raises(ValueError, match=f"run {first['run']} is not the text in progress"):
        live.real_model_advance(first["run"])
    assert live.real_model_advance(second["run"])["layers_done"] == 1
    with pytest.raises(ValueError, match="layer 5 has not run yet"):
        live.real_model_pattern(second["run"], 5, 0)


def test_a_long_text_is_cut_to_128_tokens_and_says_so(loaded):
    text = " ".join(f"word{i}" for i in range(150))
    started, view = run_all(text)
    assert started["n_tokens"] == 128 and started["n_given"] > 128
    assert view["data"]["cut"] == "true" and len(view["outputs"]["tokens"]["rows"]) == 128
    assert f"Your text has {started['n_given']:,} tokens; the model ran on its first 128" in view["outputs"]["note"]["text"]


def test_without_the_files_and_with_nonsense_through_the_bridge(tmp_path, monkeypatch, loaded):
    def ask(fn, args):
        return json.loads(bridge.call(fn, json.dumps(args)))

    assert ask("real_model_start", {"text": " "}) == {"ok": False, "error": "text is empty."}
    assert ask("real_model_advance", {"run": 0})["error"] == "run must be at least 1, got 0."
    assert ask("real_model_pattern", {"run": 1, "layer": 30, "head": 0})["error"] == "layer must be at most 29, got 30."
    assert ask("real_model_pattern", {"run": 1, "layer": 0, "head": 9})["error"] == "head must be at most 8, got 9."
    assert "too long" in ask("real_model_start", {"text": "a" * 20_001})["error"]
    monkeypatch.setattr(live, "MODEL_FOLDER", str(tmp_path))
    monkeypatch.setattr(live, "LOADED", {})
    assert ask("real_model_start", {"text": "Hello"})["error"] == "the model's files are not loaded yet: press Load"
