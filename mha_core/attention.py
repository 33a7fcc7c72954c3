"""Multi-head attention in NumPy: one big projection, then a reshape that exposes the heads.

Shapes use B (batch), n (sequence), d_model, h (n_heads), h_kv (n_kv_heads), d_k (d_head).
Weights follow the x @ W convention: W_Q is [d_model, h·d_k], W_O is [h·d_k, d_model].
Every function keeps the input's floating dtype: float32 in, float32 out.
"""

from __future__ import annotations

import functools
import math
import numbers
import sys

import numpy as np

from .fields import Anything, Array, Flag, Maybe, Whole, arguments

# Pyodide's NumPy is built without BLAS: its matmul is a plain strided loop there.
NO_BLAS = sys.platform == "emscripten"


HEADS = Whole(1, 2**63 - 1)  # any number of heads: x's last axis must divide by it (_heads_divide, _weights_fit)
X = Array(values="no +inf")  # -inf marks a masked score
MOVED = Array(values="any")  # split and merge only move the numbers


def _axis_fits(args: dict) -> None:
    axis, ndim = args.get("axis", -1), args["x"].ndim
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -ndim <= axis < max(ndim, 1):
        raise ValueError(f"axis must be an integer in [{-ndim}, {ndim}), got {axis!r}.")


def _heads_divide(args: dict) -> None:
    x, n_heads = args["x"], args["n_heads"]
    if x.shape[-1] % n_heads:
        raise ValueError(f"x's last axis ({x.shape[-1]}) is not divisible by n_heads={n_heads}.")


def _softmax_(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Softmax in place along axis (x is overwritten and returned)."""
    with np.errstate(invalid="ignore"):  # a row of only -inf gives NaN, as documented in softmax
        x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x


@arguments(_axis_fits, x=X, axis=Anything())
def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along axis; returns a new array of x's dtype.

    The row maximum is subtracted first, so large entries cannot overflow and -inf entries (masked
    positions) get exactly 0. A row whose entries are all -inf (every position masked) has no
    distribution: its result is NaN, as with torch.softmax. NaN or +inf in x is a ValueError.
    """
    return _softmax_(x.copy(), axis=axis)


@arguments(_heads_divide, x=Array(ndim=(2, 3), values="any"), n_heads=HEADS)
# --8<-- [start:split_heads]
def split_heads(x, n_heads: int) -> np.ndarray:
    """[B, n, d_model] -> [B, h, n, d_k], a view of x (no data is copied).

    The reshape relabels each token's d_model numbers as h contiguous slices of d_k; the transpose
    puts the head axis before the sequence axis. Also works unbatched: [n, d_model] -> [h, n, d_k].
    """
    d_k = x.shape[-1] // n_heads
    x = x.reshape(*x.shape[:-1], n_heads, d_k)  # [B, n, d_model] -> [B, n, h, d_k]
    return x.swapaxes(-2, -3)  # [B, n, h, d_k] -> [B, h, n, d_k]
# --8<-- [end:split_heads]


@arguments(z=Array(ndim=(3, 4), values="any"))
# --8<-- [start:merge_heads]
def merge_heads(z) -> np.ndarray:
    """[B, h, n, d_k] -> [B, n, h·d_k], the inverse of split_heads.

    Transpose back, then reshape. z as attention computes it is stored head by head; after the
    transpose one token's heads are not next to each other in memory, so the reshape has to copy
    (unless h or n is 1). (merge_heads(split_heads(x)) is a view of x again: x was token by token.)
    """
    z = z.swapaxes(-2, -3)  # [B, h, n, d_k] -> [B, n, h, d_k]
    return z.reshape(*z.shape[:-2], -1)  # [B, n, h, d_k] -> [B, n, h·d_k]
# --8<-- [end:merge_heads]


def matmul_2d(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b: [i, k] @ [k, j] -> [i, j], by BLAS where NumPy has it.

    Without BLAS, einsum over a's rows and bᵀ's rows: every output is then a dot product of two
    contiguous vectors, einsum's fastest kernel, 1.3 to 2 times faster than matmul's loop.
    """
    if not NO_BLAS:
        return a @ b
    return np.einsum("ik,jk->ij", np.ascontiguousarray(a), np.ascontiguousarray(b.T))


def project(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """x @ W for a weight matrix: [..., k] @ [k, j] -> [..., j], every position in one 2-D product."""
    return matmul_2d(x.reshape(-1, x.shape[-1]), W).reshape(*x.shape[:-1], W.shape[1])


def _broadcasts_to(shape: tuple, target: tuple) -> bool:
    try:
        return np.broadcast_shapes(shape, target) == target
    except ValueError:
        return False


# --8<-- [start:attend]
@functools.lru_cache(maxsize=64)
def future_keys(n_q: int, n_k: int) -> np.ndarray:
    """[n_q, n_k] bool, read-only, made once per size: key j comes after query i (j > i), the causal mask."""
    future = ~np.tri(n_q, n_k, dtype=bool)
    future.flags.writeable = False
    return future


def _attend(q, k, v, causal: bool = False, mask=None):
    """Attention without argument checks: the shared kernel of the two public functions."""
    d_k = q.shape[-1]
    scores = q @ k.mT  # [..., n_q, d_k] @ [..., d_k, n_k] -> [..., n_q, n_k]
    scores *= scores.dtype.type(1 / math.sqrt(d_k))  # a dtype scalar: float32 stays float32
    blocked = None if mask is None else ~mask  # True where a query may not attend to a key
    if causal:
        future = future_keys(*scores.shape[-2:])
        blocked = future if blocked is None else blocked | future
    if blocked is not None:
        np.copyto(scores, -np.inf, where=blocked)
    weights = _softmax_(scores)  # in place: weights reuses the scores buffer
    return np.matmul(weights, v), weights  # [..., n_q, n_k] @ [..., n_k, d_v] -> [..., n_q, d_v]
# --8<-- [end:attend]


def qkv_fit(args: dict) -> None:
    q, k, v, mask = args["q"], args["k"], args["v"], args.get("mask")
    for name in "qkv":
        if args[name].ndim < 2:
            raise ValueError(f"{name} must have at least 2 dimensions, got shape {args[name].shape}.")
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(f"k's last axis ({k.shape[-1]}) must equal q's (d_k={q.shape[-1]}).")
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(f"v has {v.shape[-2]} positions but k has {k.shape[-2]}.")
    try:
        scores_shape = (*np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]), q.shape[-2], k.shape[-2])
    except ValueError:
        raise ValueError(f"the leading axes of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast.") from None
    if mask is not None and not _broadcasts_to(mask.shape, scores_shape):
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' shape {scores_shape}.")


@arguments(qkv_fit, q=Array(), k=Array(), v=Array(), causal=Flag(), mask=Maybe(Array(kind="b")))
# --8<-- [start:scaled_dot_product_attention]
def scaled_dot_product_attention(q, k, v, causal: bool = False, mask=None):
    """softmax(q kᵀ / √d_k) v -> (out [..., n_q, d_v], weights [..., n_q, n_k]).

    q is [..., n_q, d_k], k is [..., n_k, d_k], v is [..., n_k, d_v]; leading axes broadcast.
    mask is a bool array broadcastable to [..., n_q, n_k], True where a query may attend to a key.
    causal=True also masks every key after the query (key j > query i). A query with every key
    masked gets NaN weights (see softmax).
    """
    return _attend(q, k, v, causal=causal, mask=mask)
# --8<-- [end:scaled_dot_product_attention]


def _weights_fit(args: dict) -> None:
    """multi_head_attention's weights fit x, n_heads and each other."""
    d_model, n_heads = args["x"].shape[-1], args["n_heads"]
    W_Q, W_K, W_V, W_O = (args[name] for name in ("W_Q", "W_K", "W_V", "W_O"))
    if W_Q.shape[1] < n_heads or W_Q.shape[1] % n_heads:
        raise ValueError(f"W_Q has {W_Q.shape[1]} columns, not a positive multiple of n_heads={n_heads}.")
    d_k = W_Q.shape[1] // n_heads
    if W_Q.shape[0] != d_model or W_K.shape[0] != d_model:
        raise ValueError(f"W_Q {W_Q.shape} and W_K {W_K.shape} must have d_model={d_model} rows (x's last axis).")
    if W_K.shape[1] < d_k or W_K.shape[1] % d_k or n_heads % (W_K.shape[1] // d_k):
        raise ValueError(f"W_K {W_K.shape} must be [d_model, h_kv·d_k] with d_k={d_k} and h_kv dividing "
                         f"n_heads={n_heads}.")
    if W_V.shape != W_K.shape:
        raise ValueError(f"W_V {W_V.shape} must have W_K's shape {W_K.shape}.")
    if W_O.shape != (W_Q.shape[1], d_model):
        raise ValueError(f"W_O {W_O.shape} must be [h·d_k, d_model] = {(W_Q.shape[1], d_model)}.")
    for name, size in (("b_Q", W_Q.shape[1]), ("b_K", W_K.shape[1]), ("b_V", W_V.shape[1]), ("b_O", d_model)):
        if args.get(name) is not None and args[name].shape != (size,):
            raise ValueError(f"{name} must have shape ({size},), got {args[name].shape}.")


def _fused_bias(W_Q, W_K, b_Q, b_K, b_V):
    """[d_q + 2·d_kv], the Q/K/V biases side by side (zeros for one not given), or None if none is."""
    if b_Q is None and b_K is None and b_V is None:
        return None
    widths = (W_Q.shape[1], W_K.shape[1], W_K.shape[1])
    return np.concatenate([np.zeros(width, W_Q.dtype) if b is None else b for b, width in zip((b_Q, b_K, b_V), widths)])


# --8<-- [start:grouped_attention]
def _grouped_attention(q_heads, k_heads, v_heads, causal: bool):
    """[B, h, n, d_k] queries, [B, h_kv, n, d_k] keys/values -> z [B, h, n, d_k], weights [B, h, n, n].

    Query heads g·j .. g·j + g - 1 share key/value head j (g = h / h_kv), as in grouped-query
    attention; with h_kv = h this is plain multi-head attention.
    """
    B, h, n, d_k = q_heads.shape
    h_kv = k_heads.shape[1]
    q_groups = q_heads.reshape(B, h_kv, h // h_kv, n, d_k)  # [B, h, n, d_k] -> [B, h_kv, g, n, d_k] (a view)
    z, weights = _attend(q_groups, k_heads[:, :, None], v_heads[:, :, None], causal)  # [B, h_kv, g, n, d_k]
    return z.reshape(B, h, n, d_k), weights.reshape(B, h, n, n)  # [B, h_kv, g, ...] -> [B, h, ...] (views)
# --8<-- [end:grouped_attention]


WEIGHT, BIAS = Array(ndim=(2,)), Maybe(Array())  # a bias of the wrong shape: _weights_fit says which


# --8<-- [start:multi_head_attention]
def attention_steps(x, W_Q, W_K, W_V, W_O, n_heads, b_QKV, b_O, causal) -> dict[str, np.ndarray]:
    """Every intermediate array of one forward pass, by name (arguments already checked).

    x is [B, n, d_model]. The softmax runs in place, so "scores" and "weights" are one buffer
    (holding the weights); shape_report reads this dict to find which steps are views.
    """
    d_q, d_kv = W_Q.shape[1], W_K.shape[1]
    h_kv = d_kv // (d_q // n_heads)
    W_QKV = np.concatenate((W_Q, W_K, W_V), axis=1)  # [d_model, d_q + 2·d_kv]: one big projection
    qkv = project(x, W_QKV)  # [B, n, d_model] @ [d_model, d_q + 2·d_kv] -> [B, n, d_q + 2·d_kv]
    if b_QKV is not None:
        qkv += b_QKV
    q, k, v = qkv[..., :d_q], qkv[..., d_q:d_q + d_kv], qkv[..., d_q + d_kv:]  # views: [B, n, d_q], [B, n, d_kv] ×2
    q_heads = split_heads.fn(q, n_heads)  # [B, n, h·d_k] -> [B, h, n, d_k]; .fn: without the argument checks
    k_heads = split_heads.fn(k, h_kv)  # [B, n, h_kv·d_k] -> [B, h_kv, n, d_k]
    v_heads = split_heads.fn(v, h_kv)  # [B, n, h_kv·d_k] -> [B, h_kv, n, d_k]
    z, weights = _grouped_attention(q_heads, k_heads, v_heads, causal)  # [B, h, n, d_k], [B, h, n, n]
    merged = merge_heads.fn(z)  # [B, h, n, d_k] -> [B, n, h·d_k]
    out = project(merged, W_O)  # [B, n, h·d_k] @ [h·d_k, d_model] -> [B, n, d_model]
    if b_O is not None:
        out += b_O
    return {"x": x, "q": q, "k": k, "v": v, "q_heads": q_heads, "k_heads": k_heads, "v_heads": v_heads,
            "scores": weights, "weights": weights, "z": z, "merged": merged, "out": out}


@arguments(_weights_fit, x=Array(ndim=(2, 3)), W_Q=WEIGHT, W_K=WEIGHT, W_V=WEIGHT, W_O=WEIGHT,
           n_heads=HEADS, b_Q=BIAS, b_K=BIAS, b_V=BIAS, b_O=BIAS, causal=Flag())
def multi_head_attention(x, W_Q, W_K, W_V, W_O, n_heads: int, b_Q=None, b_K=None, b_V=None, b_O=None,
                         causal: bool = False):
    """Multi-head self-attention -> (out [B, n, d_model], weights [B, h, n, n]).

    x is [B, n, d_model] or unbatched [n, d_model] (then out is [n, d_model], weights [h, n, n]).
    W_Q is [d_model, h·d_k] and W_O [h·d_k, d_model]; W_K and W_V are [d_model, h_kv·d_k], so
    h_kv = h is multi-head attention and a narrower W_K/W_V is grouped-query (h_kv heads) or
    multi-query (h_kv = 1) attention. Biases are optional. The three projections run as one matmul
    over the concatenated weights; the heads are then only a reshape of its result.
    """
    b_QKV = _fused_bias(W_Q, W_K, b_Q, b_K, b_V)
    batched = x.ndim == 3
    steps = attention_steps(x if batched else x[None], W_Q, W_K, W_V, W_O, n_heads, b_QKV, b_O, causal)
    out, weights = steps["out"], steps["weights"]  # [B, n, d_model], [B, h, n, n]
    return (out, weights) if batched else (out[0], weights[0])
# --8<-- [end:multi_head_attention]
