"""The worked example of the mechanism page: multi-head attention small enough to read every number.

n = 3 tokens, d_model = 4, h = 2 heads of d_k = 2, no mask and no biases. The input and the weights
are drawn from a seed and rounded to one decimal, so the reader can redo any product by hand. Every
matrix the page shows is here, computed by the same functions as the rest of mha_core (the page's text
of each is mha_page.views.worked's).
"""

from __future__ import annotations

import math

import numpy as np

from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .fields import Choice, ListOf, Whole, arguments
from .rng import Random

VOCAB = ("the", "cat", "sat", "on", "a", "mat")  # each word's embedding is drawn from the seed
TOKENS = ("the", "cat", "sat")  # the sentence shown first
N_TOKENS, D_MODEL, N_HEADS = len(TOKENS), 4, 2
D_HEAD = D_MODEL // N_HEADS
MAX_SEED = 2**32 - 1
INPUTS = ("X", "W_Q", "W_K", "W_V", "W_O", "W_O_0", "W_O_1")  # drawn with one decimal


def _drawn(rng: Random, shape: tuple[int, ...], scale: float) -> np.ndarray:
    return np.round(rng.standard_normal(shape) * scale, 1) + 0.0  # + 0.0 turns -0.0 into 0.0


def worked_steps(seed: int = 1, tokens=TOKENS) -> dict[str, np.ndarray]:
    """Every matrix of the example by name, as arrays. Per head i (0 and 1): q_i, k_i, v_i (its column
    blocks of Q, K, V), scores_i, weights_i, z_i, W_O_i (its row block of W_O) and part_i = z_i @ W_O_i;
    out is the sum of the parts."""
    rng = Random(seed - 1)  # seeds count from 1 for the reader
    embeddings = _drawn(rng, (len(VOCAB), D_MODEL), 1.0)  # [V, d_model]: one row per word
    X = embeddings[[VOCAB.index(t) for t in tokens]]  # [n, d_model]: a repeated word repeats its row
    W_Q, W_K, W_V, W_O = _drawn(rng, (4, D_MODEL, D_MODEL), 1.0)  # [d_model, d_model] each
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # [n, d_model] each: all heads side by side
    q_heads, k_heads, v_heads = (split_heads(a, N_HEADS) for a in (Q, K, V))  # [h, n, d_k]
    scores = q_heads @ np.swapaxes(k_heads, -1, -2) / math.sqrt(D_HEAD)  # [h, n, n]
    z, weights = scaled_dot_product_attention(q_heads, k_heads, v_heads)  # [h, n, d_k], [h, n, n]
    merged = merge_heads(z)  # [h, n, d_k] -> [n, h·d_k]: [z_0 z_1]
    steps = {"X": X, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "Q": Q, "K": K, "V": V,
             "merged": merged, "W_O": W_O, "out": merged @ W_O}  # out: [n, h·d_k] @ [h·d_k, d_model]
    for i in range(N_HEADS):
        rows = slice(i * D_HEAD, (i + 1) * D_HEAD)
        steps |= {f"q_{i}": q_heads[i], f"k_{i}": k_heads[i], f"v_{i}": v_heads[i], f"scores_{i}": scores[i], f"weights_{i}": weights[i], f"z_{i}": z[i],
                  f"W_O_{i}": W_O[rows], f"part_{i}": z[i] @ W_O[rows]}  # [n, d_k] @ [d_k, d_model]
    return steps


@arguments(seed=Whole(1, MAX_SEED + 1), tokens=ListOf(Choice(VOCAB), len(TOKENS), length=len(TOKENS)))
def worked_example(seed: int = 1, tokens=TOKENS) -> dict:
    """The example for a seed (1 to 2**32) and 3 words of VOCAB, as plain data: {seed, tokens, vocab, n,
    d_model, n_heads, d_head, matrices: {name: {shape, values}}}. The page's text: mha_page.views.worked."""
    steps = worked_steps(seed, tokens)
    return {
        "seed": int(seed), "tokens": list(tokens), "vocab": list(VOCAB), "n": N_TOKENS, "d_model": D_MODEL,
        "n_heads": N_HEADS, "d_head": D_HEAD,
        "matrices": {name: {"shape": list(a.shape), "values": a.tolist()} for name, a in steps.items()},
    }
