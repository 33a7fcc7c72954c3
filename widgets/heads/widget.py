"""Build-time side of the heads widget: the option its marker takes and its first view.

build.py calls context(**options) and renders heads.html.j2 with mha_page.views.heads' view of the default
sentence, computed through the bridge in CPython, so the page shows the constructed heads' patterns before Python
starts in the browser. The template also embeds the view as JSON: heads.js switches heads from it (each head's
outputs, bound by the shared binding) without waiting for Python, and asks for a new view when the sentence or
the knock-out changes.
"""
from __future__ import annotations

import json

from mha_page import bridge
from mha_core.heads import HEAD_KINDS, MAX_TOKENS
from mha_page.views.heads import MATRICES, stale_lines
from widgets.palette import gradient

# A phrase of distinct words said twice, with punctuation: every head has something to show.
SENTENCE = "The old lighthouse keeper waved, and the old lighthouse keeper smiled."
ABLATED = "previous_token"  # the head the knock-out zeroes


def head_kind(text: str) -> str:
    if text not in HEAD_KINDS:
        raise ValueError(text)
    return text


OPTIONS = {"head": head_kind}


def context(head: str = "induction") -> dict:
    """The template's variables: the default sentence's view, with head's outputs and cells."""
    answer = json.loads(bridge.call("heads_view", json.dumps({"text_or_tokens": SENTENCE})))
    if not answer["ok"]:
        raise ValueError(f"heads widget: {answer['error']}")
    view = answer["result"]
    return {
        "limits": bridge.limits("heads_view"),  # the page carries what the bridge accepts
        "sentence": SENTENCE, "head": head, "kinds": HEAD_KINDS, "ablated": ABLATED, "max_tokens": MAX_TOKENS,
        "view": view, "o": view["outputs"] | view["heads"][head]["outputs"], "cells": view["heads"][head]["cells"],
        "query": view["query"], "matrices": MATRICES,
        "gradient": gradient(),
        "data": {"sentence": SENTENCE, "view": view, "stale": stale_lines()},
    }
