"""Attention: softmax, split/merge, scaled dot-product and multi-head attention.

Checked against torch.nn.MultiheadAttention, against a slow per-head loop written here, and for the
central claim: the one big projection is the per-head projections side by side.
"""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from mha_core import merge_heads, multi_head_attention, scaled_dot_product_attention, softmax, split_heads

rng = np.random.default_rng(0)
finite = st.floats(-1e3, 1e3, allow_nan=False, width=64)


# ---------------------------------------------------------------- softmax

@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=finite), finite)
def test_softmax_rows_sum_to_one_and_ignore_shifts(x, shift):
    p = softmax(x)
    assert np.all(p >= 0) and np.allclose(p.sum(axis=-1), 1.0)
    assert np.allclose(softmax(x + shift), p, atol=1e-12)


def test_softmax_large_and_masked_entries():
    p = softmax(np.array([[1e4, 0.0, -np.inf], [3e38, 3e38, 0.0]], dtype=np.float32))
    assert p.dtype == np.float32 and not np.isnan(p).any()
    assert p[0].tolist() == [1.0, 0.0, 0.0] and np.allclose(p[1], [0.5, 0.5, 0.0])


def test_softmax_fully_masked_row_is_nan_and_others_untouched():
    p = softmax(np.array([[-np.inf, -np.inf], [0.0, 0.0]]))
    assert np.isnan(p[0]).all() and p[1].tolist() == [0.5, 0.5]


def test_softmax_axis_and_no_mutation():
    x = rng.standard_normal((3, 4))
    before = x.copy()
    assert np.allclose(softmax(x, axis=0).sum(axis=0), 1.0)
    assert np.array_equal(x, before)


@pytest.mark.parametrize("x, axis, words", [
    (np.array([1.0, np.nan]), -1, "x contains NaN"),
    (np.array([1.0, np.inf]), -1, "x contains NaN or \\+inf"),
    (np.array([1, 2]), -1, "x must hold floating-point"),
    (np.array([1.0, 2.0]), 1, "axis must be an integer"),
    (np.array([1.0, 2.0]), True, "axis must be an integer"),
])
def test_softmax_rejects(x, axis, words):
    with pytest.raises(ValueError, match=words):
        softmax(x, axis=axis)


# ---------------------------------------------------------------- split and merge

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 3), st.integers(1, 4), st.integers(1, 4), st.integers(1, 3), st.sampled_from([np.float32, np.float64]))
def test_merge_undoes_split_exactly(B, n, h, d_k, dtype):
    x = rng.standard_normal((B, n, h * d_k)).astype(dtype)
    heads = split_heads(x, h)
    assert heads.shape == (B, h, n, d_k) and heads.dtype == dtype
    assert np.shares_memory(heads, x)  # a view: no copy
    for i in range(h):
        assert np.array_equal(heads[:, i], x[..., i * d_k:(i + 1) * d_k])  # head i = slice i
    assert np.array_equal(merge_heads(heads), x)


def test_one_big_projection_is_the_per_head_projections_concatenated():
    x = rng.standard_normal((2, 5, 12))
    W_heads = [rng.standard_normal((12, 4)) for _ in range(3)]  # head i's own [d_model, d_k] matrix
    W_Q = np.concatenate(W_heads, axis=1)  # [d_model, h·d_k]: the per-head matrices side by side
    q_heads = split_heads(x @ W_Q, 3)  # one projection, then the reshape: [B, h, n, d_k]
    for i, W_i in enumerate(W_heads):
        assert np.allclose(q_heads[:, i], x @ W_i, rtol=0, atol=1e-12)


def test_split_is_a_strided_view_and_merge_copies():
    x = np.arange(2 * 5 * 12, dtype=np.float32).reshape(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.base is not None and not heads.flags.c_contiguous
    assert heads.strides == (5 * 12 * 4, 4 * 4, 12 * 4, 4)
    assert np.shares_memory(merge_heads(heads), x)  # x was token by token: back to a view of it
    z = np.ascontiguousarray(heads)  # head by head, as attention produces z
    merged = merge_heads(z)
    assert not np.shares_memory(merged, z) and merged.flags.c_contiguous
    assert np.array_equal(merged, x)


def test_split_and_merge_unbatched():
    x = rng.standard_normal((5, 12))
    assert split_heads(x, 4).shape == (4, 5, 3)
    assert np.array_equal(merge_heads(split_heads(x, 4)), x)


@pytest.mark.parametrize("call, words", [
    (lambda: split_heads(np.zeros((2, 5, 10)), 3), "not divisible by n_heads=3"),
    (lambda: split_heads(np.zeros(12), 3), "x must have 2 or 3 dimensions"),
    (lambda: split_heads(np.zeros((2, 12), dtype=int), 3), "x must hold floating-point"),
    (lambda: split_heads(np.array([[object()]]), 1), "x must hold floating-point"),
    (lambda: split_heads([[1, "a"]], 1), "x must hold floating-point"),
    (lambda: split_heads([[1.0], [1.0, 2.0]], 1), "x is not a numeric array"),
    (lambda: merge_heads(np.zeros((5, 12))), "z must have 3 or 4 dimensions"),
])
def test_split_and_merge_reject(call, words):
    with pytest.raises(ValueError, match=words):
        call()


# ---------------------------------------------------------------- scaled dot-product attention

def naive_attention(q, k, v, allowed=None):
    """softmax(q kᵀ/√d) v with explicit exp and sums, for 2-D q, k, v."""
    scores = q @ k.T / np.sqrt(q.shape[-1])
    if allowed is not None:
        scores = np.where(allowed, scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = e / e.sum(axis=-1, keepdims=True)
    return weights @ v, weights


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_matches_the_formula(causal):
    q, k, v = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 5))
    out, weights = scaled_dot_product_attention(q, k, v, causal=causal)
    expected = naive_attention(q, k, v, np.tri(4, dtype=bool) if causal else None)
    assert np.allclose(out, expected[0]) and np.allclose(weights, expected[1])
    if causal:
        assert np.all(np.triu(weights, 1) == 0)


def test_sdpa_mask_batched_and_cross_lengths():
    q, k, v = rng.standard_normal((2, 3, 4)), rng.standard_normal((2, 6, 4)), rng.standard_normal((2, 6, 2))
    mask = rng.random((3, 6)) > 0.3
    mask[:, 0] = True
    out, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    assert out.shape == (2, 3, 2) and weights.shape == (2, 3, 6)
    assert np.all(weights[:, ~mask] == 0)
    for b in range(2):
        assert np.allclose(out[b], naive_attention(q[b], k[b], v[b], mask)[0])


def test_sdpa_keeps_float32():
    q = rng.standard_normal((2, 4, 8)).astype(np.float32)
    out, weights = scaled_dot_product_attention(q, q, q, causal=True)
    assert out.dtype == weights.dtype == np.float32


@pytest.mark.parametrize("kwargs, words", [
    ({"k": np.zeros((4, 2))}, "k's last axis"),
    ({"v": np.zeros((3, 5))}, "v has 3 positions but k has 4"),
    ({"q": np.zeros(3)}, "q must have at least 2 dimensions"),
    ({"q": np.full((4, 3), np.nan)}, "q contains NaN"),
    ({"v": np.zeros((4, 5), dtype=np.int64)}, "v must hold floating-point"),
    ({"mask": np.ones((4, 4))}, "mask must be a bool array"),
    ({"mask": np.ones((2, 4, 5), dtype=bool)}, "mask of shape"),
    ({"q": np.zeros((3, 4, 3)), "k": np.zeros((2, 4, 3))}, "do not broadcast"),
])
def test_sdpa_rejects(kwargs, words):
    args = {"q": np.zeros((4, 3)), "k": np.zeros((4, 3)), "v": np.zeros((4, 5)), **kwargs}
    with pytest.raises(ValueError, match=words):
        scaled_dot_product_attention(**args)


# ---------------------------------------------------------------- multi-head attention vs torch

def torch_layer(d_model, n_heads, dtype=torch.float64):
    torch.manual_seed(0)
    layer = torch.nn.MultiheadAttention(d_model, n_heads, batch_first=True, dtype=dtype)
    with torch.no_grad():
        layer.in_proj_bias.normal_()
        layer.out_proj.bias.normal_()
    return layer.eval()


def weights_of(layer):
    """torch computes x @ Wᵀ with in_proj_weight = [W_q; W_k; W_v] ([3·d_model, d_model])."""
    W_q, W_k, W_v = layer.in_proj_weight.detach().numpy().copy().reshape(3, layer.embed_dim, -1)
    b_q, b_k, b_v = layer.in_proj_bias.detach().numpy().copy().reshape(3, -1)
    return {"W_Q": W_q.T, "W_K": W_k.T, "W_V": W_v.T, "W_O": layer.out_proj.weight.detach().numpy().T.copy(),
            "b_Q": b_q, "b_K": b_k, "b_V": b_v, "b_O": layer.out_proj.bias.detach().numpy().copy()}


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("B, n, d_model, n_heads", [(2, 5, 16, 4), (3, 7, 24, 3), (1, 1, 8, 8), (2, 6, 12, 1)])
def test_equals_torch_multihead_attention(B, n, d_model, n_heads, causal):
    layer = torch_layer(d_model, n_heads)
    x = rng.standard_normal((B, n, d_model))
    xt = torch.from_numpy(x)
    mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1) if causal else None  # True = blocked
    with torch.no_grad():
        out_t, w_t = layer(xt, xt, xt, need_weights=True, average_attn_weights=False, attn_mask=mask)
    out, weights = multi_head_attention(x, n_heads=n_heads, causal=causal, **weights_of(layer))
    assert out.shape == (B, n, d_model) and weights.shape == (B, n_heads, n, n)
    assert np.abs(out - out_t.numpy()).max() < 1e-9
    assert np.abs(weights - w_t.numpy()).max() < 1e-9


def test_equals_torch_unbatched_and_in_float32():
    layer = torch_layer(16, 4, dtype=torch.float32)
    x = rng.standard_normal((6, 16)).astype(np.float32)
    with torch.no_grad():
        out_t, w_t = layer(*(torch.from_numpy(x),) * 3, need_weights=True, average_attn_weights=False)
    out, weights = multi_head_attention(x, n_heads=4, **weights_of(layer))
    assert out.dtype == weights.dtype == np.float32
    assert out.shape == (6, 16) and weights.shape == (4, 6, 6)
    assert np.allclose(out, out_t.numpy(), atol=1e-5) and np.allclose(weights, w_t.numpy(), atol=1e-6)


def test_float32_stays_float32_without_biases():
    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    W = [rng.standard_normal((8, 8)).astype(np.float32) for _ in range(4)]
    out, weights = multi_head_attention(x, *W, n_heads=2, causal=True)
    assert out.dtype == weights.dtype == np.float32


# ---------------------------------------------------------------- against a slow loop

def per_head_loop(x, W_Q, W_K, W_V, W_O, n_heads, causal):
    """One head at a time, one query at a time; K/V head j serves query heads j·g .. j·g + g - 1."""
    B, n, _ = x.shape
    d_k = W_Q.shape[1] // n_heads
    n_kv = W_K.shape[1] // d_k
    out = np.zeros((B, n, W_O.shape[1]))
    weights = np.zeros((B, n_heads, n, n))
    for b in range(B):
        z_all = []
        for i in range(n_heads):
            j = i // (n_heads // n_kv)
            q = x[b] @ W_Q[:, i * d_k:(i + 1) * d_k]
            k = x[b] @ W_K[:, j * d_k:(j + 1) * d_k]
            v = x[b] @ W_V[:, j * d_k:(j + 1) * d_k]
            z = np.zeros((n, d_k))
            for t in range(n):
                keys = range(t + 1) if causal else range(n)
                s = np.array([q[t] @ k[u] / np.sqrt(d_k) for u in keys])
                w = np.exp(s - s.max())
                w /= w.sum()
                weights[b, i, t, :len(w)] = w
                z[t] = sum(w_u * v[u] for w_u, u in zip(w, keys))
            z_all.append(z)
        out[b] = np.concatenate(z_all, axis=1) @ W_O
    return out, weights


@pytest.mark.parametrize("n_heads, n_kv_heads, d_k", [(4, 4, 3), (4, 2, 3), (6, 1, 2), (3, 3, 5)])
@pytest.mark.parametrize("causal", [False, True])
def test_equals_a_per_head_loop_including_grouped_query(n_heads, n_kv_heads, d_k, causal):
    d_model = 10
    x = rng.standard_normal((2, 5, d_model))
    W_Q, W_O = rng.standard_normal((d_model, n_heads * d_k)), rng.standard_normal((n_heads * d_k, d_model))
    W_K, W_V = rng.standard_normal((2, d_model, n_kv_heads * d_k))
    out, weights = multi_head_attention(x, W_Q, W_K, W_V, W_O, n_heads=n_heads, causal=causal)
    ref_out, ref_weights = per_head_loop(x, W_Q, W_K, W_V, W_O, n_heads, causal)
    assert np.allclose(out, ref_out, atol=1e-10) and np.allclose(weights, ref_weights, atol=1e-12)


# ---------------------------------------------------------------- bad input

def good():
    return {"x": np.zeros((2, 3, 8)), "W_Q": np.zeros((8, 8)), "W_K": np.zeros((8, 8)), "W_V": np.zeros((8, 8)),
            "W_O": np.zeros((8, 8)), "n_heads": 2}


@pytest.mark.parametrize("change, words", [
    ({"x": np.zeros((2, 3, 8), dtype=np.int32)}, "x must hold floating-point"),
    ({"x": np.zeros((2, 3, 8), dtype=object)}, "x must hold floating-point"),
    ({"x": np.full((2, 3, 8), np.nan)}, "x contains NaN"),
    ({"x": np.zeros(8)}, "x must have 2 or 3 dimensions"),
    ({"x": np.zeros((2, 3, 6))}, "must have d_model=6 rows"),
    ({"W_Q": np.zeros((8, 7))}, "W_Q has 7 columns"),
    ({"W_K": np.zeros((8, 6))}, "W_K \\(8, 6\\) must be \\[d_model, h_kv·d_k\\]"),
    ({"W_K": np.zeros((8, 12)), "W_V": np.zeros((8, 12))}, "h_kv dividing n_heads=2"),
    ({"W_V": np.zeros((8, 4))}, "W_V \\(8, 4\\) must have W_K's shape"),
    ({"W_O": np.zeros((8, 7))}, "W_O \\(8, 7\\) must be"),
    ({"W_O": np.zeros((8, 8), dtype=np.int64)}, "W_O must hold floating-point"),
    ({"W_K": np.full((8, 8), np.inf)}, "W_K contains NaN or infinite"),
    ({"b_Q": np.zeros(7)}, "b_Q must have shape \\(8,\\)"),
    ({"b_O": np.zeros((1, 8))}, "b_O must have shape \\(8,\\)"),
    ({"b_V": np.array([np.nan] * 8)}, "b_V contains NaN"),
])
def test_multi_head_attention_rejects(change, words):
    with pytest.raises(ValueError, match=words):
        multi_head_attention(**{**good(), **change})


def test_only_some_biases():
    args = good()
    x = rng.standard_normal((2, 3, 8))
    args.update(x=x, W_V=rng.standard_normal((8, 8)), W_O=np.eye(8), b_V=np.arange(8.0))
    out, _ = multi_head_attention(**args)  # W_Q = W_K = 0: uniform weights over all keys
    assert np.allclose(out, (x @ args["W_V"] + np.arange(8.0)).mean(axis=1, keepdims=True))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("batched", [True, False])
def test_the_products_without_blas_equal_matmul(monkeypatch, dtype, batched):
    """Pyodide's NumPy has no BLAS: there the projections run as einsum (attention.NO_BLAS)."""
    from mha_core import attention
    draw = np.random.default_rng(7)
    x = draw.standard_normal((2, 5, 12) if batched else (5, 12)).astype(dtype)
    W = [draw.standard_normal(shape).astype(dtype) for shape in ((12, 12), (12, 6), (12, 6), (12, 12))]
    out, weights = multi_head_attention(x, *W, n_heads=4, b_Q=np.ones(12, dtype), causal=True)
    monkeypatch.setattr(attention, "NO_BLAS", True)
    einsum_out, einsum_weights = multi_head_attention(x, *W, n_heads=4, b_Q=np.ones(12, dtype), causal=True)
    assert einsum_out.dtype == dtype and einsum_out.shape == out.shape
    tolerance = 1e-12 if dtype == np.float64 else 1e-5  # float32: rounding of sums in another order
    assert np.allclose(einsum_out, out, rtol=tolerance, atol=tolerance * np.abs(out).max())
    assert np.allclose(einsum_weights, weights, rtol=tolerance, atol=tolerance)


# ---------------------------------------------------------------- the public door: n_heads, flags, ranks

@pytest.mark.parametrize("call, message", [
    (lambda: split_heads(np.zeros((2, 12)), 0), "n_heads must be at least 1, got 0."),
    (lambda: split_heads(np.zeros((2, 12)), 2.5), "n_heads must be a whole number, got 2.5."),
    (lambda: split_heads(np.zeros((2, 12)), None), "n_heads must be a whole number, got None."),
    (lambda: split_heads("abc", 1), "x must hold floating-point numbers"),
    (lambda: merge_heads(np.zeros((2, 3, 4), dtype=np.int8)), "z must hold floating-point numbers"),
    (lambda: softmax([["a"]]), "x must hold floating-point numbers"),
    (lambda: softmax(np.zeros(3), axis=0.0), "axis must be an integer in [-1, 1), got 0.0."),
    (lambda: scaled_dot_product_attention(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), causal="yes"),
     "causal must be true or false, got 'yes'."),
    (lambda: scaled_dot_product_attention(np.zeros((2, 3)), np.zeros((2, 3)), np.zeros((2, 3)), mask=[[1, 0]]),
     "mask must be a bool array, got dtype int64."),
    (lambda: multi_head_attention(**{**good(), "n_heads": 0}), "n_heads must be at least 1, got 0."),
    (lambda: multi_head_attention(**{**good(), "causal": 1}), "causal must be true or false, got 1."),
    (lambda: multi_head_attention(**{**good(), "W_Q": np.zeros(8)}), "W_Q must have 2 dimensions, got shape (8,)."),
])
def test_the_public_functions_refuse_by_name(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.booleans())
def test_valid_calls_give_what_the_functions_themselves_give(B, n, h, d_k, causal):
    x = rng.standard_normal((B, n, h * d_k))
    assert np.array_equal(split_heads(x, h), split_heads.fn(x, h))
    q = split_heads(x, h)
    out, weights = scaled_dot_product_attention(q, q, q, causal=np.bool_(causal))
    out_fn, weights_fn = scaled_dot_product_attention.fn(q, q, q, causal)
    assert np.array_equal(out, out_fn) and np.array_equal(weights, weights_fn)
    assert np.array_equal(merge_heads(out), merge_heads.fn(out))
