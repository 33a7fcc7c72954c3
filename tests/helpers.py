"""What the browser tests share: reading and driving the widgets in the page and checking them against
mha_core. Building, serving and opening the site, shared with the benchmarks, are sitevisit's."""
from __future__ import annotations

import json
import re
from urllib.parse import parse_qsl

import mha_core
from mha_core.exercises import EXERCISES
import pytest
from playwright.sync_api import expect

# ---------------------------------------------------------------- the shapes widget, read in the page

SHOWN = """root => ({
  ok: root.querySelector('[data-output="check"]').dataset.ok === "true",
  message: root.querySelector('[data-output="check"]').textContent,
  suggestions: [...root.querySelectorAll('[data-output="suggestions"] button')].map(b => [b.dataset.name, Number(b.dataset.value)]),
  tensors: Object.fromEntries([...root.querySelectorAll("[data-tensor]")].filter(r => !r.hidden).map(r => [r.dataset.tensor, r.dataset.shape])),
  params: root.querySelector('[data-output="params"]').dataset.value,
  kv_cache: root.querySelector('[data-output="kv_cache"]').dataset.value,
  flops: root.querySelector('[data-output="flops"]').dataset.value,
})"""
FORM = """root => Object.fromEntries([...root.querySelectorAll('input[type="number"]')].map(i => [i.name, i.value]))"""


def expected(report: dict) -> dict:
    """What the shapes widget must show for a shape_report."""
    check = report["check"]
    out = {"ok": check["ok"], "message": check["message"],
           "suggestions": [[name, v] for name, values in check["suggestions"].items() for v in values]}
    if report["ok"]:
        out |= {"tensors": {t["name"]: ",".join(map(str, t["shape"])) for t in report["tensors"]},
                "params": str(report["params"]["total"]), "kv_cache": str(report["kv_cache_bytes"]),
                "flops": str(report["flops"])}  # exact digits, as the widget holds them
    return out


def shown(widget, keys) -> dict:
    values = widget.evaluate(SHOWN)
    return {k: values[k] for k in keys}


def assert_shows(widget, **config):
    """Wait until the shapes widget is live with mha_core's answer for config, then compare every value."""
    want = expected(mha_core.shape_report(**config))
    expect(widget.locator('[data-output="check"]')).to_have_attribute("data-ok", str(want["ok"]).lower())
    if want["ok"]:
        expect(widget.locator('[data-output="params"]')).to_have_attribute("data-value", str(want["params"]))
    expect(widget).to_have_attribute("data-state", "live")
    assert shown(widget, want) == want


def calculator(query: str) -> dict:
    """A link's query as the calculator reads it: its preset's values (as the page's menu sets them, every field
    the preset has), then the query's own numbers."""
    from sitebuild.widgets import widget_module

    given = dict(parse_qsl(query))
    settings = {}
    if "preset" in given:
        key = given.pop("preset")
        option = next(o for o in widget_module("shapes").preset_options() if o["key"] == key)
        settings = {k: v for k, v in json.loads(option["settings"]).items() if v is not None}
    settings |= {k: int(v) for k, v in given.items()}
    settings["bias"] = bool(settings.get("bias", 1))
    return settings


def form_config(widget) -> dict:
    """The shapes widget's number fields that are filled in, as shape_report's arguments."""
    return {k: int(v) for k, v in widget.evaluate(FORM).items() if v}


# ---------------------------------------------------------------- the heads widget

SENTENCE = "Mary gave John a book; later, Mary gave John a pen."
READ = """root => ({
  cells: [...root.querySelectorAll("td[data-q][data-k][data-weight]")].map(td => [+td.dataset.q, +td.dataset.k, td.dataset.weight]),
  masked: [...root.querySelectorAll("td[data-masked]")].length,
  labels: [...root.querySelectorAll("[data-token-index]")].map(el => [el.dataset.axis, +el.dataset.tokenIndex, el.textContent]),
})"""


def tokens_of(text: str) -> list[str]:
    """The tokens the widget must label (mha_core's tokenizer, itself tested case by case in tests/core)."""
    return mha_core.tokenize(text)


def heatmap(read: dict, n: int) -> list[list[float | None]]:
    """[n, n] weights from the DOM cells; None where nothing is drawn."""
    W = [[None] * n for _ in range(n)]
    for q, k, weight in read["cells"]:
        assert re.fullmatch(r"\d\.\d{4}", weight), weight  # 4 decimals
        W[q][k] = float(weight)
    return W


def check_layout(read: dict, tokens: list[str]) -> list[list[float | None]]:
    """Token labels on both axes (and in the sentence), the causal triangle drawn, the rest masked."""
    n = len(tokens)
    for axis in ("query", "key", "sentence"):
        assert [(i, text) for a, i, text in read["labels"] if a == axis] == list(enumerate(tokens)), axis
    W = heatmap(read, n)
    assert all((W[q][k] is None) == (k > q) for q in range(n) for k in range(n))
    assert read["masked"] == n * (n - 1) // 2
    for row in W:
        assert sum(w for w in row if w is not None) == pytest.approx(1, abs=1e-3 * n)
    return W





# ---------------------------------------------------------------- the memory and worked-example widgets

def check_small_widget(name, widget, value) -> None:
    """The memory widget's strides (h = value) or the worked example's output (seed = value) are mha_core's."""
    if name == "memory":
        want = mha_core.memory_steps(int(widget.get_attribute("data-n")), value, widget.get_attribute("data-wrong") == "true")
        shown = widget.evaluate("root => [...root.querySelectorAll('[data-output=\"steps\"] > li')].map(li => li.dataset.strides)")
        assert shown == [",".join(map(str, s["strides_bytes"])) for s in want["steps"]]
    else:
        from mha_page.views.worked import worked_view
        want = [[cell["text"] for cell in row["rows"]] for row in worked_view(value)["outputs"]["matrix-out"]["rows"]]
        shown = widget.evaluate("root => [...root.querySelector('table[data-matrix=\"out\"]').rows].map(r => [...r.querySelectorAll('td')].map(td => td.textContent))")
        assert shown == want


# ---------------------------------------------------------------- any widget

# Each widget's field a change goes into, and the key that applies it.
FIELDS = {"shapes": ('input[type="number"][name="batch"]', "Enter"), "heads": ('textarea[name="sentence"]', "Tab"),
          "training": ('input[name="text"]', "Enter")}


# ---------------------------------------------------------------- the one-vs-many widget, read in the page

def one_vs_many_form(widget) -> dict:
    """The widget's controls as one_vs_many's arguments."""
    return widget.evaluate("""root => ({subject: root.querySelector('input[name="subject"]').valueAsNumber,
      clause: root.querySelector('input[name="clause"]').valueAsNumber,
      previous: root.querySelector('input[name="previous"]').valueAsNumber,
      wide: root.querySelector('input[name="wide"]').checked,
      heads: Number(root.querySelector('input[name="heads"]:checked').value),
      alone: root.querySelector('select[name="alone"]').value})""")


def one_vs_many_outputs(widget) -> dict:
    """{data-output: data-value} of every output the widget shows a number or word in."""
    return widget.evaluate("root => Object.fromEntries([...root.querySelectorAll('[data-output][data-value]')].map(e => [e.dataset.output, e.dataset.value]))")


def one_vs_many_expected(**args) -> dict:
    """{data-output: data-value} as mha_core's view makes them for the controls' values."""
    from mha_page.views.one_vs_many import one_vs_many_view
    outputs = one_vs_many_view(**args)["outputs"]
    return {name: slot["value"] for name, slot in outputs.items() if isinstance(slot, dict) and "value" in slot}


def ask(name, widget, value) -> None:
    """Change the widget's input (batch, a sentence, the training widget's text, the heads drawn in memory,
    the worked example's numbers, drawn anew up to seed value, the tiling widget's block, a key pressed on the one-vs-many widget's
    subject slider or the circuits widget's step, the real model's text) without waiting for an answer."""
    if name == "memory":
        return widget.locator('select[name="n_heads"]').select_option(str(value))
    if name == "worked":
        return widget.locator('[data-action="redraw"]').click()
    if name == "one-vs-many":  # value: a key pressed on the subject's slider
        return widget.locator('input[name="subject"]').press(value)
    if name == "circuits":  # value: a key pressed on the step slider (its views are in the page)
        return widget.locator('input[name="step"]').press(value)
    if name == "tiling":  # value: a block size, set on the block slider and applied
        block = widget.locator('input[name="block"]')
        block.fill(str(value))
        return block.dispatch_event("change")
    if name == "real-model":  # value: another of the texts the atlas was built for (no model needed)
        return widget.locator('select[name="example"]').select_option(value)
    if name == "exercise":  # the shipped solution, written as a reader writes it, then Run
        widget.locator("[data-editor]").click()
        widget.page.keyboard.press("ControlOrMeta+A")
        widget.page.keyboard.insert_text(EXERCISES[widget.get_attribute("data-exercise")].solution)
        return widget.locator("button[name=run]").click()
    selector, key = FIELDS[name]
    field = widget.locator(selector)
    field.fill(str(value))
    field.press(key)


def check_answered(name, widget, value) -> None:
    """The widget is live with Python's answer for value."""
    if name == "shapes":
        assert_shows(widget, **{**form_config(widget), "batch": value})
    elif name in ("memory", "worked"):
        expect(widget).to_have_attribute("data-state", "live")
        expect(widget).to_have_attribute("data-h" if name == "memory" else "data-seed", str(value))
        check_small_widget(name, widget, value)
    elif name == "one-vs-many":
        expect(widget).to_have_attribute("data-state", "live")
        assert one_vs_many_outputs(widget) == one_vs_many_expected(**one_vs_many_form(widget))
    elif name == "exercise":  # the exercises' own Python starts at the first Run
        expect(widget.locator("[data-output=result]")).to_have_attribute("data-status", "pass", timeout=120_000)
    elif name == "circuits":  # Home: the first recorded step, shown without Python
        expect(widget).to_have_attribute("data-step", widget.locator('input[name="step"]').get_attribute("min"))
        expect(widget).to_have_attribute("data-state", "live")
    elif name == "real-model":  # the atlas of that text, fetched before any Load
        expect(widget).to_have_attribute("data-text", value)
        expect(widget).to_have_attribute("data-state", "live")
    elif name == "tiling":  # the tiles of that block, counted as mha_core counts them
        expect(widget).to_have_attribute("data-block", str(value))
        expect(widget).to_have_attribute("data-state", "live")
        n, causal = int(widget.get_attribute("data-n")), widget.get_attribute("data-causal") == "true"
        d = int(widget.get_attribute("data-d-head"))
        counts = mha_core.flash_counts(n, n, d, d, value, value, causal)
        shown = {name: int(widget.locator(f'[data-output="{name}"]').get_attribute("data-value"))
                 for name in ("held", "tiles", "tiles-skipped")}
        assert shown == {"held": counts["held"], "tiles": counts["tiles"], "tiles-skipped": counts["skipped"]}
    elif name == "training":  # the heatmap shows the text's tokens
        expect(widget).to_have_attribute("data-state", "live")
        expect(widget.locator("thead [data-token-index]")).to_have_text(tokens_of(value))
    else:
        expect(widget).to_have_attribute("data-state", "live")
        check_layout(widget.evaluate(READ), tokens_of(value))


# ---------------------------------------------------------------- the circuits widget, read in the page

def png_indices(url: str):
    """The palette indices [h, w] of an 8-bit indexed PNG given as a data URL (or CSS url("…")), read afresh:
    chunks, zlib, and filter 0 on every row, as the widget writes it."""
    import base64
    import struct
    import zlib

    import numpy as np
    data = base64.b64decode(re.search(r"data:image/png;base64,([A-Za-z0-9+/=]+)", url).group(1))
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, chunks = 8, {}
    while at < len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        chunks[kind] = chunks.get(kind, b"") + data[at + 8:at + 8 + size]
        at += 12 + size
    w, h, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 3)
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, w + 1)
    assert not rows[:, 0].any()  # no filter
    return rows[:, 1:]


def circuits_expected(run: dict, step: int, prev: int | None = None) -> dict:
    """What the circuits widget must show at step of run (run.json's form), computed by mha_core.circuits itself:
    K-composition {(layer-0 head, layer-1 head): score}, copying {layer-1 head: score}, the layer-1 heads' full
    OV circuits and the previous-token head's positional QK circuit (causal part), each as the palette indices of
    16 levels a side of its largest magnitude, and the loss at each position of the display sequence. prev: the
    layer-0 head whose QK circuit is shown, if not the one the run's roles name previous-token."""
    import numpy as np

    from mha_core import circuits
    from mha_page.views.training import decode_params, display_tokens
    from mha_core.model import TrainConfig
    config = TrainConfig(**run["config"])
    checkpoint = next(c for c in run["checkpoints"] if c["step"] == step)
    params = decode_params(checkpoint["params"], config)
    if prev is None:  # the head the detectors name at the end
        prev = run["checkpoints"][-1]["roles"][0].index("previous_token")

    def levels(M):
        M = np.nan_to_num(M)
        return (np.rint(np.clip(M / np.abs(M).max(), -1, 1) * 16) + 16).astype(np.uint8)
    full_ov = circuits.full_ov_circuits(params, config, 1)  # [h, V, V]
    qk = circuits.positional_qk_circuits(params, config, 0)[prev]  # [n, n]
    k = circuits.k_composition(params, config)  # [L, h, L, h]
    h = range(config.n_heads)
    return {"k": {(a, b): float(k[0, a, 1, b]) for a in h for b in h},
            "ov": {b: float(circuits.copying_scores(full_ov[b])) for b in h},
            "ov_levels": {b: levels(full_ov[b]) for b in h},
            "qk_levels": levels(np.where(np.tri(len(qk), dtype=bool), qk, np.nan)),
            "positions": circuits.position_losses(params, display_tokens(config), config).tolist()}


# ---------------------------------------------------------------- colours as drawn on the page

def rgba(css: str) -> tuple[float, float, float, float]:
    """(r, g, b, alpha), r, g and b from 0 to 255, of a computed colour "rgb(r, g, b)", "rgba(r, g, b, a)" or
    "color(srgb r g b / a)" (what a color-mix() computes to, r, g and b from 0 to 1)."""
    parts = [float(x) for x in re.findall(r"[\d.]+", css)]
    scale = 255 if css.startswith("color(srgb") else 1
    return (*(p * scale for p in parts[:3]), parts[3] if len(parts) > 3 else 1.0)


def over(css: str, under: str) -> str:
    """The opaque colour "rgb(r, g, b)" that colour css (its alpha composited) makes drawn over the opaque under."""
    *top, alpha = rgba(css)
    return "rgb({}, {}, {})".format(*(round(alpha * t + (1 - alpha) * b) for t, b in zip(top, rgba(under)[:3])))


def contrast(fg: str, under: str) -> float:
    """WCAG contrast of colour fg drawn over the opaque colour under (fg's alpha composited)."""
    drawn, base = rgba(over(fg, under))[:3], rgba(under)[:3]

    def luminance(rgb):
        linear = [c / 255 / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    a, b = sorted((luminance(drawn), luminance(base)), reverse=True)
    return (a + 0.05) / (b + 0.05)
