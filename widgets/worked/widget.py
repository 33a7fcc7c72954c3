"""Build-time side of the worked-example widget: its option and its first view.

build.py calls context(**options) and renders worked.html.j2 with mha_page.views.worked's view, computed
through the bridge in CPython: every matrix of the example in the steps the page walks through. worked.js
asks for the same view for other words or another seed, and the shared binding fills the same cells.
"""
from __future__ import annotations

import json

from mha_page import bridge

OPTIONS = {"seed": int}


def context(seed: int = 1) -> dict:
    """The template's variables: the view through the bridge, exactly the JSON the browser gets."""
    answer = json.loads(bridge.call("worked_view", json.dumps({"seed": seed})))
    if not answer["ok"]:
        raise ValueError(f"worked widget: {answer['error']}")
    return {"view": answer["result"]}
