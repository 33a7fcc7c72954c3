"""How much a real model's head acts as each kind the explainer teaches: one score per head and kind.

For a head's weights a [n, n] on tokens t [n] (a[i, j]: query i's weight on key j):
    previous_token  = mean over queries i ≥ 1 of a[i, i−1]
    first_token     = mean over queries i ≥ 1 of a[i, 0]
    induction       = mean over the queries i that have an earlier j < i−1 with t[j] = t[i] of the weight on
                      all such j+1 (the token that followed i's token before)
    duplicate_token = mean over the queries i that have an earlier j < i with t[j] = t[i] of the weight on all
                      such j
A score is the share of its attention a counted query puts where the ideal head would: 1 for the ideal, NaN
when no query counts (a text with no repeated token has no induction score).
"""

from __future__ import annotations

import numpy as np

from ..fields import Invalid, arguments
from .model import TokenIds

SCORES = ("previous_token", "first_token", "induction", "duplicate_token")


def ideal_keys(tokens) -> dict[str, np.ndarray]:
    """{kind: [n_q, n_k] bool}: the keys each query's ideal head of that kind attends to (tokens [n])."""
    tokens = _tokens(tokens)
    n = len(tokens)
    i, j = np.indices((n, n))  # [n, n] each: query, key
    same = tokens[:, None] == tokens[None, :]  # [n, n]: key holds the query's token
    induction = np.zeros((n, n), bool)
    induction[:, 1:] = (same & (j < i - 1))[:, :-1]  # key j+1 for each earlier j < i−1 holding i's token
    return {"previous_token": j == i - 1, "first_token": (j == 0) & (i >= 1), "induction": induction,
            "duplicate_token": same & (j < i)}


class Patterns:
    """Attention weights [..., n, n]: floating, finite, each in [0, 1], each row summing to 1."""

    def check(self, name: str, value) -> np.ndarray:
        patterns = np.asarray(value)
        if patterns.dtype.kind != "f" or patterns.ndim < 2 or patterns.shape[-1] != patterns.shape[-2]:
            raise Invalid(f"patterns must be floating [..., n, n] attention weights, got {patterns.dtype} "
                          f"{patterns.shape}")
        sums = patterns.sum(axis=-1)  # [..., n]
        off = np.abs(sums - 1)  # [..., n]
        if not (np.isfinite(sums).all() and off.max() <= SUM_TOLERANCE and patterns.min() >= 0):  # so each ≤ 1 too
            raise Invalid(f"patterns must be probabilities: weights in [0, 1], each row summing to 1 (the smallest "
                          f"weight is {float(patterns.min()):.4g}, a row sums to {float(sums.flat[off.argmax()]):.4g})")
        return patterns


SUM_TOLERANCE = 1e-3  # float32 rows of 8,192 weights sum to 1 within far less


def _patterns_fit(args: dict) -> None:
    if "patterns" in args and "tokens" in args and len(args["tokens"]) != args["patterns"].shape[-1]:
        raise Invalid(f"tokens holds {len(args['tokens'])} ids but patterns are over {args['patterns'].shape[-1]} "
                      f"positions")


@arguments(_patterns_fit, patterns=Patterns(), tokens=TokenIds())
def head_scores(patterns, tokens) -> dict[str, np.ndarray]:
    """patterns [..., n, n] (for instance [n_layers, h, n, n]) on tokens [n] -> {kind: scores [...]}."""
    ideal = ideal_keys(tokens)
    scores = {}
    for kind in SCORES:
        counted = ideal[kind].any(axis=-1)  # [n]: the queries that count
        on_ideal = (patterns * ideal[kind]).sum(axis=-1)  # [..., n, n] -> [..., n]: each query's weight there
        none = np.full(patterns.shape[:-2], np.nan, patterns.dtype)
        scores[kind] = on_ideal[..., counted].mean(axis=-1) if counted.any() else none
    return scores


def _tokens(tokens) -> np.ndarray:
    array = np.asarray(tokens)
    if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu":
        raise ValueError(f"tokens must be a non-empty sequence of token ids, got {tokens!r:.80}")
    return array
