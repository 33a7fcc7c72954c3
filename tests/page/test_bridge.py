"""bridge.call: the browser's one entry point. JSON in, JSON out, a whitelist, every argument checked against its
declaration (the field named, the reason given), never an exception."""

import inspect
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mha_core import LIMITS, head_patterns, head_weights
from mha_page import bridge
from mha_page.views.shapes import shapes_view
from mha_page.bridge import declare


def call(fn, args):
    answer = bridge.call(fn, args if isinstance(args, str) else json.dumps(args))
    assert isinstance(answer, str)
    return json.loads(answer)


def test_whitelist():
    assert set(bridge.FUNCTIONS) == {"check_config", "shapes_view", "param_count", "presets",
                                    "heads_view", "heads_weights_view", "worked_view", "memory_view", "one_vs_many_view",
                                    "training_start", "training_advance", "training_stop", "training_evaluate",
                                    "circuits_at", "circuits_over_training", "circuits_run_view", "real_model_start",
                                    "real_model_advance", "real_model_pattern", "real_model_position", "real_model_lens",
                                    "real_model_knockout_start", "real_model_knockout_advance", "real_model_head_set",
                                    "tiling_view", "ready_message"}


def test_shapes_view_round_trip():
    answer = call("shapes_view", {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2})
    assert answer["ok"] is True
    assert answer["result"] == json.loads(json.dumps(shapes_view(512, 8, 10, 2)))


def test_invalid_config_is_a_result_not_an_error():
    answer = call("shapes_view", {"d_model": 512, "n_heads": 6, "seq_len": 10, "batch": 2})
    assert answer["ok"] is True and answer["result"]["outputs"]["check"]["data"]["ok"] == "false"
    suggested = [row["outputs"]["suggestion"]["data"] for row in answer["result"]["outputs"]["suggestions"]["rows"]]
    assert [s["value"] for s in suggested if s["name"] == "n_heads"] == ["4", "8"]
    answer = call("check_config", {"d_model": 512, "n_heads": 6, "n_kv_heads": None})
    assert answer["result"]["message"].startswith("d_model=512 is not divisible by n_heads=6")


def test_param_count_and_presets():
    assert call("param_count", {"d_model": 768, "n_heads": 12}) == {"ok": True, "result": 2_362_368}
    answer = call("param_count", {"d_model": 512, "n_heads": 6})
    assert answer["ok"] is False and "not divisible" in answer["error"]
    presets = call("presets", "")["result"]
    assert presets[0]["key"] == "transformer-base" and all("source" in p for p in presets)
    assert call("presets", "null")["ok"] and call("presets", "{}")["ok"]


RAW = {"head_patterns": head_patterns, "head_weights": head_weights}  # functions that answer arrays


def test_arrays_become_nested_lists_of_full_floats():
    text = "The cat sat. The cat"
    args = {"text_or_tokens": text, "ablate": ["previous_token"]}
    answer = json.loads(bridge.call("head_patterns", json.dumps(args), functions=RAW))
    assert answer["ok"]
    result, direct = answer["result"], head_patterns(text, ablate=("previous_token",))
    assert result["tokens"] == direct["tokens"]
    for kind, pattern in direct["heads"].items():
        assert result["heads"][kind] == pattern.tolist()  # not rounded


def test_head_weights_serialise():
    result = json.loads(bridge.call("head_weights", json.dumps({"text_or_tokens": "a b a b"}), functions=RAW))["result"]
    assert np.array(result["heads"]["induction"]["W_K"]).shape[0] == len(result["features"])
    assert np.array(result["x"]).shape == (4, len(result["features"]))


@pytest.mark.parametrize("fn, args, words", [
    ("eval", {}, "unknown function 'eval'"),
    ("__import__('os').system('true')", {}, "unknown function"),
    ("FUNCTIONS", {}, "unknown function"),
    (None, {}, "unknown function"),
    ("shapes_view", "{not json", "not valid JSON"),
    ("shapes_view", "[512, 8]", "must be a JSON object"),
    ("shapes_view", {"d_model": 512}, "missing a required argument"),
    ("shapes_view", {"d_model": 512, "n_heads": 8, "seq_len": 2, "batch": 1, "evil": 1}, "unexpected keyword"),
    ("heads_view", {"text_or_tokens": "   "}, "Your sentence is empty."),
    ("heads_view", {"text_or_tokens": "a b", "ablate": ["averaged"]}, "ablate[0] must be one of previous_token"),
    ("param_count", {"d_model": True, "n_heads": 8}, "d_model must be a whole number, got True."),
])
def test_errors_come_back_as_json(fn, args, words):
    answer = bridge.call(fn, args if isinstance(args, str) else json.dumps(args))
    answer = json.loads(answer)
    assert answer["ok"] is False and words in answer["error"]


def test_non_string_arguments_json():
    assert json.loads(bridge.call("presets", 5)) == {"ok": False, "refused": False,
                                                     "error": "arguments are not valid JSON: the JSON object must be str, bytes or bytearray, not int"}


def test_a_bug_is_reported_not_raised(monkeypatch):
    def broken():
        raise RuntimeError("boom")
    monkeypatch.setitem(bridge.FUNCTIONS, "broken", declare(broken))
    answer = json.loads(bridge.call("broken", "{}"))
    assert answer == {"ok": False, "error": "internal error in broken: RuntimeError: boom", "refused": False}


def test_nan_cannot_leak_into_json(monkeypatch):
    monkeypatch.setitem(bridge.FUNCTIONS, "nan", declare(lambda: np.array([np.nan])))
    answer = json.loads(bridge.call("nan", "{}"))
    assert answer["ok"] is False and "JSON" in answer["error"]


def test_unicode_text_round_trips():
    text = "שלום 😀 שלום"
    result = call("heads_view", {"text_or_tokens": text})["result"]
    assert [row["text"] for row in result["outputs"]["sentence"]["rows"]] == ["שלום", "😀", "שלום"]


# ---------------------------------------------------------------- the declarations

@pytest.mark.parametrize("fn_name", sorted(bridge.FUNCTIONS))
def test_each_argument_is_declared_once_and_only_the_functions_own(fn_name):
    declared = bridge.FUNCTIONS[fn_name]
    assert sorted(declared.args) == sorted(inspect.signature(declared.fn).parameters)


GOOD = {
    "check_config": {"d_model": 512, "n_heads": 8},
    "shapes_view": {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2},
    "param_count": {"d_model": 512, "n_heads": 8},
    "heads_view": {"text_or_tokens": "a b a b"},
    "heads_weights_view": {"text_or_tokens": "a b a b"},
    "worked_view": {"seed": 1},
    "memory_view": {},
    "training_start": {"config": {"batch": 2}},
    "training_stop": {"run": 1},
}

BAD = [  # function, the argument changed, its bad value, the message
    ("check_config", "d_model", 0, "d_model must be at least 1, got 0."),
    ("check_config", "n_heads", 2.5, "n_heads must be a whole number, got 2.5."),
    ("check_config", "n_kv_heads", LIMITS["n_kv_heads"] + 1, "n_kv_heads must be at most 65,536, got 65537."),
    ("check_config", "d_head", "64", "d_head must be a whole number, got '64'."),
    ("shapes_view", "seq_len", 10**30, "seq_len must be at most 16,777,216, got a 31-digit number."),
    ("shapes_view", "batch", None, "batch must be a whole number, got None."),
    ("shapes_view", "bias", "no", "bias must be true or false, got 'no'."),
    ("shapes_view", "dtype_bytes", 3, "dtype_bytes must be one of 1, 2, 4, 8 (int8, 16-bit, float32, float64), got 3."),
    ("shapes_view", "n_layers", 0, "n_layers must be at least 1, got 0."),
    ("param_count", "bias", 1, "bias must be true or false, got 1."),
    ("heads_view", "text_or_tokens", "   ", "Your sentence is empty."),
    ("heads_view", "text_or_tokens", "a" * 100_001, "Your sentence is too long: 100,001 characters (at most 100,000)."),
    ("heads_view", "text_or_tokens", ["a", 3], "Your sentence must be a string or a list of 1 to 100,000"),
    ("heads_view", "ablate", "previous_token", "ablate must be a list, got 'previous_token'."),
    ("heads_weights_view", "ablate", ["nope"], "ablate[0] must be one of previous_token, positional, induction, content"),
    ("worked_view", "seed", 0, "seed must be at least 1, got 0."),
    ("worked_view", "seed", 2**32 + 1, "seed must be at most 4,294,967,296"),
    ("worked_view", "tokens", ["the", "dog", "sat"], "tokens[1] must be one of the, cat, sat, on, a, mat, got 'dog'."),
    ("worked_view", "tokens", ["cat"], "tokens must hold 3 items, got 1."),
    ("memory_view", "n_tokens", 5, "n_tokens must be at most 4, got 5."),
    ("memory_view", "n_heads", 3, "n_heads must be one of 1, 2, 4 (d_model = 8), got 3."),
    ("memory_view", "wrong", "yes", "wrong must be true or false, got 'yes'."),
    ("training_start", "config", {"n_heads": 0}, "The number of heads per layer must be at least 1, got 0."),
    ("training_start", "config", {"n_heads": 9}, "The number of heads per layer must be at most 8, got 9."),
    ("training_start", "config", {"min_period": 1}, "The shortest block length must be at least 2, got 1."),
    ("training_start", "config", {"min_period": None}, "The shortest block length must be a whole number, got None."),
    ("training_start", "config", {"lr": 0}, "The learning rate must be a number above 0 and at most 10, got 0."),
    ("training_start", "config", {"lr": True}, "The learning rate must be a number above 0 and at most 10, got True."),
    ("training_start", "config", {"batch": 10**9}, "batch must be at most 64, got 1000000000."),
    ("training_start", "config", {"heads": 2}, "unknown config field 'heads'; known: vocab, d_model"),
    ("training_start", "config", [2], "config must be an object of fields"),
    ("training_start", "seed", -1, "seed must be at least 0, got -1."),
    ("training_stop", "run", 0, "run must be at least 1, got 0."),
]


@pytest.mark.parametrize("fn_name, field, value, message", BAD, ids=[f"{f}-{a}-{v!r:.20}" for f, a, v, _ in BAD])
def test_a_bad_argument_is_refused_with_its_name_and_why(fn_name, field, value, message):
    answer = call(fn_name, {**GOOD[fn_name], field: value})
    assert answer["ok"] is False and answer["error"].startswith(message), answer
    assert answer["refused"] is True  # the reader's input: the page says it as it is, without Retry


@pytest.mark.parametrize("budget_ms, ok", [(0, False), (1e-3, True), (1000, True), (1000.5, False), ("80", False)])
def test_a_runs_budget_at_its_edges(budget_ms, ok):
    run = call("training_start", {"config": {"batch": 1, "d_model": 4, "d_head": 2}})["result"]["run"]
    answer = call("training_advance", {"run": run, "budget_ms": budget_ms})
    assert answer["ok"] is ok, answer
    if not ok:
        assert answer["error"].startswith("budget_ms must be a number above 0 and at most 1000, got")


EDGES = [  # the values at the ends of each declared range are accepted
    ("check_config", {"d_model": LIMITS["d_model"], "n_heads": 1, "n_kv_heads": 1, "d_head": LIMITS["d_head"]}),
    ("check_config", {"d_model": 1.0, "n_heads": 1, "n_kv_heads": None, "d_head": None}),
    ("shapes_view", {"d_model": 8, "n_heads": 8, "seq_len": LIMITS["seq_len"], "batch": LIMITS["batch"],
                      "n_layers": LIMITS["n_layers"], "dtype_bytes": 8, "bias": False}),
    ("shapes_view", {"d_model": 1, "n_heads": 1, "seq_len": 1, "batch": 1, "n_layers": 1, "dtype_bytes": 1}),
    ("heads_view", {"text_or_tokens": "a" * 100_000, "ablate": ["previous_token", "positional", "content", "induction"]}),
    ("heads_weights_view", {"text_or_tokens": ["x"], "ablate": []}),
    ("worked_view", {"seed": 2**32, "tokens": ["mat", "mat", "mat"]}),
    ("memory_view", {"n_tokens": 1, "n_heads": 4, "wrong": True}),
    ("memory_view", {"n_tokens": 4, "n_heads": 1}),
    ("training_start", {"config": {"min_period": 2, "max_period": 2, "seq_len": 4, "batch": 1, "lr": 10}, "seed": 2**32 - 1}),
    ("training_start", {"config": {"vocab": 64, "max_period": 62, "seq_len": 64, "batch": 1, "n_layers": 1,
                                   "n_heads": 1, "d_model": 1, "d_head": 1, "init_scale": 10}, "seed": 0}),
]


@pytest.mark.parametrize("fn_name, args", EDGES)
def test_the_edges_of_each_range_are_accepted(fn_name, args):
    answer = call(fn_name, args)
    assert answer["ok"] is True, answer


def test_the_limits_a_page_carries_are_the_declared_ones():
    assert bridge.limits("shapes_view")["d_model"] == {"min": 1, "max": LIMITS["d_model"]}
    config = bridge.limits("training_start")["config"]
    assert config["min_period"] == {"min": 2, "max": 62} and config["n_heads"] == {"min": 1, "max": 8}
    assert bridge.limits("memory_view")["n_heads"] == {"values": [1, 2, 4]}


anything = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**30), st.floats(), st.text(max_size=3),
                     st.lists(st.integers(), max_size=2))


@settings(max_examples=150, deadline=None)
@given(anything, anything, anything, anything, anything, anything, anything, anything)
def test_any_json_arguments_get_an_answer(d_model, n_heads, seq_len, batch, n_kv_heads, d_head, bias, dtype_bytes):
    args = dict(d_model=d_model, n_heads=n_heads, seq_len=seq_len, batch=batch, n_kv_heads=n_kv_heads, d_head=d_head,
                bias=bias, dtype_bytes=dtype_bytes)
    answer = call("shapes_view", args)
    assert isinstance(answer["ok"], bool)
    if answer["ok"]:
        assert answer["result"]["outputs"]["check"]["data"]["ok"] in ("true", "false")
    else:
        assert answer["error"].split()[0] in args and "internal error" not in answer["error"]


# ---------------------------------------------------------------- the reader's words

READERS = [  # function, arguments, the argument a Python caller reads named, the control the page's reader reads named
    ("heads_view", {"text_or_tokens": "   "}, "text", "Your sentence"),
    ("heads_weights_view", {"text_or_tokens": ["a", ""]}, "text_or_tokens", "Your sentence"),
    ("real_model_start", {"text": "x" * 100_001}, "text", "The text"),
    ("training_start", {"config": {"lr": 20}}, "lr", "The learning rate"),
    ("training_start", {"config": {"max_period": 99}}, "max_period", "The longest block length"),
    ("training_evaluate", {"config": {"n_layers": 0}, "seed": 0, "params": "x"}, "n_layers", "The number of layers"),
]


@pytest.mark.parametrize("fn_name, args, argument, control", READERS)
def test_a_refusal_names_the_argument_to_python_and_the_control_to_the_reader(fn_name, args, argument, control):
    with pytest.raises(ValueError) as refused:
        bridge.FUNCTIONS[fn_name](**args)
    python = str(refused.value)
    assert python.startswith(f"{argument} ")
    assert call(fn_name, args) == {"ok": False, "error": control + python.removeprefix(argument), "refused": True}


def test_the_exercises_python_names_the_readers_code():
    from mha_page.bridge.exercises import call as exercises_call
    from mha_core.exercises import run_exercise
    with pytest.raises(ValueError, match="^code is empty.$"):
        run_exercise("kv_cache", " \n")
    answer = json.loads(exercises_call("run_exercise", json.dumps({"name": "kv_cache", "code": " \n"})))
    assert answer == {"ok": False, "error": "Your code is empty.", "refused": True}


def test_a_functions_own_refusal_starts_as_a_sentence():
    run = call("training_start", {"config": {"batch": 1, "d_model": 4, "d_head": 2}})["result"]["run"]
    assert call("training_stop", {"run": run})["result"]["stopped"]
    with pytest.raises(ValueError) as refused:
        bridge.FUNCTIONS["training_advance"](run=run)
    python = str(refused.value)
    assert python[0].islower()
    assert call("training_advance", {"run": run})["error"] == python[0].upper() + python[1:]


@pytest.mark.parametrize("message", ["d_model (6) must divide", "lr=1 is too large", "tokens[1] is not", "'x' is not"])
def test_a_message_that_starts_with_a_name_keeps_its_spelling(message):
    assert bridge.worded(ValueError(message)) == message


def test_a_message_that_starts_with_an_arguments_name_keeps_it_and_prose_takes_a_capital():
    circuits, training = bridge.FUNCTIONS["circuits_over_training"], bridge.FUNCTIONS["training_start"]
    assert bridge.worded(ValueError("steps must increase"), circuits) == "steps must increase"
    assert bridge.worded(ValueError("vocab is too small"), training) == "vocab is too small"  # a field of config
    assert bridge.worded(ValueError("the text needs 2 words"), training) == "The text needs 2 words"
