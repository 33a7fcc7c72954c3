"""Build-time side of the shapes widget: the options its marker takes and its first state.

build.py calls context(**options) with the marker's options and renders shapes.html.j2 with the result,
so the page shows mha_core's numbers (computed here, in CPython) before Python starts in the browser.
The formatters below match render.js's, so the browser's first update changes no text it need not.
"""
from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal

import mha_core
from mha_core.presets import presets


def boolean(text: str) -> bool:
    if text.lower() not in ("true", "false", "1", "0"):
        raise ValueError(text)
    return text.lower() in ("true", "1")


OPTIONS = {"d_model": int, "n_heads": int, "seq_len": int, "batch": int,
           "n_kv_heads": int, "d_head": int, "bias": boolean, "dtype_bytes": int}
DEFAULTS = {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2,
            "n_kv_heads": None, "d_head": None, "bias": True, "dtype_bytes": 4}

# name, label, symbol, slider (min, max, step); the number field takes 1..mha_core.LIMITS[name].
# h starts at 1 so that head counts that do not divide d_model are reachable.
FIELDS = [
    ("d_model", "Model width", "d_model", (8, 16384, 8)),
    ("n_heads", "Heads", "h", (1, 128, 1)),
    ("seq_len", "Sequence length", "n", (1, 131072, 1)),
    ("batch", "Batch size", "B", (1, 512, 1)),
]
DTYPES = [(4, "4 (float32)"), (2, "2 (float16, bfloat16)"), (1, "1 (int8, fp8)"), (8, "8 (float64)")]
PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
FLOP_UNITS = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP", "YFLOP")


def fmt_int(n: int) -> str:
    return f"{n:,}"


def fmt_scaled(value: int, base: int, units: tuple[str, ...]) -> str:
    """1536, 1024, BYTE_UNITS -> '1.50 KiB'; rounds half up like JavaScript's toFixed."""
    x, i = float(value), 0
    while x >= base and i < len(units) - 1:
        x, i = x / base, i + 1
    if i == 0:
        return f"{value:,} {units[0]}"
    digits = 2 if x < 10 else 1 if x < 100 else 0
    return f"{Decimal(x).quantize(Decimal(10) ** -digits, ROUND_HALF_UP)} {units[i]}"


def fmt_bytes(n: int) -> str:
    return fmt_scaled(n, 1024, BYTE_UNITS)


def fmt_flops(n: int) -> str:
    return fmt_scaled(n, 1000, FLOP_UNITS)


def attention_kind(config: dict) -> str:
    h_kv, h = config["n_kv_heads"], config["n_heads"]
    return "multi-head" if h_kv == h else "multi-query" if h_kv == 1 else "grouped-query"


def preset_options() -> list[dict]:
    keys = ("d_model", "n_heads", "n_kv_heads", "d_head", "bias")
    return [{"key": p["key"], "label": p["label"], "source": p["source"],
             "config": json.dumps({k: p[k] for k in keys})} for p in presets()]


def context(**options) -> dict:
    """The template's variables for the marker's options; an invalid configuration stops the build."""
    config = {**DEFAULTS, **options}
    report = mha_core.shape_report(**config)
    if not report["ok"]:
        raise ValueError(f"shapes widget: {report['check']['message']}")
    fields = [{"name": name, "label": label, "symbol": symbol, "min": lo, "max": hi, "step": step,
               "limit": mha_core.LIMITS[name]} for name, label, symbol, (lo, hi, step) in FIELDS]
    return {
        "config": config, "report": report, "fields": fields, "presets": preset_options(),
        "dtypes": DTYPES, "param_names": PARAM_NAMES, "limits": mha_core.LIMITS,
        "weights": {w["name"]: w for w in report["weights"]}, "kind": attention_kind(report["config"]),
        "fmt_int": fmt_int, "fmt_bytes": fmt_bytes, "fmt_flops": fmt_flops,
    }
