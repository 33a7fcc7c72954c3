"""Build-time side of the one-head-against-several widget: its options and its first view.

build.py calls context(**options) and renders one_vs_many.html.j2 with mha_page.views.one_vs_many's view,
computed through the bridge in CPython, so the page shows what reaches the verb before Python starts in
the browser; one_vs_many.js asks for the same view when the reader moves a control, and the shared binding
fills the same slots. The root carries data-mha-widget="one-vs-many".
"""
from __future__ import annotations

import json

from mha_page import bridge
from mha_core.one_vs_many import MAX_WEIGHT, RELATIONSHIPS, TOKENS, VERB

DEFAULT_WEIGHT = 50  # each slider's start: equal shares, the even spread a reader tries first


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


OPTIONS = {"wide": boolean}


def context(wide: bool = False) -> dict:
    """The template's variables: the view through the bridge, exactly the JSON the browser gets."""
    args = {r: DEFAULT_WEIGHT for r in RELATIONSHIPS} | {"wide": wide}
    answer = json.loads(bridge.call("one_vs_many_view", json.dumps(args)))
    if not answer["ok"]:
        raise ValueError(f"one_vs_many widget: {answer['error']}")
    view = answer["result"]
    return {"view": view, "fixed": view["fixed"], "weight": DEFAULT_WEIGHT, "max_weight": MAX_WEIGHT,
            "verb": TOKENS[VERB]}
