"""Build-time side of the one-head-against-several widget: its options and its first state.

build.py calls context(**options) and renders one_vs_many.html.j2 with mha_core.one_vs_many's answer,
computed through the bridge in CPython, so the page shows what reaches the verb before Python starts in
the browser; one_vs_many.js writes the same elements from Python's answer when the reader moves a control.
The root carries data-mha-widget="one-vs-many".
"""
from __future__ import annotations

import json

from mha_core import bridge
from mha_core.one_vs_many import D_CONTENT, KEYS, MAX_WEIGHT, RELATIONSHIPS, TOKENS, VERB

DEFAULT_WEIGHT = 50  # each slider's start: equal shares, the even spread a reader tries first
LABELS = {"subject": "Subject", "clause": "Clause", "previous": "Previous token"}


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false"):
        raise ValueError(text)
    return text.lower() == "true"


OPTIONS = {"wide": boolean}


def context(wide: bool = False) -> dict:
    """The template's variables: one_vs_many through the bridge, exactly the JSON the browser gets."""
    args = {r: DEFAULT_WEIGHT for r in RELATIONSHIPS} | {"wide": wide}
    answer = json.loads(bridge.call("one_vs_many", json.dumps(args)))
    if not answer["ok"]:
        raise ValueError(f"one_vs_many widget: {answer['error']}")
    relationships = [{"name": r, "label": LABELS[r], "words": " ".join(TOKENS[j] for j in KEYS[r])}
                     for r in RELATIONSHIPS]
    return {"r": answer["result"], "relationships": relationships, "roles": roles(), "weight": DEFAULT_WEIGHT,
            "max_weight": MAX_WEIGHT, "verb": TOKENS[VERB], "block_size": D_CONTENT}


def roles() -> list[str]:
    """Each token's colour: the relationship it belongs to (the neighbour's own, though it ends the clause)."""
    role = {j: r for r in RELATIONSHIPS for j in KEYS[r]}  # later relationships win: "previous" over "clause"
    return [role.get(j, "none") for j in range(len(TOKENS))]
