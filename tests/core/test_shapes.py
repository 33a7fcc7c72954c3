"""param_count and shape_report: exact arithmetic, views asked of numpy, JSON only, O(1)."""

import json
import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mha_core import ConfigError, multi_head_attention, param_count, shape_report
from mha_core.attention import attention_steps

NAMES = ["x", "q", "k", "v", "q_heads", "k_heads", "v_heads", "scores", "weights", "z", "merged", "out"]


def assert_plain_json(value):
    """Only dict, list, str, int, float, bool, None (no numpy scalars), and json round-trips."""
    if isinstance(value, dict):
        assert all(isinstance(k, str) for k in value)
        for v in value.values():
            assert_plain_json(v)
    elif isinstance(value, list):
        for v in value:
            assert_plain_json(v)
    else:
        assert value is None or type(value) in (str, int, float, bool), type(value)


def test_param_count_plain_mha():
    assert param_count(512, 8) == 4 * 512**2 + 4 * 512
    assert param_count(512, 8, bias=False) == 4 * 512**2


def test_param_count_grouped_and_multi_query():
    # Llama-3-8B: W_Q, W_O 4096x4096; W_K, W_V 4096x(8·128), no biases
    assert param_count(4096, 32, n_kv_heads=8, bias=False) == 2 * 4096 * 4096 + 2 * 4096 * 1024
    # Falcon-7B: one key/value head of 64
    assert param_count(4544, 71, n_kv_heads=1, bias=False) == 2 * 4544 * 4544 + 2 * 4544 * 64


def test_param_count_is_exact_beyond_float_precision():
    count = param_count(1_048_576, 1, d_head=65_536, n_kv_heads=1)
    assert count == 4 * 1_048_576 * 65_536 + 3 * 65_536 + 1_048_576
    assert type(count) is int


def test_param_count_refuses_bad_config():
    with pytest.raises(ConfigError, match="d_model=10 is not divisible by n_heads=3"):
        param_count(10, 3)


def build_weights(rng, d_model, n_heads, n_kv_heads, d_head, bias):
    """Weights for a layer, built from the sizes directly (not from mha_core's shapes)."""
    weights = {
        "W_Q": rng.standard_normal((d_model, n_heads * d_head)),
        "W_K": rng.standard_normal((d_model, n_kv_heads * d_head)),
        "W_V": rng.standard_normal((d_model, n_kv_heads * d_head)),
        "W_O": rng.standard_normal((n_heads * d_head, d_model)),
    }
    if bias:
        weights.update(b_Q=rng.standard_normal(n_heads * d_head), b_K=rng.standard_normal(n_kv_heads * d_head),
                       b_V=rng.standard_normal(n_kv_heads * d_head), b_O=rng.standard_normal(d_model))
    return weights


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 3), st.integers(1, 5), st.booleans(), st.booleans())
def test_param_count_equals_the_sizes_of_weights_that_run(n_kv_heads, group, d_head, explicit, bias):
    n_heads = n_kv_heads * group
    d_model = 7 if explicit else n_heads * d_head
    rng = np.random.default_rng(0)
    weights = build_weights(rng, d_model, n_heads, n_kv_heads, d_head, bias)
    out, _ = multi_head_attention(rng.standard_normal((2, 3, d_model)), n_heads=n_heads, **weights)
    assert out.shape == (2, 3, d_model)  # the arrays really are a working layer
    count = param_count(d_model, n_heads, n_kv_heads, d_head if explicit else None, bias)
    assert count == sum(w.size for w in weights.values())


def test_report_for_the_original_transformer():
    report = shape_report(512, 8, seq_len=10, batch=2)
    assert_plain_json(report)
    json.dumps(report, allow_nan=False)
    assert report["ok"] and report["check"]["ok"]
    assert [t["name"] for t in report["tensors"]] == NAMES
    by = {t["name"]: t for t in report["tensors"]}
    assert by["x"]["symbol"] == "B×n×d_model" and by["x"]["shape"] == [2, 10, 512]
    assert by["q_heads"]["symbol"] == "B×h×n×d_k" and by["q_heads"]["shape"] == [2, 8, 10, 64]
    assert by["scores"]["symbol"] == "B×h×n×n" and by["scores"]["shape"] == [2, 8, 10, 10]
    assert by["merged"]["shape"] == by["out"]["shape"] == [2, 10, 512]
    assert {n for n, t in by.items() if t["view"]} == {"q_heads", "k_heads", "v_heads", "weights"}
    assert not by["merged"]["view"] and by["merged"]["source"] == "z"  # the merge copies (views/shapes.py says so)
    for t in report["tensors"]:
        assert t["numel"] == math.prod(t["shape"]) and t["bytes"] == 4 * t["numel"]
    assert report["params"]["total"] == param_count(512, 8) == sum(w["numel"] for w in report["weights"])
    assert report["params"]["W_Q"] == 512 * 512 and report["params"]["b_O"] == 512


def test_report_for_grouped_query_attention():
    report = shape_report(4096, 32, seq_len=8192, batch=1, n_kv_heads=8, bias=False, dtype_bytes=2)
    by = {t["name"]: t for t in report["tensors"]}
    assert by["k"]["symbol"] == "B×n×h_kv·d_k" and by["k"]["shape"] == [1, 8192, 1024]
    assert by["k_heads"]["symbol"] == "B×h_kv×n×d_k" and by["k_heads"]["shape"] == [1, 8, 8192, 128]
    assert by["q_heads"]["shape"] == [1, 32, 8192, 128] and by["scores"]["shape"] == [1, 32, 8192, 8192]
    assert report["params"]["b_Q"] == 0
    # 8 key/value heads of 128 numbers, keys and values, 2 bytes each: 4 KiB per token per layer
    assert report["kv_cache_bytes"] == 8192 * 4096 == 32 * 2**20


def test_report_for_explicit_d_head():
    report = shape_report(3072, 16, seq_len=4, batch=1, d_head=256)
    by = {t["name"]: t for t in report["tensors"]}
    assert by["q"]["symbol"] == "B×n×h·d_k" and by["q"]["shape"] == [1, 4, 4096]
    assert by["out"]["shape"] == [1, 4, 3072]
    assert {w["name"]: w["shape"] for w in report["weights"]}["W_O"] == [4096, 3072]


def test_kv_cache_of_the_whole_model():
    one = shape_report(4096, 32, seq_len=4096, batch=1, bias=False, dtype_bytes=2)
    assert one["kv_cache_model_bytes"] == one["kv_cache_bytes"] == 64 * 2**20  # n_layers defaults to 1
    model = shape_report(4096, 32, seq_len=4096, batch=1, bias=False, dtype_bytes=2, n_layers=32)
    assert model["kv_cache_model_bytes"] == 32 * one["kv_cache_bytes"] and model["config"]["n_layers"] == 32


def test_flops_formula():
    B, n, d = 2, 10, 512
    report = shape_report(d, 8, seq_len=n, batch=B)
    assert report["flops"] == 8 * B * n * d * d + 4 * B * n * n * d  # the textbook count
    assert report["flops"] == sum(report["flops_by_step"].values())


@pytest.mark.parametrize("d_model, n_heads, n_kv_heads, d_head, seq_len, batch", [
    (24, 4, None, None, 5, 3), (24, 4, 2, None, 5, 3), (24, 4, 1, None, 1, 1), (24, 1, None, None, 5, 2),
    (10, 3, None, 4, 2, 1), (6, 6, None, None, 3, 2), (8, 2, None, None, 1, 4),
])
def test_report_matches_a_real_forward_pass(d_model, n_heads, n_kv_heads, d_head, seq_len, batch):
    """Shapes and view flags agree with the real pass run at exactly the configured size."""
    report = shape_report(d_model, n_heads, seq_len, batch, n_kv_heads, d_head)
    h_kv, d_k = n_kv_heads or n_heads, d_head or d_model // n_heads
    rng = np.random.default_rng(1)
    W = build_weights(rng, d_model, n_heads, h_kv, d_k, bias=False)
    x = rng.standard_normal((batch, seq_len, d_model))
    steps = attention_steps(x, W["W_Q"], W["W_K"], W["W_V"], W["W_O"], n_heads, None, None, False)
    for t in report["tensors"]:
        assert list(steps[t["name"]].shape) == t["shape"], t["name"]
        if t["source"]:
            assert t["view"] == np.shares_memory(steps[t["name"]], steps[t["source"]]), t["name"]


def test_one_head_merge_is_a_view():
    by = {t["name"]: t for t in shape_report(512, 1, seq_len=10, batch=2)["tensors"]}
    assert by["merged"]["view"] is True


def test_huge_config_allocates_nothing_big():  # its speed: bench/core_speed.py
    shape_report(512, 8, 10, 2)  # warm the small trace cache
    tracemalloc.start()
    report = shape_report(12288, 96, seq_len=131072, batch=512)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1_000_000
    scores = {t["name"]: t for t in report["tensors"]}["scores"]
    assert scores["numel"] == 512 * 96 * 131072**2 and type(scores["bytes"]) is int
    assert_plain_json(report)


@pytest.mark.parametrize("args, words", [
    ({"d_model": 512, "n_heads": 6}, "d_model=512 is not divisible by n_heads=6"),
    ({"d_model": 512, "n_heads": 8, "n_kv_heads": 3}, "n_heads=8 is not divisible by n_kv_heads=3"),
])
def test_invalid_report_is_returned_not_raised(args, words):
    report = shape_report(**{"seq_len": 10, "batch": 2, **args})
    assert report["ok"] is False and report["check"]["ok"] is False
    assert words in report["check"]["message"]
    assert report["tensors"] == [] and report["params"] is None and report["flops"] is None
    assert_plain_json(report)


def test_numpy_inputs_give_plain_ints():
    report = shape_report(np.int64(512), np.int32(8), np.int64(10), np.int16(2), dtype_bytes=np.int64(2))
    assert_plain_json(report)
    assert report["kv_cache_bytes"] == 2 * 2 * 10 * 512 * 2


# ---------------------------------------------------------------- the public door

@pytest.mark.parametrize("args, message", [
    ({"d_model": -512}, "d_model must be at least 1, got -512."),
    ({"n_heads": 0}, "n_heads must be at least 1, got 0."),
    ({"seq_len": 0}, "seq_len must be at least 1, got 0."),
    ({"batch": 2.5}, "batch must be a whole number, got 2.5."),
    ({"n_kv_heads": 0}, "n_kv_heads must be at least 1, got 0."),
    ({"d_head": "64"}, "d_head must be a whole number, got '64'."),
    ({"bias": 1}, "bias must be true or false, got 1."),
    ({"dtype_bytes": 3}, "dtype_bytes must be one of 1, 2, 4, 8"),
    ({"n_layers": 10**9}, "n_layers must be at most 4,096"),
])
def test_shape_report_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError) as refused:
        shape_report(**{"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2, **args})
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("args, message", [
    ((512, 0), "n_heads must be at least 1, got 0."),
    ((0, 8), "d_model must be at least 1, got 0."),
    ((512, 8, None, -1), "d_head must be at least 1, got -1."),
    ((512, 8, None, None, "no"), "bias must be true or false, got 'no'."),
])
def test_param_count_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError, match=f"^{message}$".replace(".", r"\.")):
        param_count(*args)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 64), st.integers(1, 2048), st.integers(1, 64),
       st.sampled_from([1, 2, 4, 8]), st.booleans())
def test_valid_calls_answer_as_the_function_itself(d_model, n_heads, seq_len, batch, dtype_bytes, bias):
    args = dict(d_model=d_model, n_heads=n_heads, seq_len=seq_len, batch=batch, dtype_bytes=dtype_bytes, bias=bias)
    assert shape_report(**args) == shape_report.fn(**args)
