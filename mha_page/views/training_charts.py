"""The training widget's two charts (the losses, the heads' detector scores) as slots: ticks, lines, legends, a
uniform guess's level and the step marker, drawn by mha_page.views.charts in a fixed box over the schedule's steps.
The template renders as many ticks and lines as any run can draw (MAX_TICKS, MAX_LINES); a run hides or empties
those it does not."""
from __future__ import annotations

import math

from mha_core.model import TRAIN_CHOICES, TrainConfig

from . import charts, decimal, head_name
from .training_schedule import SCHEDULE
from .training_words import ROLE_NAMES, reference_label

SCORE_TICKS = 5  # the score axis: 0, 0.2, …, 1.0
BOX = {"left": 44, "right": 312, "top": 10, "bottom": 140}  # the charts' plot area inside their 320 × 180 viewBox
DASHES = ("", "5 3", "2 2", "8 3 2 3")  # a score line's dash, one per head of a layer
LOSS_LINES = {"loss_first": ("first", "5 3", "loss on first occurrences"),
              "loss_repeat": ("repeat", "", "loss on repeats")}  # each loss's class, dash and legend
REFERENCE = ("reference", "1 2")  # the class and dash of another run's loss on repeats, drawn for comparison
LEVEL = ("level", "3 2")  # the class and dash of a uniform guess's loss


def score_lines(config: TrainConfig) -> list[dict]:
    """The scores drawn, one line per head: previous-token for the layers before the last, induction for the last
    (both for a model of one layer): [{"kind", "layer", "head", "label"}]."""
    def kinds(layer):
        return ["previous_token", "induction"] if config.n_layers == 1 else \
            ["previous_token" if layer < config.n_layers - 1 else "induction"]
    return [{"kind": kind, "layer": layer, "head": head, "label": f"{head_name(layer, head)} {ROLE_NAMES[kind]}"}
            for layer in range(config.n_layers) for kind in kinds(layer) for head in range(config.n_heads)]


def chart_axes(history: list[dict], config: TrainConfig) -> dict:
    """The two charts' axes and lines as the reader reads them: {"steps": the x-axis both share ({"start", "end",
    "label"}), "loss", "scores"}, each {"top", "unit", "ticks": [{"value", "text"}], "lines"}; the loss's also "level",
    a uniform guess's loss (ln vocab) with its label. The loss axis reaches the highest loss of history, at most
    twice a uniform guess's (a diverging run is clipped, not squeezed flat), in whole nats."""
    vocab = config.vocab
    uniform = math.log(vocab)
    losses = [h[k] for h in history for k in ("loss_first", "loss_repeat") if math.isfinite(h[k])]
    top = math.ceil(min(max([uniform, *losses]), 2 * uniform))
    level = {"value": uniform, "text": f"{uniform:.4f}", "label": f"uniform guess: ln {vocab} = {decimal(uniform)}",
             "legend": f"uniform guess ({decimal(uniform)} nats)"}
    losses = [{"key": key, "label": label} for key, (_, _, label) in LOSS_LINES.items()]
    steps = {"start": "0", "end": str(SCHEDULE["steps"]), "label": "training step"}
    return {"steps": steps, "loss": {"top": top, "unit": "loss (nats)", "level": level, "lines": losses,
                     "ticks": [{"value": v, "text": str(v)} for v in range(top + 1)]},
            "scores": {"top": 1, "unit": "score (0 to 1)", "lines": score_lines(config),
                       "ticks": [{"value": i / SCORE_TICKS, "text": "0" if i == 0 else decimal(i / SCORE_TICKS, 1)}
                                 for i in range(SCORE_TICKS + 1)]}}


# As many of each chart's ticks and lines as the widget's runs can draw (the template renders them all; a run
# leaves those it does not draw hidden or empty): the loss axis reaches at most twice a uniform guess's loss.
MAX_TICKS = {"loss": math.ceil(2 * math.log(TrainConfig().vocab)) + 1, "scores": SCORE_TICKS + 1}
MAX_LINES = {"loss": len(LOSS_LINES) + 1, "scores": max(
    heads * (2 if layers == 1 else layers) for layers in TRAIN_CHOICES["n_layers"] for heads in TRAIN_CHOICES["n_heads"])}


def _ticks(name: str, axis: dict) -> dict:
    """The slots of a chart's ticks: "{name}-tick-{i}" (a label at its value's height, + 4: its baseline) and
    "{name}-grid-{i}" (a grid line above 0); those past the axis's hidden."""
    out = {}
    for i in range(MAX_TICKS[name]):
        tick = axis["ticks"][i] if i < len(axis["ticks"]) else None
        y = round(charts.y_of(tick["value"], axis["top"], BOX), 2) if tick else 0
        shown = "inline" if tick else "none"
        out[f"{name}-tick-{i}"] = {"text": tick["text"] if tick else "", "data": {"tick": tick["text"] if tick else ""},
                                   "attrs": {"y": round(y + 4, 2), "display": shown}}
        out[f"{name}-grid-{i}"] = {"attrs": {"y1": y, "y2": y, "display": shown if tick and tick["value"] > 0 else "none"}}
    return out


def _lines(name: str, lines: list[tuple[str, str, str, list[int], list[float]]], top: float) -> dict:
    """The slots of a chart's lines ({name}-line-{j}: class, dash, points; those past lines empty) and its legend
    (lines: [(class, dash, label, steps, values)])."""
    out = {}
    for j in range(MAX_LINES[name]):
        cls, dash, _, steps, values = lines[j] if j < len(lines) else ("", "", "", [], [])
        points = charts.polyline(steps, values, SCHEDULE["steps"], top, BOX)
        out[f"{name}-line-{j}"] = {"attrs": {"class": cls, "stroke-dasharray": dash, "points": points}}
    return out


def legend(lines: list[tuple[str, str, str]], unseen: int = 0) -> dict:
    """A legend's slot: a row per (class, dash, label), its swatch a line drawn as the chart's; the last unseen rows
    hold their place unseen (data-unseen), so that the legend keeps its height when they are drawn."""
    return {"rows": [{"data": {"unseen": "" if i >= len(lines) - unseen else None},
                      "outputs": {"swatch": {"attrs": {"class": cls, "stroke-dasharray": dash}}, "legend-label": label}}
                     for i, (cls, dash, label) in enumerate(lines)]}


def chart_slots(history: list[dict], config: TrainConfig, reference: list[float] | None = None) -> dict:
    """Both charts of a run (history: its entries, one each SCHEDULE["log_every"] steps) as slots: ticks, lines,
    legends and the uniform guess's level; reference, if given, another run's loss on repeats on the same steps
    (the recorded run's, drawn beside the reader's)."""
    axes = chart_axes(history, config)
    steps = [h["step"] for h in history]
    loss, scores = axes["loss"], axes["scores"]
    own = [(*LOSS_LINES[key][:2], label, steps, [h[key] for h in history]) for key, label in
           ((line["key"], line["label"]) for line in loss["lines"])]
    compared = (*REFERENCE, reference_label(TrainConfig()))  # last in the legend, unseen without a reference
    losses = own if reference is None else \
        [*own, (*compared, list(range(0, SCHEDULE["steps"] + 1, SCHEDULE["log_every"])), reference)]
    heads = [(f"score {line['kind']}", DASHES[line["head"] % len(DASHES)], line["label"], steps,
              [h["scores"][line["kind"]][line["layer"]][line["head"]] for h in history]) for line in scores["lines"]]
    level = loss["level"]
    y = round(charts.y_of(level["value"], loss["top"], BOX), 2)
    words = {"x-start": axes["steps"]["start"], "x-end": axes["steps"]["end"], "x-label": axes["steps"]["label"],
             "loss-unit": loss["unit"], "scores-unit": scores["unit"]}
    return {**words, **_ticks("loss", loss), **_ticks("scores", scores), **_lines("loss", losses, loss["top"]),
            **_lines("scores", heads, 1), "loss-level": {"data": {"level": level["text"]}, "attrs": {"y1": y, "y2": y}},
            "loss-level-label": {"text": level["label"], "attrs": {"y": round(y - 5, 2)}},
            "loss-legend": legend([line[:3] for line in own] + [(*LEVEL, level["legend"]), compared],
                                  unseen=int(reference is None)),
            "scores-legend": legend([line[:3] for line in heads])}


def marker(step: int) -> dict:
    """The slot of both charts' step marker at step."""
    x = round(charts.x_of(step, SCHEDULE["steps"], BOX), 2)
    return {"data": {"marker": str(step)}, "attrs": {"x1": x, "x2": x}}
