"""The heads widget's view: mha_core.heads' patterns and weights as the reader reads them (the form mha_page.views
describes).

heads_view(...) -> {"data", "outputs", "names", "colours", "heads", "query"}: "outputs" holds what every head
shares (the tokens on both axes and in the sentence, the query picker, the notice of a cut text, the heatmap's
rows); "names" the words that name each cell; "colours" the palette's steps; "heads" holds, for each head kind,
its "cells" (each drawn cell's weight as text and its shade, a step of "colours", row by row: two flat lists, so
that a 40-token sentence's view stays small) and the "outputs" it fills (its words, what the knock-out does to it),
bound after the shared ones, so that switching heads needs no Python; "query" is the row shown first. heads_weights_view(...) -> {"heads": {kind:
outputs}}: each head's W_Q, W_K, W_V and W_O as tables of their rows and columns that are not all zero.
"""

from __future__ import annotations

import numpy as np

from mha_core.heads import HEAD_KINDS, HEAD_LAYER, TEXT, head_patterns, head_weights
from mha_core.fields import Labelled
from . import cell_names, clip, decimal, declared_as
from .palette import COLOURS, STEPS

MATRICES = ("W_Q", "W_K", "W_V", "W_O")

# Each head's name and what its queries and keys read.
WORDS = {
    "previous_token": {
        "label": "Previous token",
        "q_reads": "the query's position i",
        "k_reads": "the key's position j; the score is high when j = i - 1",
        "explanation": "Each token looks at the token just before it. Its output (the previous "
                       "token's identity) is written into the residual stream for layer 1.",
    },
    "positional": {
        "label": "Positional / delimiter",
        "q_reads": "nothing that changes: every query is the same",
        "k_reads": "whether the key is a boundary (punctuation or the first token), and how recent it is",
        "explanation": "Each token looks back to the most recent punctuation mark, or to the first "
                       "token when there is none: a head that tracks where the clause began.",
    },
    "induction": {
        "label": "Induction",
        "q_reads": "the query's own token (and its position)",
        "k_reads": "the key's previous token, which the previous-token head wrote into the residual "
                   "stream (K-composition), and the key's position",
        "explanation": "A repeated token looks at the tokens that followed its earlier occurrences "
                       "(A B … A → B); a token with no earlier occurrence rests on itself. Two heads "
                       "in two layers work as one circuit.",
    },
    "content": {
        "label": "Content / same token",
        "q_reads": "the query's token (and its position, to skip itself)",
        "k_reads": "the key's token (and its position)",
        "explanation": "A token seen before looks at its earlier occurrences; a new token looks at itself.",
    },
    "averaged": {
        "label": "One averaged head",
        "shown": "four heads averaged into one",  # not a head of the model: "the … head" would misname it
        "q_reads": "—",
        "k_reads": "—",
        "explanation": "The mean of the four patterns: one softmax has to blur the four relationships "
                       "together (PyTorch's average_attn_weights=True reports this mean too).",
    },
}

# What each layer's heads read (HEAD_LAYER: 0, 1 or None for the averaged pattern).
SENTENCE = Labelled(TEXT, "Your sentence")  # the text_or_tokens the widget's sentence box fills
LAYERS = {0: "0, reading the embeddings x",
          1: "1, reading the residual stream: x plus the output of layer 0",
          None: "none: this is the mean of the four patterns, not a head of the model"}

# What zeroing the previous-token head's output does to the pattern of each head shown.
KNOCKED_OUT = {
    "induction": "Ablated pattern: the previous-token head is knocked out (its output zeroed), so a repeated token "
                 "no longer finds what followed its earlier occurrence.",
    "averaged": "With the previous-token head knocked out: this mean includes the ablated induction pattern.",
    "previous_token": "This head is knocked out: it still attends as shown, but its output is zeroed.",
    "positional": "Unchanged by the knock-out: layer 0 does not read the previous-token head's output.",
    "content": "Unchanged by the knock-out: layer 0 does not read the previous-token head's output.",
}

INPUTS = {"x": "the embeddings", "residual": "the residual stream: x plus layer 0's output"}


# The palette's steps as CSS writes them back (a cell's inline background-color reads the same, so the binding
# writes only a colour that changed).
RGB = [f"rgb({int(c[1:3], 16)}, {int(c[3:5], 16)}, {int(c[5:7], 16)})" for c in COLOURS]


def notice(shown: int, given: int) -> str:
    """What a reader is told about a text cut to the tokens the heads take, or ""."""
    return f"Only the first {shown} of the {given:,} tokens are shown: these heads take at most {shown}." \
        if given > shown else ""


def _grid(tokens: list[str]) -> dict:
    """The heatmap every head shares: a row per query (its label, its words, its n cells, drawn up to the query)."""
    n = len(tokens)
    return {"rows": [{"outputs": {"query-token": {"text": t, "data": {"token-index": q}}}, "count": n,
                      "data": {"attends": f"Where the query “{clip(t)}” (position {q}) attends, in the sentence "
                                          "(choose a token to read its weight):"}} for q, t in enumerate(tokens)]}


def _cells(pattern) -> dict:
    """One head's drawn cells (k <= q, row by row; n(n+1)/2 of them): each weight's text and its shade, the step of
    COLOURS that colours it."""
    q, k = np.tril_indices(len(pattern))
    weights = np.asarray(pattern)[q, k]  # [n(n+1)/2]
    shades = (np.clip(weights, 0, 1) * STEPS + 0.5).astype(int).tolist()
    return {"weight": [f"{w:.4f}" for w in weights.tolist()], "shade": shades}  # a weight in [0, 1]: no sign


def _head(kind: str, result: dict, ablate: tuple) -> dict:
    """What one head shows: its cells, and the outputs it fills (its words, what the knock-out does to it)."""
    words, knocked = WORDS[kind], KNOCKED_OUT[kind] if ablate else ""
    return {"cells": _cells(result["heads"][kind]), "outputs": {
        "label": words["label"], "shown": words.get("shown", f"{words['label'].lower()} head"), "how-label": words["label"],
        "layer": LAYERS[HEAD_LAYER[kind]],
        "q_reads": words["q_reads"], "k_reads": words["k_reads"], "explanation": words["explanation"],
        "averaged": {"hidden": kind != "averaged"}, "ablated": {"hidden": kind not in ablate},
        "ablation": {"text": knocked, "hidden": not knocked}}}


# What the patterns shown are, when they are not of what the controls hold: of another sentence, or with the
# knock-out the other way; and what they wait for.
INSTEAD = {"example": "the patterns of the built-in example sentence, not of the sentence in the box",
           "before": "the patterns of the sentence before, not of the sentence in the box",
           "ablated": "the patterns with the knock-out, not without it",
           "clean": "the patterns without the knock-out, not with it"}
WAITS = {"blank": "Type a sentence to see its own.",
         "failed": "Python could not compute them: see the message above.",
         "computing": "Computing them…",
         "waiting": "Waiting for Python to start in your browser to compute them."}


def stale_lines() -> dict:
    """The stale line for each case, "{instead} {waits}" (INSTEAD's and WAITS' keys): the widget picks one."""
    return {f"{i} {w}": f"Shown: {instead}. {waits}" for i, instead in INSTEAD.items() for w, waits in WAITS.items()}


@declared_as(head_patterns, text_or_tokens=SENTENCE)
def heads_view(text_or_tokens, ablate=()) -> dict:
    """The widget's view of a text (or a list of tokens), with the heads of ablate knocked out."""
    ablate = tuple(ablate)
    result = head_patterns.fn(text_or_tokens, ablate)
    tokens, n = result["tokens"], len(result["tokens"])
    cut = notice(n, result["n_tokens_given"])
    outputs = {"keys": {"rows": [{"outputs": {"key-token": {"text": t, "data": {"token-index": i}}}}
                                 for i, t in enumerate(tokens)]},
               "sentence": {"rows": [{"text": t, "data": {"token-index": i}} for i, t in enumerate(tokens)]},
               "queries": {"rows": [{"text": f"{i}: {clip(t)}"} for i, t in enumerate(tokens)]},
               "notice": {"text": cut, "hidden": not cut}, "grid": _grid(tokens)}
    return {"data": {"tokens": n, "ablate": "true" if ablate else "false"}, "outputs": outputs,
            "names": cell_names(tokens), "colours": RGB, "heads": {kind: _head(kind, result, ablate) for kind in HEAD_KINDS},
            "query": result["first_query"]}


def matrix_text(value: float) -> str:
    """A constructed weight as its table shows it: "·" for 0, else to 2 decimals without trailing zeros."""
    if value == 0:
        return "·"
    return decimal(value, 2).rstrip("0").rstrip(".")


def _matrix(name: str, M, row_labels: list[str], col_labels: list[str]) -> dict:
    """One matrix as slots: its table of the rows and columns that are not all zero, or the words for all zero."""
    rows = [i for i, row in enumerate(M) if any(v != 0 for v in row)]
    cols = [j for j in range(len(M[0])) if any(row[j] != 0 for row in M)]
    size = f" [{len(M)} × {len(M[0])}]"
    if not rows:
        return {f"{name}-table": {"hidden": True}, f"{name}-zero": {"hidden": False, "outputs": {
                "zero-text": f"{size}: all zero, so this head writes nothing into the residual stream."}}}
    return {f"{name}-table": {"hidden": False, "outputs": {
                "caption": f"{size}: the {len(rows)} rows and {len(cols)} columns that are not all zero",
                "cols": {"rows": [col_labels[j] for j in cols]},
                "rows": {"rows": [{"outputs": {"row-label": row_labels[i]},
                                   "rows": [matrix_text(M[i][j]) for j in cols]} for i in rows]}}},
            f"{name}-zero": {"hidden": True}}


def _weights(reply: dict, kind: str) -> dict:
    """The outputs of head kind's matrices: an introduction and the four tables (none for the averaged head)."""
    head = reply["heads"][kind]
    if "W_Q" not in head:
        empty = {f"{name}-{part}": {"hidden": True} for name in MATRICES for part in ("table", "zero")}
        return empty | {"intro": "This pattern has no weights of its own: it is computed from the four heads' patterns."}
    dims = [f"dim {i}" for i in range(head["d_head"])]
    inp = head["input"]
    out = {"intro": f"pattern = softmax(causal({inp} W_Q ({inp} W_K)ᵀ / √d_head)), where {inp} is {INPUTS[inp]}; "
                    f"d_model = {len(reply['features'])}, d_head = {head['d_head']}. W_Q carries the factor "
                    "√d_head, so the scores are the logits the head was built with."
                    + (" This head is ablated: its W_O is zero." if head["ablated"] else "")}
    for name in MATRICES:
        labels = (dims, reply["features"]) if name == "W_O" else (reply["features"], dims)
        out |= _matrix(name, head[name].tolist(), *labels)
    return out


@declared_as(head_weights, text_or_tokens=SENTENCE)
def heads_weights_view(text_or_tokens, ablate=()) -> dict:
    """Each head's matrices for a text, with the heads of ablate knocked out."""
    reply = head_weights.fn(text_or_tokens, tuple(ablate))
    return {"heads": {kind: _weights(reply, kind) for kind in HEAD_KINDS}}
