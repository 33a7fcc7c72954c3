"""The shapes widget's view: mha_core.shape_report as the reader reads it (the form mha_page.views describes).

shapes_display(report) makes every string (counts, bytes, FLOPs, shapes, the check and its suggestions);
shapes_view(...) puts them in the widget's slots. Counts are exact Python ints, so their text is exact too
(2**67 is 147,573,952,589,676,412,928), even where JavaScript's numbers are not.
"""

from __future__ import annotations

from mha_core.fields import Choice
from mha_core.presets import PRESETS
from mha_core.shapes import shape_report
from . import declared_as

BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
FLOP_UNITS = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP", "ZFLOP", "YFLOP")
PARAM_NAMES = ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")
# each size's symbol, as the form's labels, the suggestions and the waiting line (pending_words) name it
SYMBOLS = {"d_model": "d_model", "n_heads": "h", "seq_len": "n", "batch": "B", "n_layers": "L", "n_kv_heads": "h_kv",
           "d_head": "d_head"}


def integer(n: int) -> str:
    """12345 -> '12,345', exact at any size."""
    return f"{n:,}"


def _scaled(n: int, base: int, units: tuple[str, ...]) -> str:
    """n in the largest unit it reaches, 2 significant decimals below 10, 1 below 100 (exact, half up)."""
    i = 0
    while n >= base ** (i + 1) and i < len(units) - 1:
        i += 1
    if i == 0:
        return f"{integer(n)} {units[0]}"
    unit = base**i
    digits = 2 if n < 10 * unit else 1 if n < 100 * unit else 0
    rounded = (2 * n * 10**digits + unit) // (2 * unit)  # n / unit with that many decimals, half up, in integers
    whole, part = divmod(rounded, 10**digits)
    return f"{whole}.{part:0{digits}d} {units[i]}" if digits else f"{whole} {units[i]}"


def byte_size(n: int) -> str:
    """1536 -> '1.50 KiB'."""
    return _scaled(n, 1024, BYTE_UNITS)


def flop_count(n: int) -> str:
    """2_500_000 -> '2.50 MFLOP'."""
    return _scaled(n, 1000, FLOP_UNITS)


def shape(dims) -> str:
    """[2, 10, 512] -> '2 × 10 × 512'."""
    return " × ".join(str(d) for d in dims)


def attention_kind(n_heads: int, n_kv_heads: int) -> str:
    return "multi-head" if n_kv_heads == n_heads else "multi-query" if n_kv_heads == 1 else "grouped-query"


def _exact(n: int, fmt) -> dict:
    """A count as {value: its exact digits, text: fmt(n), what the reader sees}."""
    return {"value": str(n), "text": fmt(n)}


def _check(check: dict) -> dict:
    suggestions = [{"name": name, "value": str(v), "text": f"{SYMBOLS.get(name, name)} = {integer(v)}"}
                   for name, values in check["suggestions"].items() for v in values]
    return {"ok": check["ok"], "message": check["message"], "suggestions": suggestions}


def memory_note(t: dict) -> str:
    """What a tensor is in memory: the input, a view of its source, or a new array (the merge's copy said why)."""
    if t["source"] is None:
        return "input"
    if t["name"] == "weights" and t["view"]:
        return "same buffer as scores: the softmax runs in place"
    if t["view"]:
        return f"a view of {t['source']}: no data copied"
    if t["name"] == "merged":
        return "a copy: after the transpose the heads are not contiguous, so the reshape copies"
    return "a new array"


def _tensor(t: dict) -> dict:
    return {"name": t["name"], "symbol": t["symbol"], "shape": ",".join(map(str, t["shape"])),
            "shape_text": shape(t["shape"]), "numel": integer(t["numel"]), "bytes": byte_size(t["bytes"]),
            "view": t["view"], "op": t["op"], "note": memory_note(t)}


def shapes_display(report: dict) -> dict:
    """The shapes widget's text for a shape_report: the check, and (when ok) every tensor, the
    parameters and the totals, each count as exact digits (value) and the reader's text."""
    shown = {"check": _check(report["check"])}
    if not report["ok"]:
        return shown
    config, params = report["config"], report["params"]
    weights = {w["name"]: w for w in report["weights"]}
    n_layers = config["n_layers"]
    shown.update(
        kind=attention_kind(config["n_heads"], config["n_kv_heads"]),
        tensors=[_tensor(t) for t in report["tensors"]],
        params=[{"name": name, "shape": shape(weights[name]["shape"]) if name in weights else "none",
                 "numel": integer(params[name])} for name in PARAM_NAMES],
        totals={
            "params": _exact(params["total"], integer),
            "params_bytes": _exact(sum(w["bytes"] for w in report["weights"]), byte_size),
            "kv_cache": _exact(report["kv_cache_bytes"], byte_size),
            "kv_cache_model": _exact(report["kv_cache_model_bytes"], byte_size),
            "flops": _exact(report["flops"], flop_count),
        },
        n_layers=f"{integer(n_layers)} layer{'s' if n_layers > 1 else ''}",
    )
    return shown


def pending_words() -> dict:
    """The sentences the page fills in before Python has answered (shapes.js): what the widget waits for and a
    failure ({error}: its message). {changes}: each field of the form whose value differs from the results shown
    (the main four when none does), as fields[name] says it, {value} the form's value or its word in values (a
    blank, derived size; bias on or off), joined by separator."""
    return {"waiting": "Waiting for Python to compute {changes}…",
            "failed": "Could not compute {changes}: {error}",
            "fields": {name: f"{symbol} = {{value}}" for name, symbol in SYMBOLS.items()}
            | {"bias": "bias = {value}", "dtype_bytes": "bytes per number = {value}"},
            "values": {"null": "derived", "true": "on", "false": "off"},
            "main": ["d_model", "n_heads", "seq_len", "batch"],
            "separator": ", "}


NO_CACHE = {"value": "0", "text": "none"}  # a model that generates nothing keeps no KV cache


def _totals_line(shown: dict, n_layers: int, cached: bool) -> str:
    """shapes_display's totals in one sentence, shown under the check: on a phone the table that ends with them
    is a few screens below the controls."""
    totals = shown["totals"]
    line = f"This layer: {totals['params']['text']} parameters ({totals['params_bytes']['text']}), "
    if not cached:
        return line + f"{totals['flops']['text']} per forward pass; no KV cache (the model generates nothing)."
    line += f"KV cache {totals['kv_cache']['text']}, {totals['flops']['text']} per forward pass"
    whole = f"; the KV cache of all {shown['n_layers']}: {totals['kv_cache_model']['text']}"
    return line + (whole if n_layers > 1 else "") + "."


def _cache_note(preset: str) -> dict:
    """What the preset's whole-model KV cache covers, where that is not simply every layer (hidden otherwise)."""
    note = PRESETS[preset].cache_note if preset else ""
    return {"text": note, "hidden": not note}


@declared_as(shape_report, preset=Choice(("", *PRESETS), "a real model's key, or none"))
def shapes_view(d_model, n_heads, seq_len, batch, n_kv_heads=None, d_head=None, bias=True, dtype_bytes=4,
                 n_layers=1, preset="") -> dict:
    """The widget's view for the form's sizes (as shape_report takes them) and the real model they are, if any
    (preset: a key of mha_core.PRESETS, "" for none; an encoder's preset keeps no KV cache). A configuration
    that does not fit fills the check and its suggestions only: the results keep the last that did, marked stale."""
    shown = shapes_display(shape_report(d_model, n_heads, seq_len, batch, n_kv_heads, d_head, bias, dtype_bytes, n_layers))
    check = shown["check"]
    outputs = {
        "check": {"text": check["message"], "data": {"ok": "true" if check["ok"] else "false", "stale": "false"}},
        "suggestions": {"data": {"stale": "false"}, "rows": [
            {"outputs": {"suggestion": {"text": s["text"], "data": {"name": s["name"], "value": s["value"]}}}}
            for s in check["suggestions"]]},
        "results": {"data": {"stale": "false" if check["ok"] else "true"}},
        "totals": {"data": {"stale": "false" if check["ok"] else "true"}},
    }
    if not check["ok"]:
        return {"outputs": outputs}
    for t in shown["tensors"]:
        outputs[f"tensor-{t['name']}"] = {"data": {"shape": t["shape"], "view": "true" if t["view"] else "false"}, "outputs": {
            "op": {"title": t["op"]}, "symbol": t["symbol"], "shape": t["shape_text"], "numel": t["numel"],
            "bytes": t["bytes"], "layout": t["note"]}}
    for p in shown["params"]:
        outputs[f"param-{p['name']}"] = {"outputs": {"shape": p["shape"], "numel": p["numel"]}}
    cached = not preset or PRESETS[preset].kv_layers > 0
    if not cached:
        shown["totals"] |= {"kv_cache": NO_CACHE, "kv_cache_model": NO_CACHE}
    outputs |= shown["totals"] | {"kind": shown["kind"], "n_layers": shown["n_layers"], "cache_note": _cache_note(preset)}
    outputs["totals"]["text"] = _totals_line(shown, n_layers, cached)
    return {"outputs": outputs}

