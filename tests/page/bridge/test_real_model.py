"""The real model live, as the browser runs it, here in CPython: the model's files (split_model's) in a folder,
a text started, advanced a layer a call, its view's scores those of mha_core.llama's whole forward; each head's
pattern; a newer text replaces a run; a long text is cut to 128 tokens and says so; refusals, through the bridge."""
from __future__ import annotations

import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mha_page import bridge
from mha_page.bridge import real_model as live
from mha_core.llama import forward, head_scores, lab, read_gguf, split_model, tokenizer_from_gguf
from mha_page.views import real_model as views
from mha_page.views.real_model import KIND_NAMES, KINDS
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


def load_afresh(monkeypatch, folder) -> None:
    """The live module as a page's Python finds it before its first run: the model's files in folder."""
    monkeypatch.setattr(live, "MODEL_FOLDER", str(folder))
    monkeypatch.setattr(live, "LOADED", {})
    monkeypatch.setattr(live, "RUNS", {})


@pytest.fixture
def loaded(folder, monkeypatch):
    load_afresh(monkeypatch, folder)


@pytest.fixture(scope="module")
def text_run(folder, gguf):
    """(started, view, ids) of TEXT run through all 30 layers once, for the module's tests that read that run (a
    position, the lens, a knock-out of it); its live state stays theirs until the module ends."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        load_afresh(monkeypatch, folder)
        started, view = run_all(TEXT)
        yield started, view, tokenizer_from_gguf(gguf).encode(TEXT)


def run_all(text: str) -> tuple[dict, dict]:
    started = live.real_model_start(text)
    steps = [live.real_model_advance(started["run"]) for _ in range(started["n_layers"])]
    assert [s["layers_done"] for s in steps] == list(range(1, 31))
    assert all(s["view"] is None for s in steps[:-1])
    n = started["n_tokens"]  # the words shown while each layer runs, then none
    assert [started["progress"]] + [s["progress"] for s in steps] == (
        [f"Layer {layer} of 30, {n:,} token{'s' * (n != 1)}\u2026" for layer in range(1, 31)] + [""])
    return started, steps[-1]["view"]


def test_layer_by_layer_the_view_holds_the_whole_forward_s_scores_and_patterns(gguf, text_run):
    started, view, ids = text_run
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

    assert ask("real_model_start", {"text": " "}) == {"ok": False, "error": "The text is empty.", "refused": True}  # its control's name
    assert ask("real_model_advance", {"run": 0})["error"] == "run must be at least 1, got 0."
    assert ask("real_model_pattern", {"run": 1, "layer": 30, "head": 0})["error"] == "layer must be at most 29, got 30."
    assert ask("real_model_pattern", {"run": 1, "layer": 0, "head": 9})["error"] == "head must be at most 8, got 9."
    assert "too long" in ask("real_model_start", {"text": "a" * 20_001})["error"]
    monkeypatch.setattr(live, "MODEL_FOLDER", str(tmp_path))
    monkeypatch.setattr(live, "LOADED", {})
    assert ask("real_model_start", {"text": "Hello"})["error"] == "The model's files are not loaded yet: press Load"


def test_the_view_says_what_the_model_predicts_at_every_token(gguf, text_run):
    """Each token's data-loss is −ln p(token | those before) of mha_core.llama.lab on the whole model; mean-loss is
    their mean; the default position's predictions and every head's attribution are lab's; another position
    and the lens come from their own calls."""
    started, view, ids = text_run
    record = lab.run(gguf, ids)
    expected = lab.predictions(gguf, record)
    rows = view["outputs"]["tokens"]["rows"]
    assert "loss" not in rows[0]["data"]
    shown = np.array([float(r["data"]["loss"]) for r in rows[1:]])
    np.testing.assert_allclose(shown, expected["losses"][1:], atol=1e-4)
    assert float(view["outputs"]["mean-loss"]["value"]) == pytest.approx(shown.mean(), abs=1e-4)
    position = int(view["data"]["position"])
    assert position == len(ids) - 2
    assert_position(view["outputs"], gguf, record, expected, position, ids[position + 1])
    other = live.real_model_position(started["run"], 3)
    assert other["data"]["position"] == "3"
    assert_position(other["outputs"], gguf, record, expected, 3, ids[4])
    last = live.real_model_position(started["run"], len(ids) - 1)["outputs"]  # nothing follows: the top prediction
    assert_position(last, gguf, record, expected, len(ids) - 1, int(expected["top_ids"][-1, 0]))
    lens = live.real_model_lens(started["run"], 3)["outputs"]["lens"]["rows"]
    assert [r["data"]["token-id"] for r in lens] == lab.logit_lens(gguf, record, 3)["top_ids"].tolist()
    assert [r["data"]["layer"] for r in lens] == list(range(-1, 30))
    assert [r["data"]["token-id"] for r in view["outputs"]["lens"]["rows"]] == lab.logit_lens(
        gguf, record, position)["top_ids"].tolist()


def assert_position(outputs, gguf, record, expected, position, target):
    rows = outputs["predictions"]["rows"]
    assert [r["data"]["rank"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["data"]["token-id"] for r in rows] == expected["top_ids"][position].tolist()
    np.testing.assert_allclose([float(r["data"]["probability"]) for r in rows], expected["top_probabilities"][position],
                               atol=1e-4)
    heads = lab.logit_attribution(gguf, record, position, target)["heads"]
    shown = np.array([float(v) for v in outputs["heads"]["cells"]["data"]["logit-attribution"]] if "heads" in outputs
                     else [float(outputs[f"head-{l}-{h}"]["data"]["logit-attribution"]) for l in range(30)
                           for h in range(9)]).reshape(30, 9)  # a position's view: the grid's cells
    np.testing.assert_allclose(shown, heads, atol=1e-4)


def test_a_knock_out_runs_a_layer_a_call_from_its_first_knocked_layer(gguf, text_run):
    started, view, ids = text_run
    knock = live.real_model_knockout_start(started["run"], "l18h6, L20 H1", False, 2)
    assert (knock["first_layer"], knock["layers_done"], knock["view"]) == (18, 18, None)
    steps = [live.real_model_knockout_advance(started["run"], knock["knock"]) for _ in range(12)]
    assert [s["layers_done"] for s in steps] == list(range(19, 31)) and steps[-1]["progress"] == ""
    knocked = steps[-1]["view"]
    expected = lab.predictions(gguf, lab.run(gguf, ids, knocked=[(18, 6), (20, 1)]))
    rows = knocked["outputs"]["tokens"]["rows"]
    shown = np.array([float(r["data"]["loss-knocked"]) for r in rows[1:]])
    np.testing.assert_allclose(shown, expected["losses"][1:], atol=1e-4)
    assert float(knocked["outputs"]["mean-loss-knocked"]["value"]) == pytest.approx(shown.mean(), abs=1e-4)
    assert [r["data"].get("loss") for r in rows] == [r["data"].get("loss") for r in view["outputs"]["tokens"]["rows"]]
    out = [(l, h) for l in range(30) for h in range(9)
           if knocked["outputs"][f"head-{l}-{h}"]["data"]["knocked"] == "true"]
    assert out == [(18, 6), (20, 1)]
    assert [r["data"]["token-id"] for r in knocked["outputs"]["predictions-knocked"]["rows"]] == \
        expected["top_ids"][2].tolist()
    assert "predictions-knocked" in live.real_model_position(started["run"], 5)["outputs"]
    with pytest.raises(ValueError, match="has run all 30 layers"):
        live.real_model_knockout_advance(started["run"], knock["knock"])
    older = live.real_model_knockout_start(started["run"], "", True, 2)  # hide the first token: from layer 0
    assert older["first_layer"] == 0
    newer = live.real_model_knockout_start(started["run"], "", False, 2)  # nothing: at once, the clean losses
    assert newer["view"]["outputs"]["mean-loss-knocked"]["value"] == view["outputs"]["mean-loss"]["value"]
    with pytest.raises(ValueError, match=f"knock-out {older['knock']} is not the one in progress"):
        live.real_model_knockout_advance(started["run"], older["knock"])
    sets = live.real_model_head_set(started["run"], "induction")
    assert sets["heads"] == view["data"]["set-induction"] and sets["control"] == view["data"]["set-induction-control"]


def test_knock_outs_and_positions_refuse_nonsense_through_the_bridge(loaded):
    def ask(fn, args):
        return json.loads(bridge.call(fn, json.dumps(args)))

    started = live.real_model_start("Not finished yet.")
    assert ask("real_model_position", {"run": started["run"], "position": 0})["error"] == (
        f"run {started['run']} has not run all 30 layers yet")
    for _ in range(30):
        live.real_model_advance(started["run"])
    run = started["run"]
    n = started["n_tokens"]
    assert ask("real_model_position", {"run": run, "position": n})["error"] == (
        f"The position must be at most {n - 1} (the text has {n} tokens), got {n}.")  # its control's words
    assert ask("real_model_lens", {"run": run, "position": -1})["error"] == "position must be at least 0, got -1."
    knock = {"run": run, "hide_first": False, "position": 0}
    assert ask("real_model_knockout_start", knock | {"knockout": "L17H3 L18"})["error"] == (
        "Heads to knock out: 'L18' is not a head: write each as L17H3 (layer 17, head 3).")
    assert "layers go from 0 to 29" in ask("real_model_knockout_start", knock | {"knockout": "L30H0"})["error"]
    assert ask("real_model_knockout_start", knock | {"knockout": "", "hide_first": "yes"})["error"] == (
        "hide_first must be true or false, got 'yes'.")
    assert "kind must be one of" in ask("real_model_head_set", {"run": run, "kind": "sink"})["error"]


def test_the_whole_model_written_as_a_cdn_build_writes_it_is_cut_into_split_model_s_files(folder, tmp_path, monkeypatch):
    """A build that takes the model from a CDN writes the GGUF whole (WHOLE_MODEL); the first run cuts it into the
    files the site would have served, byte for byte, and runs on them."""
    (tmp_path / live.WHOLE_MODEL).write_bytes(fetch_model().read_bytes())
    monkeypatch.setattr(live, "MODEL_FOLDER", str(tmp_path))
    monkeypatch.setattr(live, "LOADED", {})
    monkeypatch.setattr(live, "RUNS", {})
    assert live.real_model_start(TEXT)["n_tokens"] > 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in folder.iterdir())
    for path in folder.iterdir():
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


def test_how_many_heads_can_go_a_slice_a_call_is_the_build_s_one_shot_measure(gguf, loaded):
    with threadpool_limits(1):  # a few tokens' matrices: a second BLAS thread on shared cores costs more than it gains
        measured_as_the_build_measures(gguf)


def measured_as_the_build_measures(gguf):
    """The page's button on a short text: a layer's pass of six layers' heads knocked out alone, or their losses,
    a call (each layer's weights unpacked from its file when a pass reaches it: once for six layers' heads), then
    a run of many heads a call, Python's words for each; its answer is
    the build's one-shot measure (knockout_effects of every layer, then removable_heads, on every layer's weights
    unpacked at once), count for count; a newer text drops it."""
    text = "Mr."  # 2 tokens, a loss: the fewest to knock heads out on; 7 heads go, found in 5 runs of many
    started, view = run_all(text)
    assert view["outputs"]["pruning-controls"] == {"hidden": False} and view["outputs"]["pruning-chart"]["hidden"]
    assert "270 runs with one head knocked out, then at most 22 with many" in view["outputs"]["prune-cost"]
    pruning = live.real_model_pruning_start(started["run"])
    assert pruning["progress"] == "Each head knocked out alone: 0 of 270 heads measured\u2026"
    steps = [live.real_model_pruning_advance(pruning["run"])]
    while steps[-1]["view"] is None:
        steps.append(live.real_model_pruning_advance(pruning["run"]))
    words = [step["progress"] for step in steps]
    alone = [w for w in words if w.startswith("Each head knocked out alone")]
    assert list(dict.fromkeys(alone)) == [f"Each head knocked out alone: {9 * k} of 270 heads measured\u2026"
                                          for k in range(31)]  # a layer's pass or a layer's heads measured a call
    assert len(alone) == 30 + 24 + 18 + 12 + 6 + 30 and words[:len(alone)] == alone
    ids = tokenizer_from_gguf(gguf).encode(text)
    weights = lab.unpacked_layers(gguf)
    clean = lab.run(gguf, ids, weights=weights)
    order = lab.removal_order(lab.knockout_effects(gguf, clean, weights))
    found = lab.removable_heads(gguf, ids, order, clean, weights, 0.1, 15)
    together = [f"Heads knocked out together, the least costly first: {k} out, mean loss {v:.2f} nats\u2026"
                for k, v in found["curve"].items() if k]
    assert sorted(words[len(alone):-1]) == sorted(together) and words[-1] == ""
    shown = steps[-1]["view"]["outputs"]
    expected = views.pruning_view(sorted(found["curve"].items()), found["removable"], order,
                                  head_scores(np.stack(clean["patterns"]), ids), button=True)["outputs"]
    assert shown == expected
    assert shown["pruning"]["text"].startswith(f"{found['removable']} of the 270 heads can go")
    with pytest.raises(ValueError, match="has no measure of its heads in progress"):
        live.real_model_pruning_advance(pruning["run"])
    live.real_model_pruning_start(started["run"])
    newer = live.real_model_start("Another text.")
    with pytest.raises(ValueError, match="is not the text in progress"):
        live.real_model_pruning_advance(pruning["run"])
    assert newer["run"] != pruning["run"]
