"""The circuits widget's view: a recorded run's circuits (mha_core.circuits) as the reader reads them.

circuits_view(config, seed, steps, params, prev_head) -> {"run", "fixed", "views"}: "run" is the view of what no step
changes that a run's own words and scales fill (bound once when the widget switches runs), "fixed" the rest of it
(the charts' lines and axes, the heads' names); "views" one view per recorded step (the form mha_page.views
describes), so the step control only binds the view of the step it is moved to. circuits_run_view, which the
browser calls (bridge.FUNCTIONS), makes the same of the reader's own run once it ends. Each heatmap
is a small PNG (indexed colours, stdlib zlib), a CSS image in the slot's --map variable: a 32 × 32 picture in
about a kilobyte, the same in CPython and in Pyodide.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib

import numpy as np

from mha_core import circuits
from mha_core.detectors import evaluate
from mha_core.fields import ListOf, Text, Whole, arguments
from mha_core.model import SEED, TRAIN_CONFIG, TrainConfig
from mha_core.params_codec import MAX_PARAMS_CHARS, decode_params
from mha_core.training import eval_batch
from . import charts, decimal, head_name
from .training import display_tokens
from .training_schedule import SCHEDULE

LEVELS = 16  # colour steps on each side of zero
NEGATIVE, POSITIVE = (86, 180, 233), (213, 94, 0)  # Okabe and Ito's sky blue and vermilion, legible on light and dark
# The charts' box (an SVG viewBox), and the plot inside it.
CHART = {"width": 320, "height": 170, "left": 40, "right": 310, "top": 10, "bottom": 140}
K_TICKS = (0.0, 0.1, 0.2, 0.3, 0.4)
BASELINE_SPREAD = 2  # the random baseline's band: mean ± this many standard deviations
LOSS_TICKS = 5  # the loss axis: 0 to a multiple of this many nats, in this many intervals, for every run
MAX_CHECKPOINTS = SCHEDULE["steps"] // SCHEDULE["checkpoint_every"] + 1  # a whole run on the widget's schedule
STEPS, PARAMS = ListOf(Whole(0, 2**31), MAX_CHECKPOINTS), ListOf(Text(MAX_PARAMS_CHARS), MAX_CHECKPOINTS)


# ---------------------------------------------------------------- pictures

def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


PALETTE = ([NEGATIVE + (round(255 * (LEVELS - k) / LEVELS),) for k in range(LEVELS)] + [(0, 0, 0, 0)]
           + [POSITIVE + (round(255 * k / LEVELS),) for k in range(1, LEVELS + 1)])  # index LEVELS: zero, clear


def levels(M: np.ndarray, scale: float) -> np.ndarray:
    """[a, b] values -> [a, b] palette indices 0..2 LEVELS: M / scale in LEVELS steps each side of zero (index LEVELS)."""
    return (np.rint(np.clip(M / scale, -1, 1) * LEVELS) + LEVELS).astype(np.uint8)


def png(indices: np.ndarray) -> bytes:
    """[a, b] palette indices -> an 8-bit indexed PNG whose colours fade to transparent at zero (PLTE and tRNS)."""
    h, w = indices.shape
    raw = b"".join(b"\0" + row.tobytes() for row in indices)  # filter 0 before each row
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 3, 0, 0, 0))
            + _chunk(b"PLTE", b"".join(bytes(c[:3]) for c in PALETTE)) + _chunk(b"tRNS", bytes(c[3] for c in PALETTE))
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


def heatmap(M: np.ndarray, label: str) -> dict:
    """A slot drawing M [a, b] (NaN: not drawn) scaled to its largest magnitude: --map, the scale (data-scale), label."""
    scale = float(np.nanmax(np.abs(M))) or 1.0
    indices = levels(np.nan_to_num(M), scale)
    url = "data:image/png;base64," + base64.b64encode(png(indices)).decode()
    return {"vars": {"--map": f'url("{url}")'}, "data": {"scale": repr(scale)},
            "label": f"{label} Colours scaled to ±{decimal(scale, 1)}."}


# ---------------------------------------------------------------- words and numbers

def score(value: float) -> dict:
    """An unrounded score as the contract holds it (data-value), 2 decimals as the reader reads it."""
    return {"value": repr(float(value)), "text": decimal(float(value))}


def x_of(step: int, total: int) -> float:
    return charts.x_of(step, total, CHART)


def y_of(value: float, top: float) -> float:
    return charts.y_of(value, top, CHART)


def polyline(steps: list[int], values: list[float], total: int, top: float) -> str:
    return charts.polyline(steps, values, total, top, CHART)


def ticks(values, top: float, digits: int) -> list[dict]:
    return charts.ticks(values, top, digits, CHART)


# ---------------------------------------------------------------- the view

def check_arguments(config: TrainConfig, prev_head) -> None:
    if config.n_layers < 2:
        raise ValueError(f"config must have 2 layers or more (K-composition reads layer 0 into layer 1), "
                         f"got n_layers={config.n_layers}.")
    if isinstance(prev_head, bool) or not isinstance(prev_head, int) or not 0 <= prev_head < config.n_heads:
        raise ValueError(f"prev_head must be a layer-0 head, 0 to {config.n_heads - 1}, got {prev_head!r:.40}.")


def fixed(config: TrainConfig, run: dict, prev_head: int) -> dict:
    """What no step changes: the charts of K-composition and loss over training, their axes, the heads' names."""
    entries, total = run["checkpoints"], run["checkpoints"][-1]["step"]
    steps = [e["step"] for e in entries]
    h = range(config.n_heads)
    k_top = K_TICKS[-1]
    loss_top = LOSS_TICKS * math.ceil(max(max(e["loss_first"], e["loss_repeat"]) for e in entries) / LOSS_TICKS)
    pos_top = math.ceil(max(float(np.max(e["position_losses"])) for e in entries))
    base = run["k_baseline"]
    low, high = base["mean"] - BASELINE_SPREAD * base["std"], base["mean"] + BASELINE_SPREAD * base["std"]
    pairs = [{"source": a, "target": b, "name": f"{head_name(0, a)} → {head_name(1, b)}", "prev": a == prev_head,
              "points": polyline(steps, [e["k_composition"][0][a][1][b] for e in entries], total, k_top)}
             for a in h for b in h]
    tokens = run["tokens"]
    period = tokens[1:].index(tokens[0]) + 1  # display_tokens repeats one block of distinct tokens
    return {
        "chart": CHART, "steps": steps, "first": steps[0], "last": total, "every": steps[1] - steps[0],
        "heads": list(h), "prev_head": prev_head, "prev_name": head_name(0, prev_head),
        "layer1": [head_name(1, b) for b in h], "layer0": [head_name(0, a) for a in h], "pairs": pairs,
        "k_ticks": ticks(K_TICKS, k_top, 1),
        "baseline": {"y": round(y_of(high, k_top), 1), "height": round(y_of(low, k_top) - y_of(high, k_top), 1),
                     "mean": decimal(base["mean"]), "std": decimal(base["std"], 3), "spread": BASELINE_SPREAD},
        "loss_ticks": ticks(range(0, loss_top + 1, loss_top // LOSS_TICKS), loss_top, 0),
        "loss_lines": [{"name": "on the repeats", "key": "repeat", "points": polyline(
                           steps, [e["loss_repeat"] for e in entries], total, loss_top)},
                       {"name": "on first occurrences", "key": "first", "points": polyline(
                           steps, [e["loss_first"] for e in entries], total, loss_top)}],
        "uniform": {"y": round(y_of(math.log(config.vocab), loss_top), 1), "text": decimal(math.log(config.vocab))},
        "x_ticks": [{"x": round(x_of(s, total), 1), "text": str(s)} for s in steps[::max(1, len(steps) // 4)]],
        "period": period, "kinds": kinds(len(tokens) - 1, period), "pos_top": pos_top, "seq_len": config.seq_len,
    }


def kinds(n_predictions: int, period: int) -> list[str]:
    """What each prediction t (of token t + 1) is: in the first copy ("first"), the second copy's first token
    ("start": it follows the block's end, which nothing marks), or a token an earlier copy predicts ("repeat")."""
    return ["first" if t + 1 < period else "start" if t + 1 == period else "repeat" for t in range(n_predictions)]


def _positions(losses: np.ndarray, period: int, top: float, step: int) -> dict:
    """The bars (--v, the value to 3 decimals) and their summary in words."""
    kind = np.array(kinds(len(losses), period))
    first, repeat, start = (float(losses[kind == k].mean()) for k in ("first", "repeat", "start"))
    return {"rows": [{"vars": {"--v": round(min(float(v) / top, 1.0), 3)}, "value": f"{float(v):.3f}"} for v in losses],
            "label": (f"Loss at each position at step {step}: {decimal(first)} nats on average across the first copy, "
                      f"{decimal(start)} on the second copy's first token, {decimal(repeat)} on the other repeats.")}


def step_view(config: TrainConfig, at: dict, entry: dict, fix: dict) -> dict:
    """One step's view from circuits_at's answer and over_training's entry for that step."""
    step, prev = entry["step"], fix["prev_head"]
    out = {"step": {"text": f"Step {step}", "value": str(step)},
           "marker": {"vars": {"--x": round(x_of(step, fix["last"]) - CHART["left"], 1)}},
           "loss-repeat": score(entry["loss_repeat"])}
    for b in fix["heads"]:
        M = np.asarray(at["full_ov"][1][b])  # [V, V]
        copying = float(at["copying"][1][b])
        hits = round(copying * config.vocab)
        diagonal = float(np.mean(np.diagonal(M)))
        off = float((M.sum() - np.trace(M)) / (M.size - len(M)))
        out[f"ov-{b}"] = {"outputs": {
            "ov-copying": score(copying), "ov-hits": f"{hits} of {config.vocab} tokens",
            "ov-map": heatmap(M, f"Full OV circuit of {head_name(1, b)} at step {step}, {config.vocab} by {config.vocab}: row, "
                                 f"the token attended to; column, the logit it raises. The largest entry of {hits} of "
                                 f"{config.vocab} rows is on the diagonal; diagonal entries average "
                                 f"{decimal(diagonal, 1)}, the others {decimal(off, 1)}.")}}
        for a in fix["heads"]:
            out[f"k-{a}-{b}"] = {"outputs": {"k-composition": score(at["k_composition"][0][a][1][b])}}
    qk = np.asarray(at["positional_qk"][0][prev])  # [n, n]
    n = len(qk)
    causal = np.tri(n, dtype=bool)
    below = float(np.mean(np.diagonal(qk, -1)))
    rest = float(qk[causal & ~np.eye(n, k=-1, dtype=bool)].mean())  # the visible keys but the previous one
    out["qk-map"] = heatmap(np.where(causal, qk, np.nan),
                            f"Positional QK circuit of {fix['prev_name']} at step {step}, {n} by {n}: row, the "
                            f"query's position; column, the key's. Scores one position back average "
                            f"{decimal(below, 1)}, the other visible positions {decimal(rest, 1)}.")
    out["positions"] = _positions(np.asarray(at["position_losses"]), fix["period"], fix["pos_top"], step)
    k_prev = ", ".join(f"{head_name(1, b)} {decimal(float(at['k_composition'][0][prev][1][b]))}" for b in fix["heads"])
    copies = ", ".join(f"{head_name(1, b)} {out[f'ov-{b}']['outputs']['ov-hits']}" for b in fix["heads"])
    out["summary"] = (f"Step {step}: K-composition of {fix['prev_name']} into {k_prev} (random heads: "
                      f"{fix['baseline']['mean']}); copying: {copies}; loss on the repeats "
                      f"{out['loss-repeat']['text']} nats.")
    return {"data": {"step": str(step)}, "outputs": out}


def run_slots(fix: dict, name: str, note: str) -> dict:
    """The view of what a run changes but no step does: the step control's label, the rows' heads, the scales'
    words, which prediction each bar is, the charts' lines (the polylines' points by pair, "line-{pair}", and by
    loss, "loss-line-{key}"; the uniform guess's height, "uniform"); note, the words on which run is shown ("":
    none). Its "data" (the steps) is what the step control takes."""
    out = {"run-label": f"{name}, at a checkpoint (every {fix['every']} steps)", "prev-name": fix["prev_name"],
           "run-note": {"text": note, "hidden": not note}, "period": str(fix["period"]), "pos-top": f"{fix['pos_top']} nats",
           "positions": {"vars": {"--uniform": round(math.log(fix["vocab"]) / fix["pos_top"], 4)},
                         "rows": [{"data": {"kind": k}} for k in fix["kinds"]]}}
    out.update((f"from-{a}", f"{fix['layer0'][a]}{' (previous-token)' if a == fix['prev_head'] else ''}") for a in fix["heads"])
    out.update((f"loss-tick-{i}", t["text"]) for i, t in enumerate(fix["loss_ticks"]))
    out.update((f"line-{p['source']}-{p['target']}", {"attrs": {"points": p["points"]}}) for p in fix["pairs"])
    out.update((f"loss-line-{line['key']}", {"attrs": {"points": line["points"]}}) for line in fix["loss_lines"])
    out["uniform"] = {"attrs": {"y1": fix["uniform"]["y"], "y2": fix["uniform"]["y"]}}
    return {"data": {"first": fix["first"], "last": fix["last"], "every": fix["every"]}, "outputs": out}


def circuits_view(config: dict, seed: int, steps: list, params: list, prev_head: int,
                  name: str = "The recorded run", note: str = "") -> dict:
    """A run's checkpoints (steps[i], weights params[i] in encode_params' form; prev_head, the layer-0 head its
    detectors name previous-token) -> {"run": run_slots (name: the run's, note: what to say of it), "fixed",
    "views": one view per step}."""
    train = TrainConfig(**config)
    check_arguments(train, prev_head)
    weights, tokens = [decode_params(p, train) for p in params], display_tokens(train)
    run = circuits.run_over_training(steps, weights, train, tokens, seed)
    fix = {**fixed(train, run, prev_head), "vocab": train.vocab}
    views = [step_view(train, circuits.at_checkpoint(w, train, tokens), entry, fix)
             for w, entry in zip(weights, run["checkpoints"])]
    return {"run": run_slots(fix, name, note), "fixed": fix, "views": views}


def messages() -> dict:
    """The widget's sentences that are not a view's: "steps-failed", in which the runtime fills in why ({error}:
    runtime/asset.js), "run-failed" (the root's data-failure), which runtime/live.js follows with the error of
    a reader's run, and "train-first", for a reader's run asked before the training widget has finished one."""
    return {"steps-failed": "The recorded run's steps could not be loaded ({error}). Retry loads them again.",
            "run-failed": "Could not compute your run's circuits",
            "train-first": "Train a run in the training widget first."}


# ---------------------------------------------------------------- the reader's run

def unlike_shipped(config: TrainConfig) -> str:
    """Why the widget, laid out for the shipped model's heads, cannot show a run of config ("" if it can)."""
    shipped = TrainConfig()
    if config.n_layers < 2:
        return ("Your run has one layer: there is no K-composition (a head's keys can only read what an earlier "
                "layer wrote) and no layer-1 head to copy: this view cannot show it. Train two layers to see yours.")
    if (config.n_layers, config.n_heads) != (shipped.n_layers, shipped.n_heads):
        return (f"Your run has {config.n_layers} layers of {config.n_heads} heads; this view draws "
                f"{shipped.n_layers} layers of {shipped.n_heads}, as the recorded run has, so it cannot show this "
                f"one. Train {shipped.n_heads} heads per layer to see yours.")
    return ""


@arguments(config=TRAIN_CONFIG, seed=SEED, steps=STEPS, params=PARAMS)
def circuits_run_view(config: dict, seed: int, steps: list, params: list) -> dict:
    """The reader's finished run (steps[i] and its weights params[i], encode_params' form, evenly spaced) ->
    circuits_view's {"run", "fixed", "views"}, its previous-token head the layer-0 head with the highest
    previous-token score at its last checkpoint; for a run of another shape, {"run": a note saying why it is not
    shown, "fixed": None, "views": []}."""
    train = TrainConfig(**config)
    why = unlike_shipped(train)
    if why:
        return {"run": {"outputs": {"run-note": {"text": why, "hidden": False}}}, "fixed": None, "views": []}
    if len(steps) < 2 or len({b - a for a, b in zip(steps, steps[1:])}) != 1 or steps[0] != 0:
        raise ValueError(f"steps must be 2 or more evenly spaced checkpoints from step 0, got {steps[:8]}.")
    if len(params) != len(steps):
        raise ValueError(f"steps and params must be as long as each other, got {len(steps)} and {len(params)}.")
    scores = evaluate(decode_params(params[-1], train), eval_batch(train, seed), train)["scores"]["previous_token"][0]
    prev = int(np.argmax(scores))
    note = (f"Shown: your run (seed {seed}). {head_name(0, prev)} is taken as its previous-token head: its "
            f"previous-token score at step {steps[-1]}, {decimal(float(scores[prev]), 3)}, is its layer's highest.")
    return circuits_view(config, seed, steps, params, prev, f"Your run (seed {seed})", note)
