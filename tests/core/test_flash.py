"""FlashAttention's tiles: the same output as the ordinary computation and as torch's SDPA, on random shapes and
blocks; each tile's running max, sum and output against a direct computation over the keys seen so far; the counts
against the arrays actually built."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from mha_core import flash_attention, scaled_dot_product_attention
from mha_core.flash import D_HEADS, flash_attention_steps, flash_counts, online_softmax_update, sentence_head

TOLERANCE = {np.float64: 1e-6, np.float32: 1e-5}

shapes = st.fixed_dictionaries({
    "lead": st.lists(st.integers(1, 3), max_size=2).map(tuple), "n_q": st.integers(1, 24), "n_k": st.integers(1, 24),
    "d": st.integers(1, 9), "d_v": st.integers(1, 9), "block_q": st.integers(1, 30), "block_k": st.integers(1, 30),
    "causal": st.booleans(), "dtype": st.sampled_from([np.float32, np.float64]), "seed": st.integers(0, 2**32 - 1)})


def drawn(s: dict):
    rng = np.random.default_rng(s["seed"])
    q = rng.standard_normal((*s["lead"], s["n_q"], s["d"])) * 2  # scores of a few units, as a trained head's
    k = rng.standard_normal((*s["lead"], s["n_k"], s["d"])) * 2
    v = rng.standard_normal((*s["lead"], s["n_k"], s["d_v"]))
    return (a.astype(s["dtype"]) for a in (q, k, v))


@settings(max_examples=150, deadline=None)
@given(shapes)
def test_flash_attention_is_scaled_dot_product_attention_and_torchs(s):
    q, k, v = drawn(s)
    out = flash_attention(q, k, v, s["block_q"], s["block_k"], causal=s["causal"])
    ordinary, _ = scaled_dot_product_attention(q, k, v, causal=s["causal"])
    torchs = torch.nn.functional.scaled_dot_product_attention(*map(torch.from_numpy, (q, k, v)), is_causal=s["causal"])
    assert out.dtype == q.dtype and out.shape == ordinary.shape
    assert np.abs(out - ordinary).max() <= TOLERANCE[s["dtype"]]
    assert np.abs(out - torchs.numpy()).max() <= TOLERANCE[s["dtype"]]


@pytest.mark.parametrize("block_q, block_k", [(4, 4), (3, 5), (16, 1), (1, 16), (100, 7)])
@pytest.mark.parametrize("causal", [False, True])
def test_blocks_that_do_not_divide_n_cover_every_key_once(block_q, block_k, causal):
    q, k, v = drawn({"lead": (2,), "n_q": 13, "n_k": 13, "d": 4, "d_v": 3, "dtype": np.float64, "seed": 5,
                     "causal": causal})
    ordinary, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    assert np.abs(flash_attention(q, k, v, block_q, block_k, causal) - ordinary).max() < 1e-12


def test_broadcast_leading_axes_as_the_ordinary_computation():
    q, k, v = drawn({"lead": (2, 3), "n_q": 7, "n_k": 9, "d": 4, "d_v": 5, "dtype": np.float64, "seed": 1})
    ordinary, _ = scaled_dot_product_attention(q, k[:1, :1], v[0], causal=True)
    assert np.allclose(flash_attention(q, k[:1, :1], v[0], 3, 4, causal=True), ordinary, atol=1e-12)


def one_head(s: dict):
    """q, k, v of one head drawn for s, and flash_attention_steps' answer."""
    q, k, v = drawn(s | {"lead": ()})
    return q, k, v, flash_attention_steps(q, k, v, s["block_q"], s["block_k"], s["causal"])


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_each_tile_holds_the_softmax_of_the_keys_seen_so_far(s):
    q, k, v, r = one_head(s)
    scores = (q @ k.T).astype(np.float64) / math.sqrt(s["d"])  # [n_q, n_k], from scratch
    if s["causal"]:
        scores[np.triu_indices(s["n_q"], 1, s["n_k"])] = -np.inf
    n_blocks = math.ceil(s["n_q"] / s["block_q"]) * math.ceil(s["n_k"] / s["block_k"])
    assert len(r["steps"]) == n_blocks
    for step in r["steps"]:
        (r0, r1), (c0, c1) = step["rows"], step["cols"]
        assert step["skipped"] == (s["causal"] and c0 > r1 - 1)  # only tiles wholly above the diagonal
        if step["skipped"]:
            continue
        seen = scores[r0:r1, :c1]  # [b_q, keys so far]
        m_old, m_new = step["m"]
        l_old, l_new = step["l"]
        o_new = step["o"][1]
        assert np.allclose(step["scores"], scores[r0:r1, c0:c1], atol=1e-5)
        assert np.allclose(m_new, seen.max(axis=1), atol=1e-5)
        assert np.allclose(step["rescale"], np.exp(m_old - m_new), atol=1e-6)
        assert np.allclose(l_new, np.exp(seen - m_new[:, None]).sum(axis=1), rtol=1e-5)
        partial = np.exp(seen - seen.max(axis=1, keepdims=True))
        assert np.allclose(o_new / l_new[:, None], partial / partial.sum(axis=1, keepdims=True) @ v[:c1], atol=1e-5)
        assert all(a.dtype == q.dtype for a in (step["scores"], m_new, l_new, o_new))


@settings(max_examples=100, deadline=None)
@given(shapes)
def test_counts_equal_the_formulas_and_the_arrays_built(s):
    q, k, v, r = one_head(s)
    c = flash_counts(s["n_q"], s["n_k"], s["d"], s["d_v"], s["block_q"], s["block_k"], s["causal"])
    computed = [step for step in r["steps"] if not step["skipped"]]
    assert c["tiles"] == len(computed) and c["skipped"] == len(r["steps"]) - len(computed)
    assert c["held"] == max(step["scores"].size for step in computed) == r["traffic"]["held"]
    # tiled: each query block read once, each computed tile's keys and values, each output row written once
    reads = (sum({step["rows"]: q[slice(*step["rows"])].size for step in computed}.values())
             + sum(k[slice(*step["cols"])].size + v[slice(*step["cols"])].size for step in computed))
    assert c["tiled"] == {"reads": reads, "writes": r["out"].size} == {key: r["traffic"][key] for key in ("reads", "writes")}
    # ordinary: read Q, K, write S; read S, write P; read P, V, write O (the arrays it builds)
    out, weights = scaled_dot_product_attention(q, k, v, causal=s["causal"])
    assert c["full"] == weights.size
    assert c["ordinary"] == {"reads": q.size + k.size + weights.size + weights.size + v.size,
                             "writes": weights.size + weights.size + out.size}


def test_counts_without_the_mask_follow_the_closed_form():
    n, d, b = 1024, 64, 128
    c = flash_counts(n, n, d, d, b, b)
    assert c["tiles"] == (n // b) ** 2 and c["held"] == b * b and c["full"] == n * n
    assert c["tiled"]["reads"] == n * d + (n // b) * n * 2 * d  # n·d + T_q·n·(d + d_v)
    assert c["ordinary"]["reads"] + c["ordinary"]["writes"] == 4 * n * d + 4 * n * n
    causal = flash_counts(n, n, d, d, b, b, causal=True)
    assert causal["tiles"] + causal["skipped"] == c["tiles"] and causal["tiles"] == (n // b) * (n // b + 1) // 2


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6), st.integers(1, 6), st.integers(1, 5), st.integers(0, 2**32 - 1), st.booleans())
def test_online_softmax_update_is_attention_over_both_blocks(b_q, b_k, d_v, seed, first):
    rng = np.random.default_rng(seed)
    old, new = rng.standard_normal((b_q, b_k)) * 3, rng.standard_normal((b_q, b_k)) * 3
    v_old, v_new = rng.standard_normal((b_k, d_v)), rng.standard_normal((b_k, d_v))
    if first:  # before any key
        m, l, o = np.full(b_q, -np.inf), np.zeros(b_q), np.zeros((b_q, d_v))
        both, v_both = new, v_new
    else:
        m = old.max(axis=1)
        l = np.exp(old - m[:, None]).sum(axis=1)
        o = np.exp(old - m[:, None]) @ v_old
        both, v_both = np.concatenate([old, new], axis=1), np.concatenate([v_old, v_new])
    m2, l2, o2 = online_softmax_update(m, l, o, new, v_new)
    weights = np.exp(both - both.max(axis=1, keepdims=True))
    assert np.allclose(m2, both.max(axis=1))
    assert np.allclose(o2 / l2[:, None], weights / weights.sum(axis=1, keepdims=True) @ v_both)


def test_a_query_with_every_key_masked_so_far_stays_at_zero():
    m, l, o = np.full(2, -np.inf), np.zeros(2), np.zeros((2, 1))
    scores = np.array([[-np.inf, -np.inf], [0.0, -np.inf]])
    m2, l2, o2 = online_softmax_update(m, l, o, scores, np.ones((2, 1)))
    assert m2.tolist() == [-np.inf, 0.0] and l2.tolist() == [0.0, 1.0] and o2.tolist() == [[0.0], [1.0]]


@pytest.mark.parametrize("call, words", [
    (lambda q: flash_attention(q, q, q, 0, 4), "block_q must be at least 1"),
    (lambda q: flash_attention(q, q, q, 4, 2.5), "block_k must be a whole number"),
    (lambda q: flash_attention(q, q, q, 4, 4, causal="yes"), "causal must be true or false"),
    (lambda q: flash_attention(q, q[:, :3], q, 4, 4), "k's last axis"),
    (lambda q: flash_attention(q[:0], q, q, 4, 4), "q must hold at least one query"),
    (lambda q: flash_attention(q.astype(int), q, q, 4, 4), "q must hold floating-point"),
    (lambda q: flash_attention_steps(q[None], q, q, 4, 4), "q must have 2 dimensions"),
    (lambda q: flash_counts(0, 4, 4, 4, 2, 2), "n_q must be at least 1"),
    (lambda q: online_softmax_update(np.zeros(3), np.zeros(5), np.zeros((5, 2)), q, q[:, :2]), "m .* and l"),
])
def test_refuses_nonsense_naming_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call(np.ones((5, 4)))


def test_sentence_head_is_the_same_word_the_same_embedding():
    a = sentence_head("The cat saw the dog", 4)
    b = sentence_head(["the", "cat"], 4)
    assert a["tokens"] == ["The", "cat", "saw", "the", "dog"] and a["q"].shape == (5, 4)
    assert np.array_equal(a["k"][:2], b["k"]) and not np.array_equal(a["k"][0], a["k"][3])  # positions differ
    assert {d: sentence_head("a b", d)["v"].shape[1] for d in D_HEADS} == {d: d for d in D_HEADS}
    with pytest.raises(ValueError, match="d_head must be one of"):
        sentence_head("a b", 3)
