"""bridge.call: the browser's one entry point. JSON in, JSON out, a whitelist, never an exception."""

import json

import numpy as np
import pytest

from mha_core import bridge, head_patterns, shape_report


def call(fn, args):
    answer = bridge.call(fn, args if isinstance(args, str) else json.dumps(args))
    assert isinstance(answer, str)
    return json.loads(answer)


def test_whitelist():
    assert set(bridge.FUNCTIONS) == {"check_config", "shape_report", "param_count", "presets",
                                    "head_patterns", "head_weights", "worked_example", "memory_steps", "one_vs_many",
                                    "training_start", "training_advance", "training_stop", "training_evaluate"}


def test_shape_report_round_trip():
    answer = call("shape_report", {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2})
    assert answer["ok"] is True
    assert answer["result"] == json.loads(json.dumps(shape_report(512, 8, 10, 2)))


def test_invalid_config_is_a_result_not_an_error():
    answer = call("shape_report", {"d_model": 512, "n_heads": 6, "seq_len": 10, "batch": 2})
    assert answer["ok"] is True and answer["result"]["ok"] is False
    assert answer["result"]["check"]["suggestions"]["n_heads"] == [4, 8]
    answer = call("check_config", {"d_model": 512, "n_heads": 6, "n_kv_heads": None})
    assert answer["result"]["message"].startswith("d_model=512 is not divisible by n_heads=6")


def test_param_count_and_presets():
    assert call("param_count", {"d_model": 768, "n_heads": 12}) == {"ok": True, "result": 2_362_368}
    answer = call("param_count", {"d_model": 512, "n_heads": 6})
    assert answer["ok"] is False and "not divisible" in answer["error"]
    presets = call("presets", "")["result"]
    assert presets[0]["key"] == "transformer-base" and all("source" in p for p in presets)
    assert call("presets", "null")["ok"] and call("presets", "{}")["ok"]


def test_head_patterns_become_nested_lists_of_full_floats():
    text = "The cat sat. The cat"
    answer = call("head_patterns", {"text_or_tokens": text, "ablate": ["previous_token"]})
    assert answer["ok"]
    result, direct = answer["result"], head_patterns(text, ablate=("previous_token",))
    assert result["tokens"] == direct["tokens"]
    for kind, pattern in direct["heads"].items():
        assert result["heads"][kind] == pattern.tolist()  # not rounded
    assert result["info"]["induction"]["explanation"]


def test_head_weights_serialise():
    result = call("head_weights", {"text_or_tokens": "a b a b"})["result"]
    assert np.array(result["heads"]["induction"]["W_K"]).shape[0] == len(result["features"])
    assert np.array(result["x"]).shape == (4, len(result["features"]))


@pytest.mark.parametrize("fn, args, words", [
    ("eval", {}, "unknown function 'eval'"),
    ("__import__('os').system('true')", {}, "unknown function"),
    ("FUNCTIONS", {}, "unknown function"),
    (None, {}, "unknown function"),
    ("shape_report", "{not json", "not valid JSON"),
    ("shape_report", "[512, 8]", "must be a JSON object"),
    ("shape_report", {"d_model": 512}, "missing a required argument"),
    ("shape_report", {"d_model": 512, "n_heads": 8, "seq_len": 2, "batch": 1, "evil": 1}, "unexpected keyword"),
    ("head_patterns", {"text_or_tokens": "   "}, "text is empty"),
    ("head_patterns", {"text_or_tokens": "a b", "ablate": ["averaged"]}, "unknown head kind in ablate"),
    ("param_count", {"d_model": True, "n_heads": 8}, "whole number"),
])
def test_errors_come_back_as_json(fn, args, words):
    answer = bridge.call(fn, args if isinstance(args, str) else json.dumps(args))
    answer = json.loads(answer)
    assert answer["ok"] is False and words in answer["error"]


def test_non_string_arguments_json():
    assert json.loads(bridge.call("presets", 5))["ok"] is False


def test_a_bug_is_reported_not_raised(monkeypatch):
    def broken():
        raise RuntimeError("boom")
    monkeypatch.setitem(bridge.FUNCTIONS, "broken", broken)
    answer = json.loads(bridge.call("broken", "{}"))
    assert answer == {"ok": False, "error": "internal error in broken: RuntimeError: boom"}


def test_nan_cannot_leak_into_json(monkeypatch):
    monkeypatch.setitem(bridge.FUNCTIONS, "nan", lambda: np.array([np.nan]))
    answer = json.loads(bridge.call("nan", "{}"))
    assert answer["ok"] is False and "JSON" in answer["error"]


def test_unicode_text_round_trips():
    text = "שלום 😀 שלום"
    result = call("head_patterns", {"text_or_tokens": text})["result"]
    assert result["tokens"] == ["שלום", "😀", "שלום"]
