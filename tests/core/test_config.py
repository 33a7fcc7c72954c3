"""check_config and AttentionConfig: the divisibility check, suggestions, and bad input."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mha_core import LIMITS, AttentionConfig, ConfigError, check_config


def test_512_into_6_heads_names_both_numbers_and_suggests_neighbours():
    check = check_config(512, 6)
    assert check["ok"] is False
    assert check["message"].startswith("d_model=512 is not divisible by n_heads=6")
    assert check["suggestions"]["n_heads"] == [4, 8]
    assert check["suggestions"]["d_model"] == [510, 516]
    # or an explicit head width: 6 heads of 85 (or 86) need not fill d_model exactly
    assert "explicit width d_head" in check["message"]
    assert check["suggestions"]["d_head"] == [85, 86]
    assert all(check_config(512, 6, d_head=w)["ok"] for w in check["suggestions"]["d_head"])


def test_head_width_suggestions_stay_in_range():
    assert check_config(4, 6)["suggestions"]["d_head"] == [1]  # 4 / 6 rounds down to 0, not a width
    assert check_config(LIMITS["d_model"], 3)["suggestions"]["d_head"] == []  # 349,525 > LIMITS["d_head"]
    assert check_config(LIMITS["d_model"], 17)["suggestions"]["d_head"] == [61681, 61680]  # 61,680.9: closest first


def test_one_shared_key_value_head_is_singular():
    assert check_config(4544, 71, n_kv_heads=1)["message"] == "OK: 71 heads of width d_head=64, sharing 1 key/value head."
    assert check_config(4096, 32, n_kv_heads=8)["message"].endswith("sharing 8 key/value heads.")


def test_one_head_is_singular():
    assert check_config(64, 1)["message"] == "OK: 1 head of width d_head=64."
    assert check_config(64, 2)["message"] == "OK: 2 heads of width d_head=32."


@pytest.mark.parametrize("d_model, n_heads, n_kv_heads, d_head", [
    (512, 8, None, None), (768, 12, None, None), (4096, 32, 8, None), (4544, 71, 1, None),
    (3072, 16, 16, 256), (1, 1, None, None), (LIMITS["d_model"], 1, None, None),
])
def test_valid_configs(d_model, n_heads, n_kv_heads, d_head):
    check = check_config(d_model, n_heads, n_kv_heads, d_head)
    assert check["ok"] is True, check["message"]
    assert check["suggestions"] == {"n_heads": [], "d_model": [], "n_kv_heads": [], "d_head": []}


def test_explicit_d_head_lifts_divisibility():
    assert check_config(3072, 16)["ok"] is True  # 3072 / 16 = 192 also works
    assert check_config(3072, 15)["ok"] is False
    assert check_config(3072, 15, d_head=256)["ok"] is True


def test_grouped_query_heads_must_divide():
    check = check_config(4096, 32, n_kv_heads=5)
    assert not check["ok"]
    assert "n_heads=32 is not divisible by n_kv_heads=5" in check["message"]
    assert check["suggestions"]["n_kv_heads"] == [4, 8]
    check = check_config(512, 8, n_kv_heads=16)
    assert not check["ok"] and check["suggestions"]["n_kv_heads"] == [8]


def test_whole_floats_and_numpy_ints_are_accepted():
    assert check_config(512.0, np.int64(8))["ok"]


def _nearest_valid(value, ok, top):
    """Brute force: the closest v < value and v > value (up to top) with ok(v)."""
    below = next((v for v in range(value - 1, 0, -1) if ok(v)), None)
    above = next((v for v in range(value + 1, top + 1) if ok(v)), None)
    return [v for v in (below, above) if v is not None]


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 2000), st.integers(1, 64))
def test_suggestions_are_the_nearest_valid_values(d_model, n_heads):
    check = check_config(d_model, n_heads)
    assert check["ok"] == (d_model % n_heads == 0)
    if check["ok"]:
        return
    heads = check["suggestions"]["n_heads"]
    assert sorted(heads) == _nearest_valid(n_heads, lambda h: d_model % h == 0, d_model)
    assert heads == sorted(heads, key=lambda h: (abs(h - n_heads), h))  # closest first
    assert sorted(check["suggestions"]["d_model"]) == _nearest_valid(d_model, lambda d: d % n_heads == 0, d_model + n_heads)
    for h in heads:
        assert check_config(d_model, h)["ok"]


def test_attention_config_derives_sizes_and_is_frozen():
    cfg = AttentionConfig(4096, 32, n_kv_heads=8)
    assert (cfg.d_head, cfg.n_kv_heads, cfg.d_q, cfg.d_kv, cfg.group_size) == (128, 8, 4096, 1024, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.d_model = 1
    plain = AttentionConfig(512, 8)
    assert (plain.n_kv_heads, plain.d_head) == (8, 64)
    assert plain.param_count == 4 * 512 * 512 + 4 * 512
    assert AttentionConfig(512, 8, bias=False).param_count == 4 * 512 * 512
    assert AttentionConfig(3072, 16, d_head=256).weight_shapes["W_Q"] == (3072, 4096)


def test_attention_config_raises_the_check_message():
    with pytest.raises(ConfigError) as info:
        AttentionConfig(512, 6)
    assert isinstance(info.value, ValueError)
    assert str(info.value) == check_config(512, 6)["message"]
    assert AttentionConfig(512, 8, bias=np.bool_(False)).bias is False  # numpy bools are flags too


def test_ints_are_normalised():
    cfg = AttentionConfig(np.int64(512), 8.0)
    assert type(cfg.d_model) is int and type(cfg.n_heads) is int and math.prod(cfg.weight_shapes["W_O"]) == 512 * 512


# ---------------------------------------------------------------- the public door

SIZES = ("d_model", "n_heads", "n_kv_heads", "d_head")


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(SIZES), st.one_of(st.integers(-10**6, 0), st.floats(0.5, 9.5).filter(lambda v: v % 1),
                                        st.text(max_size=2), st.just(True)))
def test_a_size_that_makes_no_sense_is_refused_by_name(name, value):
    args = {"d_model": 512, "n_heads": 8, name: value}
    for make in (check_config, AttentionConfig):
        with pytest.raises(ValueError) as refused:
            make(**args)
        assert str(refused.value).startswith(f"{name} must be "), refused.value


def test_the_nonsense_the_issue_found_is_refused():
    with pytest.raises(ValueError, match=r"^d_model must be at least 1, got 0\.$"):
        check_config(0, 8)
    with pytest.raises(ValueError, match=r"^n_heads must be at most 65,536"):
        check_config(512, LIMITS["n_heads"] + 1)
    with pytest.raises(ValueError, match=r"^bias must be true or false, got 'yes'\.$"):
        AttentionConfig(512, 8, bias="yes")


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 4096), st.integers(1, 64), st.one_of(st.none(), st.integers(1, 64)))
def test_valid_sizes_answer_as_before(d_model, n_heads, d_head):
    assert check_config(d_model, n_heads, d_head=d_head) == check_config.fn(d_model, n_heads, None, d_head)
    assert check_config(float(d_model), np.int64(n_heads), d_head=d_head)["ok"] == check_config.fn(
        d_model, n_heads, None, d_head)["ok"]
