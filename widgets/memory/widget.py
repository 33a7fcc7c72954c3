"""Build-time side of the memory widget: its options and its first view.

build.py calls context(**options) and renders memory.html.j2 with mha_page.views.memory's view, computed
through the bridge in CPython, so the page shows NumPy's strides before Python starts in the browser;
memory.js asks for the same view when the reader changes n, h or the split, and the shared binding fills
the same slots.
"""
from __future__ import annotations

import json

from mha_page import bridge
from mha_core.memory import HEAD_CHOICES, MAX_TOKENS


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


OPTIONS = {"n_tokens": int, "n_heads": int, "wrong": boolean}


def context(n_tokens: int = 3, n_heads: int = 2, wrong: bool = False) -> dict:
    """The template's variables: the view through the bridge, exactly the JSON the browser gets."""
    answer = json.loads(bridge.call("memory_view", json.dumps({"n_tokens": n_tokens, "n_heads": n_heads, "wrong": wrong})))
    if not answer["ok"]:
        raise ValueError(f"memory widget: {answer['error']}")
    return {"view": answer["result"], "head_choices": HEAD_CHOICES, "token_choices": range(1, MAX_TOKENS + 1)}
