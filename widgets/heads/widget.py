"""Build-time side of the heads widget: the option its marker takes and its first state.

build.py calls context(**options) and renders heads.html.j2 with the result, so the page shows the
constructed heads' patterns on the default sentence (computed here by mha_core, in CPython, through
the same bridge the browser calls) before Python starts in the browser. The template also embeds
that result as JSON: heads.js switches heads from it without waiting for Python.
"""
from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal

from mha_core import bridge
from mha_core.heads import HEAD_KINDS, MAX_TOKENS
from widgets.palette import PALETTE, STEPS, colour, gradient

# A phrase of distinct words said twice, with punctuation: every head has something to show.
SENTENCE = "The old lighthouse keeper waved, and the old lighthouse keeper smiled."
ABLATED = "previous_token"  # the head the knock-out zeroes



def head_kind(text: str) -> str:
    if text not in HEAD_KINDS:
        raise ValueError(text)
    return text


OPTIONS = {"head": head_kind}

# What each layer's heads read (HEAD_INFO's "layer": 0, 1 or None for the averaged pattern).
LAYERS = {"0": "0, reading the embeddings x",
          "1": "1, reading the residual stream: x plus the output of layer 0",
          "None": "none: this is the mean of the four patterns, not a head of the model"}


def fmt_weight(weight: float) -> str:
    """4 decimals, rounding half up like JavaScript's toFixed."""
    return str(Decimal(weight).quantize(Decimal("0.0001"), ROUND_HALF_UP))


def patterns(sentence: str) -> dict:
    """head_patterns through the bridge: exactly the JSON the browser gets."""
    reply = json.loads(bridge.call("head_patterns", json.dumps({"text_or_tokens": sentence})))
    if not reply["ok"]:
        raise ValueError(f"heads widget: {reply['error']}")
    return reply["result"]


def rows(result: dict, head: str) -> list[dict]:
    """The heatmap's rows: each query's drawn cells (keys 0..q) and how many masked cells follow."""
    n = len(result["tokens"])
    return [{"token": token,
             "cells": [{"weight": fmt_weight(w), "colour": colour(w)} for w in result["heads"][head][q][:q + 1]],
             "masked": n - 1 - q} for q, token in enumerate(result["tokens"])]


def context(head: str = "induction") -> dict:
    """The template's variables: the default sentence's patterns, pre-rendered for head."""
    result = patterns(SENTENCE)
    query = result["first_query"]  # the row mha_core chooses, here and in the browser
    return {
        "limits": bridge.limits("head_patterns"),  # the page carries what the bridge accepts
        "sentence": SENTENCE, "head": head, "kinds": HEAD_KINDS, "ablated": ABLATED, "max_tokens": MAX_TOKENS,
        "result": result, "info": result["info"], "rows": rows(result, head), "query": query,
        "attends": [fmt_weight(w) for w in result["heads"][head][query]],
        "gradient": gradient(),
        "layers": LAYERS,
        "data": {"sentence": SENTENCE, "result": result, "palette": PALETTE, "steps": STEPS,
                 "layers": LAYERS},
    }
