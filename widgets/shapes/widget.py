"""Build-time side of the shapes widget: the options its marker takes and its first state.

build.py calls context(**options) with the marker's options and renders shapes.html.j2 with the result,
so the page shows mha_core's numbers (computed here, in CPython) before Python starts in the browser.
Every number is text made by the widget's view (mha_page.views.shapes), the same view the browser gets.
"""
from __future__ import annotations

import json

from mha_page import bridge
from mha_core.presets import presets
from mha_core.shapes import TENSOR_NAMES
from mha_page.views import whole_error
from mha_page.views.shapes import PARAM_NAMES, SYMBOLS, pending_words


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise ValueError(text)
    return text.lower() in ("true", "1")


OPTIONS = {"d_model": int, "n_heads": int, "seq_len": int, "batch": int,
           "n_kv_heads": int, "d_head": int, "bias": boolean, "dtype_bytes": int, "n_layers": int}
DEFAULTS = {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2,
            "n_kv_heads": None, "d_head": None, "bias": True, "dtype_bytes": 4, "n_layers": 6}

# name, label, the values its slider steps through (the number field takes 1..mha_core.LIMITS[name]):
# powers of two for the sizes that span orders of magnitude; for h (None), the divisors of d_model up to
# MAX_SLIDER_HEADS, which sliders.js works out, as it places every slider at the step nearest its field.
MAX_SLIDER_HEADS = 128
FIELDS = [
    ("d_model", "Model width", [2**e for e in range(3, 15)]),
    ("n_heads", "Heads", None),
    ("seq_len", "Sequence length", [2**e for e in range(0, 18)]),
    ("batch", "Batch size", [2**e for e in range(0, 10)]),
]
DTYPES = [(4, "4 (float32)"), (2, "2 (float16, bfloat16)"), (1, "1 (int8, fp8)"), (8, "8 (float64)")]
PRESET_KEYS = ("d_model", "n_heads", "n_kv_heads", "d_head", "bias", "n_layers")


def preset_options() -> list[dict]:
    """Each preset's label, source and the form values it sets (n_kv_heads and d_head empty where they
    are the derived defaults; seq_len its context, where it has one; n_layers the layers that keep a KV
    cache). What its KV cache covers is the view's to say (mha_page.views.shapes)."""
    options = []
    for p in presets():
        values = {k: p[k] for k in PRESET_KEYS}
        values["n_kv_heads"] = None if p["n_kv_heads"] == p["n_heads"] else p["n_kv_heads"]
        values["d_head"] = None if p["d_head"] * p["n_heads"] == p["d_model"] else p["d_head"]
        if p["context"]:
            values["seq_len"] = p["context"]
        if p["kv_layers"]:  # L counts the layers that cache keys and values (the field is for the KV cache)
            values["n_layers"] = p["kv_layers"]
        options.append({"key": p["key"], "label": p["label"], "source": p["source"], "settings": json.dumps(values)})
    return options


def fields() -> list[dict]:
    return [{"name": name, "label": label, "symbol": SYMBOLS[name], "steps": values and ",".join(map(str, values)),
             "max_step": MAX_SLIDER_HEADS if values is None else None} for name, label, values in FIELDS]


def context(**options) -> dict:
    """The template's variables for the marker's options; an invalid configuration stops the build."""
    config = {**DEFAULTS, **options}
    answer = json.loads(bridge.call("shapes_view", json.dumps(config)))
    if not answer["ok"]:
        raise ValueError(f"shapes widget: {answer['error']}")
    view = answer["result"]
    if view["outputs"]["check"]["data"]["ok"] != "true":
        raise ValueError(f"shapes widget: {view['outputs']['check']['text']}")
    return {"config": config, "view": view, "tensors": TENSOR_NAMES, "params": PARAM_NAMES, "fields": fields(),
            "presets": preset_options(), "dtypes": DTYPES, "limits": size_limits(), "whole_error": whole_error,
            "words": pending_words()}


def size_limits() -> dict[str, int]:
    """Each size's largest value, as the bridge accepts it (the number fields' max)."""
    return {name: field["max"] for name, field in bridge.limits("shapes_view").items() if "max" in field}
