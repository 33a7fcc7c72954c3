"""Build-time side of the tiling widget: its options and its first view.

build.py calls context(**options) and renders tiling.html.j2 with mha_page.views.tiling's view of the default
sentence, computed through the bridge in CPython: every tile's numbers, so the step slider moves before Python
starts in the browser. tiling.js asks for a new view when the sentence, d_head, the block or the mask changes,
and binds the chosen step's slots from the view it holds.
"""
from __future__ import annotations

import json

from mha_page import bridge
from mha_core.flash import D_HEADS
from mha_core.heads import MAX_TOKENS
from mha_page.views.tiling import BLOCK

# The heads widget's sentence: 13 tokens, so that a block of 4 leaves a shorter last block.
SENTENCE = "The old lighthouse keeper waved, and the old lighthouse keeper smiled."


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


OPTIONS = {"block": int, "causal": boolean, "d_head": int}


def context(block: int = BLOCK, causal: bool = True, d_head: int = 4) -> dict:
    """The template's variables: the view through the bridge, exactly the JSON the browser gets."""
    args = {"text_or_tokens": SENTENCE, "d_head": d_head, "block": block, "causal": causal}
    answer = json.loads(bridge.call("tiling_view", json.dumps(args)))
    if not answer["ok"]:
        raise ValueError(f"tiling widget: {answer['error']}")
    return {"view": answer["result"], "sentence": SENTENCE, "d_heads": D_HEADS, "max_tokens": MAX_TOKENS,
            "limits": bridge.limits("tiling_view")}
