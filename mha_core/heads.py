"""Constructed attention heads: hand-set W_Q, W_K, W_V, W_O that make each head do one job.

Nothing here writes a pattern by hand. A sentence becomes real embeddings (token identity, position,
a boundary flag) and every pattern comes out of multi_head_attention, softmax(q kᵀ / √d_k) with a
causal mask, run on them with constructed weights:

- layer 0, three heads reading the embeddings: previous_token, positional, content;
- layer 1, one head reading the residual stream (embeddings + layer 0's output): induction.
  Layer 0's previous-token head writes "the token before me" into the residual stream (W_O); the
  induction head's W_K reads exactly that (K-composition, Elhage et al. 2021), so a repeated token
  finds what followed its earlier occurrences. Ablating the previous-token head breaks it.

Residual-stream features (d_model = 2·V + n + 1 for V distinct tokens and n tokens):
  token:<t>     one-hot token identity (case-insensitive)           V features
  position:<i>  one-hot position                                    n features
  boundary      1 on punctuation tokens and on the first token      1 feature
  previous:<t>  empty in the embeddings; layer 0 writes it          V features
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np

from .attention import multi_head_attention
from .fields import Choice, ListOf, Text, TextOrTokens, arguments
from .tokens import MAX_TEXT_CHARS, first_tokens, token_key

MAX_TOKENS = 64
HEAD_KINDS = ("previous_token", "positional", "induction", "content", "averaged")
LAYER0 = ("previous_token", "positional", "content")  # the heads of layer 0, in order

# Attention logits (before the softmax) the constructed weights produce. With at most 63 rivals,
# a margin of 12 leaves them at most 63·e^-12 < 0.001 of the attention.
PREV_LOGIT = 12.0  # previous_token: the key one position back
RECENCY = 12.0  # positional: per position of recency
BOUNDARY_LOGIT = RECENCY * MAX_TOKENS + 12.0  # positional: a boundary beats any closer non-boundary
MATCH_LOGIT = 30.0  # content: an earlier occurrence of the same token
SELF_PENALTY = 15.0  # content: a token's own position, so earlier occurrences win when there are any
INDUCTION_LOGIT = 20.0  # induction: a key whose previous token is the query's token
FIRST_PENALTY = 40.0  # induction: position 0 has no previous token (its own token sits there)
SELF_LOGIT = 10.0  # induction: a token's own position, the resting place when nothing matches

# Each head's layer: 0 reads the embeddings, 1 the residual stream; the averaged pattern is no head (None).
HEAD_LAYER = {"previous_token": 0, "positional": 0, "induction": 1, "content": 0, "averaged": None}


TEXT = TextOrTokens(MAX_TEXT_CHARS)
ABLATE = ListOf(Choice(tuple(kind for kind in HEAD_KINDS if kind != "averaged")), max_items=4)


@arguments(text=Text(MAX_TEXT_CHARS, blank=True))
def tokenize(text: str) -> list[str]:
    """The text's first MAX_TOKENS tokens: words, abbreviations, CJK characters one by one, and every other
    grapheme cluster (punctuation, an emoji with its joins, a flag) alone (mha_core.tokens)."""
    return first_tokens(text, MAX_TOKENS)[0]


def given_tokens(text_or_tokens: str | list[str]) -> tuple[list[str], int]:
    """(the first MAX_TOKENS tokens, how many were given) from a text or a list of token strings."""
    if isinstance(text_or_tokens, str):
        return first_tokens(text_or_tokens, MAX_TOKENS)
    return list(text_or_tokens[:MAX_TOKENS]), len(text_or_tokens)


def _is_boundary(token: str) -> bool:
    """A punctuation token (every character in a Unicode punctuation category)."""
    return all(unicodedata.category(c).startswith("P") for c in token)


class _Layout:
    """Where each feature lives in the residual stream, for one sentence."""

    def __init__(self, tokens: list[str]):
        self.keys = [token_key(t) for t in tokens]
        self.vocab = list(dict.fromkeys(self.keys))  # distinct tokens, in order of first appearance
        self.index = {t: i for i, t in enumerate(self.vocab)}
        V, n = len(self.vocab), len(tokens)
        self.n, self.V = n, V
        self.token = slice(0, V)
        self.position = slice(V, V + n)
        self.boundary = V + n
        self.previous = slice(V + n + 1, 2 * V + n + 1)
        self.d_model = 2 * V + n + 1

    def features(self) -> list[str]:
        return ([f"token:{t}" for t in self.vocab] + [f"position:{i}" for i in range(self.n)]
                + ["boundary"] + [f"previous:{t}" for t in self.vocab])

    def embed(self, tokens: list[str]) -> np.ndarray:
        """[n, d_model]: one-hot token, one-hot position, boundary flag; previous:* left at 0."""
        x = np.zeros((self.n, self.d_model))
        rows = np.arange(self.n)
        x[rows, [self.index[k] for k in self.keys]] = 1.0
        x[rows, self.position.start + rows] = 1.0
        x[:, self.boundary] = [i == 0 or _is_boundary(t) for i, t in enumerate(tokens)]
        return x


def _head(L: _Layout, d_head: int) -> dict[str, np.ndarray]:
    """Zero weights of one head: W_Q, W_K, W_V [d_model, d_head], W_O [d_head, d_model]."""
    shape = (L.d_model, d_head)
    return {"W_Q": np.zeros(shape), "W_K": np.zeros(shape), "W_V": np.zeros(shape), "W_O": np.zeros(shape[::-1])}


def _copy_token(L: _Layout, W: dict) -> None:
    """W_V: the key's token identity into head dims 0..V-1."""
    W["W_V"][L.token, :L.V] = np.eye(L.V)


def _previous_token(L: _Layout, d_head: int) -> dict:
    W = _head(L, d_head)
    P = L.position.start
    W["W_Q"][P + 1 + np.arange(L.n - 1), np.arange(L.n - 1)] = PREV_LOGIT  # query at i -> direction i - 1
    W["W_K"][L.position, :L.n] = np.eye(L.n)  # key at j -> direction j
    _copy_token(L, W)
    W["W_O"][:L.V, L.previous] = np.eye(L.V)  # writes the previous token into previous:*
    return W


def _positional(L: _Layout, d_head: int) -> dict:
    W = _head(L, d_head)
    W["W_Q"][L.position, 0] = 1.0  # every query is the same unit vector
    W["W_K"][L.boundary, 0] = BOUNDARY_LOGIT
    W["W_K"][L.position, 0] = RECENCY * np.arange(L.n)  # later keys score higher
    _copy_token(L, W)
    return W


def _content(L: _Layout, d_head: int) -> dict:
    W = _head(L, d_head)
    W["W_Q"][L.token, :L.V] = MATCH_LOGIT * np.eye(L.V)  # same token: +MATCH_LOGIT
    W["W_K"][L.token, :L.V] = np.eye(L.V)
    W["W_Q"][L.position, L.V:L.V + L.n] = -SELF_PENALTY * np.eye(L.n)  # same position: -SELF_PENALTY
    W["W_K"][L.position, L.V:L.V + L.n] = np.eye(L.n)
    _copy_token(L, W)
    return W


def _induction(L: _Layout, d_head: int) -> dict:
    W = _head(L, d_head)
    W["W_Q"][L.token, :L.V] = INDUCTION_LOGIT * np.eye(L.V)  # the query's token ...
    W["W_K"][L.previous, :L.V] = np.eye(L.V)  # ... against the key's previous token (K-composition)
    W["W_Q"][L.position, L.V] = 1.0  # a constant query direction ...
    W["W_K"][L.position.start, L.V] = -FIRST_PENALTY  # ... that pushes position 0 down
    W["W_Q"][L.position, L.V + 1:] = SELF_LOGIT * np.eye(L.n)  # with no match, rest on itself
    W["W_K"][L.position, L.V + 1:] = np.eye(L.n)
    _copy_token(L, W)
    return W


def _scaled(W: dict, d_head: int) -> dict:
    """W_Q times √d_head, so that q·k / √d_head gives back the logits set above."""
    return {**W, "W_Q": W["W_Q"] * math.sqrt(d_head)}


def _construct(tokens: list[str]) -> tuple[_Layout, dict[str, dict]]:
    L = _Layout(tokens)
    d0, d1 = L.V + L.n, L.V + 1 + L.n  # layer 0's three heads share one width
    builders = {"previous_token": (_previous_token, d0), "positional": (_positional, d0),
                "content": (_content, d0), "induction": (_induction, d1)}
    return L, {kind: _scaled(build(L, d), d) for kind, (build, d) in builders.items()}


def _run(tokens: list[str], ablate: tuple[str, ...]):
    """Run both layers; returns (layout, weights by kind, x, residual, patterns by kind)."""
    L, W = _construct(tokens)
    for kind in ablate:  # an ablated head still attends, but writes nothing
        W[kind]["W_O"] = np.zeros_like(W[kind]["W_O"])
    x = L.embed(tokens)  # [n, d_model]
    layer0 = {name: np.concatenate([W[kind][name] for kind in LAYER0], axis=1)  # [d_model, 3·d_head]
              for name in ("W_Q", "W_K", "W_V")}
    layer0["W_O"] = np.concatenate([W[kind]["W_O"] for kind in LAYER0])  # [3·d_head, d_model]
    # .fn: multi_head_attention without its argument checks (the weights are built here)
    out0, weights0 = multi_head_attention.fn(x, **layer0, n_heads=len(LAYER0), causal=True)  # [n, d_model], [3, n, n]
    residual = x + out0  # [n, d_model]: layer 1 reads the embeddings plus layer 0's output
    _, weights1 = multi_head_attention.fn(residual, **W["induction"], n_heads=1, causal=True)  # [1, n, n]
    patterns = dict(zip(LAYER0, weights0))
    patterns["induction"] = weights1[0]
    patterns = {kind: patterns[kind] for kind in HEAD_KINDS[:-1]}
    patterns["averaged"] = sum(patterns.values()) / len(patterns)
    return L, W, x, residual, patterns


def first_query(tokens: list[str]) -> int:
    """The query a reader is shown first: the first token seen before (where the heads disagree most),
    else the last token."""
    seen = set()
    for i, key in enumerate(token_key(t) for t in tokens):
        if key in seen:
            return i
        seen.add(key)
    return len(tokens) - 1


@arguments(text_or_tokens=TEXT, ablate=ABLATE)
def head_patterns(text_or_tokens, ablate=()) -> dict:
    """Attention patterns of the constructed heads on a text (or a list of tokens).

    Returns {"tokens": [...], "heads": {kind: [n, n] array, row = query, column = key},
    "boundaries": [bool per token], "truncated": bool, "n_tokens_given": int, "first_query": the row to show first}.
    At most 64 tokens are used; longer input is cut and reported (truncated, n_tokens_given).
    ablate: head kinds whose output is zeroed before layer 1; ("previous_token",) breaks induction.
    """
    tokens, given = given_tokens(text_or_tokens)
    L, _, x, _, patterns = _run(tokens, tuple(ablate))
    return {"tokens": tokens, "heads": patterns, "boundaries": [bool(b) for b in x[:, L.boundary]],
            "truncated": given > len(tokens), "n_tokens_given": given, "first_query": first_query(tokens)}


@arguments(text_or_tokens=TEXT, ablate=ABLATE)
def head_weights(text_or_tokens, ablate=()) -> dict:
    """The embeddings and constructed weights behind head_patterns, to recompute any pattern by hand.

    pattern = softmax(causal(inp @ W_Q @ (inp @ W_K)ᵀ / √d_head)), where inp is "x" (the
    embeddings) for layer 0 and "residual" (x plus layer 0's output) for layer 1. Returns
    {"tokens", "truncated", "n_tokens_given", "features": [d_model labels], "x": [n, d_model],
    "residual": [n, d_model], "heads": {kind: {"layer", "input", "d_head", "W_Q", "W_K", "W_V",
    "W_O", "ablated"}}}; "averaged" has its layer (None) only.
    """
    tokens, given = given_tokens(text_or_tokens)
    L, W, x, residual, _ = _run(tokens, tuple(ablate))
    heads = {}
    for kind in HEAD_KINDS:
        info = {"layer": HEAD_LAYER[kind]}
        if kind in W:
            info.update(W[kind], input="residual" if kind == "induction" else "x",
                        d_head=W[kind]["W_Q"].shape[1], ablated=kind in ablate)  # W_O as used
        heads[kind] = info
    return {"tokens": tokens, "truncated": given > len(tokens), "n_tokens_given": given,
            "features": L.features(), "x": x, "residual": residual, "heads": heads}
