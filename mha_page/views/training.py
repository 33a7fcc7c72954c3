"""What the training widget reads: a run as plain JSON (histories rounded to what is shown, patterns and weights
packed into text and base64), the run the page ships (recorded_run), and the run in progress in this Python.

The numbers come from mha_core.model, .detectors and .training; this module only chooses what the widget
shows and how it travels. Its functions training_* are the ones the browser calls (see bridge.FUNCTIONS).
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict

import numpy as np

from mha_core.detectors import DETECTORS, evaluate
from mha_core.fields import ListOf, Maybe, Number, Text, Whole, arguments
from mha_core.model import (ABLATE, RECORDED_SEED, SEED, TRAIN_CHOICES, TRAIN_CONFIG, TRAIN_LABELS, TrainConfig,
                            forward)
from mha_core.params_codec import MAX_PARAMS_CHARS, decode_params, encode_params
from mha_core.rng import Random
from mha_core.tokens import MAX_TEXT_CHARS, first_tokens, token_key
from mha_core.training import Trainer, TrainingDiverged, eval_batch
from . import cell_names, charts, decimal, head_name, plural

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # token t is shown as SYMBOLS[t]
SCHEDULE = {"steps": 600, "log_every": 10, "checkpoint_every": 30}  # a run as the widget shows it
SCHEDULE_DTYPE = np.float32  # the widget's runs, built and live, train in float32
ROLE_MIN = 0.4  # a head is named after its best detector score when that score reaches this
ROLE_NAMES = {"previous_token": "previous-token", "induction": "induction", "duplicate_token": "duplicate-token",
              "first_token": "first-token", None: "no clear role"}
RUNS: dict[int, Trainer] = {}  # the browser's run in progress, by id (one at a time)
STARTED: dict[int, float] = {}  # when each run in RUNS started (time.perf_counter), for its elapsed time
REFERENCES: dict[int, list[float] | None] = {}  # each run in RUNS's reference (training_start's), for its charts
RUN_IDS = itertools.count(1)
RUN = Whole(1, 2**53)  # a run's id, as training_start gave it
MAX_BUDGET_MS = 1000
REFERENCE_LOSSES = ListOf(Number(-1, 1e6), SCHEDULE["steps"] // SCHEDULE["log_every"] + 1)  # a run's, one per log


# ---------------------------------------------------------------- what is shown

def display_tokens(config: TrainConfig) -> list[int]:
    """The test sequence the patterns are shown on (display_words says it): a block of distinct tokens, period
    halfway between min_period and max_period, repeated to fill seq_len."""
    period = (config.min_period + config.max_period) // 2
    block = Random(2024).permutation(config.vocab)[:period]  # [period]
    return block[np.arange(config.seq_len) % period].tolist()  # [n]


def display_words(config: TrainConfig) -> str:
    """What the patterns are shown on, in the reader's words."""
    return f"a test sequence that repeats a block of {(config.min_period + config.max_period) // 2} tokens"


def display_labels(config: TrainConfig) -> list[str]:
    """display_tokens as the heatmap's axes show them: token t as SYMBOLS[t]."""
    return [SYMBOLS[t] for t in display_tokens(config)]


def text_tokens(text: str, config: TrainConfig) -> tuple[list[int], list[str]]:
    """(token ids, the words) of a reader's text: words and punctuation marks (mha_core.tokens), ids given in
    order of first appearance (case-insensitive), so repeats stay repeats; at most seq_len of them."""
    words, _ = first_tokens(text, config.seq_len)
    ids: dict[str, int] = {}
    for word in words:
        ids.setdefault(token_key(word), len(ids))
    if len(ids) > config.vocab:
        raise ValueError(f"the text has {len(ids)} different words in its first {len(words)}; "
                         f"the model knows {config.vocab} tokens.")
    if len(words) < 2:
        raise ValueError("the text needs at least 2 words or punctuation marks.")
    return [ids[token_key(word)] for word in words], words


def head_roles(scores: dict) -> list[list[str | None]]:
    """roles[layer][head]: the detector kind with the head's highest score if it is ≥ ROLE_MIN, else None."""
    n_layers, n_heads = len(scores[DETECTORS[0]]), len(scores[DETECTORS[0]][0])
    roles = []
    for layer in range(n_layers):
        best = [max(DETECTORS, key=lambda kind: scores[kind][layer][head]) for head in range(n_heads)]
        roles.append([kind if scores[kind][layer][head] >= ROLE_MIN else None for head, kind in enumerate(best)])
    return roles


def rounded(entry: dict) -> dict:
    """A history entry with losses to 4 decimals and scores to 3, the precision the widget shows."""
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in entry.items() if k != "scores"}
    out["scores"] = {kind: [[round(s, 3) for s in layer] for layer in value] for kind, value in entry["scores"].items()}
    return out


def summary(roles: list[list[str | None]], scores: dict, step: int) -> str:
    """The heads that have a role at step, with the score that names them, and the best score of the others:
    during the drop a head can do its part before its score reaches ROLE_MIN."""
    named = [(role, layer, head) for layer, row in enumerate(roles) for head, role in enumerate(row) if role]
    parts = [f"{head_name(layer, head)} is {'an' if ROLE_NAMES[role][0] in 'aeiou' else 'a'} {ROLE_NAMES[role]} head "
             f"(score {decimal(scores[role][layer][head], 3)})" for role, layer, head in named]
    others = [(scores[kind][layer][head], kind, layer, head) for kind in scores
              for layer, row in enumerate(roles) for head, role in enumerate(row) if not role]
    rest = ""
    if others:
        score, kind, layer, head = max(others, key=lambda o: o[0])  # the first of equal scores, as listed
        rest = (f" The highest score of {'the other heads' if named else 'any head'}: {head_name(layer, head)}'s "
                f"{ROLE_NAMES[kind]} score, {decimal(score, 3)}.")
    if not named:
        return f"At step {step} no head has a clear role yet: every detector score is below {ROLE_MIN}.{rest}"
    return f"At step {step}, {'; '.join(parts)}.{rest}"


def score_outputs(evaluated: dict, roles: list[list[str | None]] | None = None) -> dict:
    """The slots (mha_page.views' form) of evaluate's numbers: the loss on the repeats and the grid of heads
    ("heads": a row per layer, in it a row per head: its name, layer and head, and its scores; with roles, its
    role too), which the template renders and the binding fills for any number of layers and heads."""
    loss = decimal(evaluated["loss_repeat"], 3)
    prev, induction = evaluated["scores"]["previous_token"], evaluated["scores"]["induction"]

    def cell(layer: int, head: int) -> dict:
        p, i = decimal(prev[layer][head], 3), decimal(induction[layer][head], 3)
        out = {"data": {"layer": layer, "head": head, "score-previous-token": p, "score-induction": i},
               "outputs": {"name": head_name(layer, head), "prev": p, "induction": i}}
        if roles is not None:
            out["data"]["role"] = roles[layer][head] or ""
            out["outputs"]["role"] = ROLE_NAMES[roles[layer][head]]
        return out
    heads = {"rows": [{"rows": [cell(layer, head) for head in range(len(row))]} for layer, row in enumerate(prev)]}
    return {"loss": {"text": loss, "value": loss}, "heads": heads}


def checkpoint_outputs(entry: dict, roles: list[list[str | None]]) -> dict:
    """Every number and word shown for a checkpoint (entry: its history entry, rounded): the step, the loss on the
    repeats, each head's scores and role, and the sentence under the slider."""
    step = str(entry["step"])
    return {"step": {"text": step, "value": step}, "marker": marker(entry["step"]), **score_outputs(entry, roles),
            "summary": summary(roles, entry["scores"], entry["step"])}


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


def reference_label(config: TrainConfig) -> str:
    """The legend of a run's loss on repeats drawn beside another run's, for comparison."""
    return f"recorded run ({plural(config.n_layers, 'layer')}), loss on repeats"


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


def legend(lines: list[tuple[str, str, str]]) -> dict:
    """A legend's slot: a row per (class, dash, label), its swatch a line drawn as the chart's."""
    return {"rows": [{"outputs": {"swatch": {"attrs": {"class": cls, "stroke-dasharray": dash}}, "legend-label": label}}
                     for cls, dash, label in lines]}


def chart_slots(history: list[dict], config: TrainConfig, reference: list[float] | None = None) -> dict:
    """Both charts of a run (history: its entries, one each SCHEDULE["log_every"] steps) as slots: ticks, lines,
    legends and the uniform guess's level; reference, if given, another run's loss on repeats on the same steps
    (the recorded run's, drawn beside the reader's)."""
    axes = chart_axes(history, config)
    steps = [h["step"] for h in history]
    loss, scores = axes["loss"], axes["scores"]
    losses = [(*LOSS_LINES[key][:2], label, steps, [h[key] for h in history]) for key, label in
              ((line["key"], line["label"]) for line in loss["lines"])]
    if reference is not None:
        losses.append((*REFERENCE, reference_label(TrainConfig()),
                       list(range(0, SCHEDULE["steps"] + 1, SCHEDULE["log_every"])), reference))
    heads = [(f"score {line['kind']}", DASHES[line["head"] % len(DASHES)], line["label"], steps,
              [h["scores"][line["kind"]][line["layer"]][line["head"]] for h in history]) for line in scores["lines"]]
    level = loss["level"]
    y = round(charts.y_of(level["value"], loss["top"], BOX), 2)
    words = {"x-start": axes["steps"]["start"], "x-end": axes["steps"]["end"], "x-label": axes["steps"]["label"],
             "loss-unit": loss["unit"], "scores-unit": scores["unit"]}
    return {**words, **_ticks("loss", loss), **_ticks("scores", scores), **_lines("loss", losses, loss["top"]),
            **_lines("scores", heads, 1), "loss-level": {"data": {"level": level["text"]}, "attrs": {"y1": y, "y2": y}},
            "loss-level-label": {"text": level["label"], "attrs": {"y": round(y - 5, 2)}},
            "loss-legend": legend([line[:3] for line in losses] + [(*LEVEL, level["legend"])]),
            "scores-legend": legend([line[:3] for line in heads])}


def marker(step: int) -> dict:
    """The slot of both charts' step marker at step."""
    x = round(charts.x_of(step, SCHEDULE["steps"], BOX), 2)
    return {"data": {"marker": str(step)}, "attrs": {"x1": x, "x2": x}}


# ---------------------------------------------------------------- how it travels

WEIGHT_CHARS = 6  # a weight as the heatmap's cells read it: 0.1234


def encode_patterns(patterns: list[np.ndarray]) -> str:
    """[L] × [1, h, n, n] weights as the heatmap's cells read them, to 4 decimals (WEIGHT_CHARS each), layer by
    layer, head by head, row by row, each row's keys up to its query (the others are masked): one text, about
    the size of the same weights in base64, that the page reads and draws without writing a number."""
    stacked = np.nan_to_num(np.stack([p[0] for p in patterns]))  # [L, h, n, n]; a diverged run's NaN: 6 characters too
    q, k = np.tril_indices(stacked.shape[-1])
    return "".join(f"{w:.4f}" for w in stacked[..., q, k].ravel().tolist())  # weights in [0, 1]: no sign


def checkpoint_view(params: dict, config: TrainConfig, entry: dict) -> dict:
    """One checkpoint for the widget: patterns on display_tokens, the heads' roles, the weights, each head's
    caption, and what is shown for it ("outputs": checkpoint_outputs). entry: the history entry of its step."""
    _, patterns = forward(params, np.array([display_tokens(config)]), config)
    roles = head_roles(entry["scores"])
    return {"step": entry["step"], "patterns": encode_patterns(patterns), "roles": roles,
            "captions": captions(config, entry["step"]),
            "params": encode_params(params, config), "outputs": checkpoint_outputs(rounded(entry), roles)}


def checkpoint_views(trainer: Trainer, checkpoints: list[dict]) -> list[dict]:
    entries = {h["step"]: h for h in trainer.history}
    return [checkpoint_view(c["params"], trainer.config, entries[c["step"]]) for c in checkpoints]


def head_titles(config: TrainConfig) -> list[list[dict]]:
    """Each head's names, [n_layers][n_heads]: {"name": "L1 H0" (the grid's, a knock-out's), "title": "Layer 1,
    head 0" (the heatmap's caption)}."""
    return [[{"name": head_name(layer, head), "title": f"Layer {layer}, head {head}"} for head in range(config.n_heads)]
            for layer in range(config.n_layers)]


YOUR_TEXT = "your text"  # what a caption calls the reader's text


def captions(config: TrainConfig, step: int, ablate=(), sequence: str | None = None) -> list[list[str]]:
    """The heatmap's caption for each head, [n_layers][n_heads], at step with the heads of ablate knocked out, on
    sequence (the reader's words for it; None: display_words')."""
    knocked = f" (knocked out: {', '.join(head_name(*h) for h in sorted(ablate))})" if ablate else ""
    on = display_words(config) if sequence is None else sequence
    return [[f"{head['title']} at step {step}{knocked}: each row is a query, each column a key, on {on}."
             for head in row] for row in head_titles(config)]


def messages() -> dict:
    """The widget's sentences that are not a view's, shown as they are; "asset-failed" is the one the runtime
    fills in, with why the recorded run's file did not arrive ({error}: runtime/asset.js)."""
    return {"knock-out": "Knock out this head", "restore": "Restore this head",
            "measuring": "Measuring without the knocked-out heads (Python)\u2026",
            "starting": "Starting Python and a fresh model\u2026",
            "partial": "Shown: your run, up to its last good checkpoint.",
            "no-text": "Type a text first: at least two words or punctuation marks.",
            "asset-failed": "The recorded run could not be loaded: {error}"}


def built_status(seed: int = RECORDED_SEED) -> str:
    """The status line while the run the page was built with is shown."""
    return f"Shown: the run trained when this page was built (seed {seed})."


def shown_heads(run: dict) -> dict:
    """The heads the widget selects in the run the page ships ([layer, head]): "selected", the first named
    induction at its last checkpoint (else the last layer's first head); "knockout", the one its "Knock out an
    induction head" knocks out: the highest induction score at the last step outside layer 0 (in it, for one layer)."""
    config, roles = run["config"], run["checkpoints"][-1]["roles"]
    named = [[layer, head] for layer, row in enumerate(roles) for head, role in enumerate(row) if role == "induction"]
    induction = run["history"][-1]["scores"]["induction"]
    heads = [[layer, head] for layer, row in enumerate(induction) for head in range(len(row))
             if layer > 0 or config["n_layers"] == 1]
    return {"selected": named[0] if named else [config["n_layers"] - 1, 0],
            "knockout": max(heads, key=lambda lh: induction[lh[0]][lh[1]])}


def shown_as(labels: list[str]) -> dict:
    """What the heatmap writes of a sequence: "labels", its axes' (one a token), and "names", its cells'
    (cell_names: the same words as the heads widget's, once per token)."""
    return {"labels": labels, "names": cell_names(labels)}


def run_view(trainer: Trainer, reference: list[float] | None = None) -> dict:
    """The run so far as the widget reads it (history rounded, checkpoints as checkpoint_view, both charts as
    chart_slots draws them with reference)."""
    config = trainer.config
    return {"config": asdict(config), "seed": trainer.seed, **SCHEDULE, "step": trainer.step,
            "tokens": display_tokens(config), "sequence": display_words(config), **shown_as(display_labels(config)),
            "history": [rounded(h) for h in trainer.history], "charts": chart_slots(trainer.history, config, reference),
            "checkpoints": checkpoint_views(trainer, trainer.checkpoints)}


# ---------------------------------------------------------------- runs

def schedule_trainer(config: TrainConfig, seed: int) -> Trainer:
    """A run on the widget's schedule (SCHEDULE, SCHEDULE_DTYPE)."""
    return Trainer(config, seed, SCHEDULE["log_every"], SCHEDULE["checkpoint_every"], SCHEDULE_DTYPE)


def recorded_run(config: TrainConfig | None = None, seed: int = 0) -> dict:
    """A whole run of SCHEDULE["steps"] steps, as run_view gives it (what the page ships)."""
    trainer = schedule_trainer(TrainConfig() if config is None else config, seed)
    trainer.run(SCHEDULE["steps"])
    return run_view(trainer)


def run_name(seed: int) -> str:
    """'seed 7', or 'seed 0, the recorded run's' for the seed whose numbers the lesson quotes."""
    return f"seed {seed}, the recorded run's" if seed == RECORDED_SEED else f"seed {seed}"


def run_outputs(run: int, trainer: Trainer, done: bool = False) -> dict:
    """The reader's run as its status line, progress and clock say it (mha_page.views' slots)."""
    steps, name = SCHEDULE["steps"], run_name(trainer.seed)
    elapsed = f"{decimal(time.perf_counter() - STARTED[run], 1)} s"
    status = (f"Shown: your run ({name}), {trainer.step} steps in {elapsed}." if done else
              f"Training a fresh model ({name}): step {trainer.step} of {steps}…")
    return {"run": status, "elapsed": elapsed,
            "progress": {"text": f"{trainer.step} of {steps} steps", "attrs": {"value": trainer.step}}}


def running(run: int) -> Trainer:
    """The run in progress with this id, or a ValueError that says it is over."""
    if run not in RUNS:
        raise ValueError("this training run is over (stopped, replaced by a newer one, or never started).")
    return RUNS[run]


def reader_config(config: dict) -> TrainConfig:
    """TrainConfig(**config), or a ValueError naming the widget's fields when the block lengths are out of order."""
    shortest, longest = config.get("min_period", TrainConfig.min_period), config.get("max_period", TrainConfig.max_period)
    if shortest > longest:
        raise ValueError(f"{TRAIN_LABELS['min_period']} ({shortest}) must not be larger than the longest ({longest}).")
    return TrainConfig(**config)


@arguments(config=TRAIN_CONFIG, seed=SEED, reference=Maybe(REFERENCE_LOSSES))
def training_start(config: dict | None = None, seed: int = 0, reference: list | None = None) -> dict:
    """Start a run of TrainConfig(**config) in this Python (ending any other): {"run": its id, ...run_view at step 0,
    "outputs": run_outputs}. reference: another run's loss on repeats, one per SCHEDULE["log_every"] steps, that
    its charts draw beside it (the recorded run's), or None."""
    trainer = schedule_trainer(reader_config(config or {}), seed)
    for registry in (RUNS, STARTED, REFERENCES):
        registry.clear()
    run = next(RUN_IDS)
    RUNS[run], STARTED[run], REFERENCES[run] = trainer, time.perf_counter(), reference
    return {"run": run, **run_view(trainer, reference), "outputs": run_outputs(run, trainer)}


@arguments(run=RUN, budget_ms=Number(0, MAX_BUDGET_MS))
def training_advance(run: int, budget_ms: float = 80) -> dict:
    """Train run for about budget_ms (at least one step, never past SCHEDULE["steps"]).

    Returns {"step", "done", "history": the new entries, "checkpoints": the new ones, "outputs": run_outputs and
    both charts of the whole history (chart_slots)}. A diverged run
    is ended and its message raised (TrainingDiverged, a ValueError).
    """
    trainer = running(run)
    logged, saved = len(trainer.history), len(trainer.checkpoints)
    left = SCHEDULE["steps"] - trainer.step
    try:
        if left:
            trainer.run(left, budget_s=budget_ms / 1000)
    except TrainingDiverged:
        RUNS.pop(run, None)
        raise
    done = trainer.step >= SCHEDULE["steps"]
    outputs = {**run_outputs(run, trainer, done), **chart_slots(trainer.history, trainer.config, REFERENCES[run])}
    if done:
        RUNS.pop(run, None)
    return {"step": trainer.step, "done": done, "outputs": outputs,
            "history": [rounded(h) for h in trainer.history[logged:]],
            "checkpoints": checkpoint_views(trainer, trainer.checkpoints[saved:])}


@arguments(run=RUN)
def training_stop(run: int) -> dict:
    """End run: {"stopped": True, "outputs": the status line of the run stopped}, or {"stopped": False} if it had
    already ended."""
    trainer = RUNS.pop(run, None)
    if trainer is None:
        return {"stopped": False}
    status = (f"Shown: your run ({run_name(trainer.seed)}), stopped at step {trainer.step} "
              f"(its last checkpoint: step {trainer.checkpoints[-1]['step']}).")
    left = f"Your run ({run_name(trainer.seed)}) stopped at step {trainer.step} when you left this page. {built_status()}"
    return {"stopped": True, "outputs": {"run": status}, "left": left}


def fitting_ablate(ablate: list, config: TrainConfig) -> list[tuple[int, int]]:
    """ablate's [layer, head] pairs as tuples, or a ValueError if one names a head this config does not have."""
    for layer, head in ablate:
        if layer >= config.n_layers or head >= config.n_heads:
            raise ValueError(f"ablate holds [layer, head] pairs with layer < {config.n_layers} and "
                             f"head < {config.n_heads}, got {[layer, head]}.")
    return [(layer, head) for layer, head in ablate]


def head_names(heads) -> str:
    """[(1, 0), (0, 1)] -> 'L0 H1 and L1 H0'."""
    names = [head_name(layer, head) for layer, head in sorted(heads)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def knockout_readout(intact: dict, ablated: dict, ablate: list[tuple[int, int]]) -> str:
    """What a knock-out changes, in words: the two losses, then the heads of later layers, which read what the
    knocked-out heads wrote (a knocked-out head's own pattern never changes: zeroing removes what it writes,
    not where it looks). intact and ablated: evaluate's answers without and with the heads in ablate zeroed."""
    if not ablate:
        return ""
    its = "its" if len(ablate) == 1 else "their"
    n_layers, n_heads = len(intact["scores"]["induction"]), len(intact["scores"]["induction"][0])
    text = (f"{head_names(ablate)} knocked out ({its} output zeroed). "
            f"Loss on the repeats {decimal(intact['loss_repeat'], 3)} → {decimal(ablated['loss_repeat'], 3)} nats; "
            f"on first occurrences (tokens new to the sequence, which no head can copy) "
            f"{decimal(intact['loss_first'], 3)} → {decimal(ablated['loss_first'], 3)}.")
    readers = [(layer, head) for layer in range(min(layer for layer, _ in ablate) + 1, n_layers)
               for head in range(n_heads) if (layer, head) not in ablate]
    if readers:
        return text + f" Later heads read {its} output, so their patterns change: induction score of " + \
            ", ".join(f"{head_names([h])} {_score(intact, h)} → {_score(ablated, h)}" for h in readers) + "."
    last = max(layer for layer, _ in ablate)  # no layer after it: every pattern stays
    others = [(last, head) for head in range(n_heads) if (last, head) not in ablate]
    kept = "".join(f" {head_names([h])} keeps its pattern (induction score {_score(intact, h)})." for h in others)
    return (text + f" No later layer reads {its} output, so no pattern changes: what changes is the prediction, "
            f"which loses what {'it' if len(ablate) == 1 else 'they'} wrote.{kept}")


def _score(evaluated: dict, head: tuple[int, int]) -> str:
    return decimal(evaluated["scores"]["induction"][head[0]][head[1]], 3)


@arguments(config=TRAIN_CONFIG, seed=SEED, params=Text(MAX_PARAMS_CHARS), ablate=ABLATE,
           text=Maybe(Text(MAX_TEXT_CHARS)), step=Whole(0, 2**31))
def training_evaluate(config: dict, seed: int, params: str, ablate=(), text: str | None = None, step: int = 0) -> dict:
    """A checkpoint's weights (params, encode_params' form) with and without the heads in ablate zeroed.

    Returns {"intact": evaluate(...), "ablated": evaluate(..., ablate)} on the evaluation batch of the
    run with this seed, "readout" (knockout_readout's words, empty without a knock-out), "outputs" (the
    ablated loss and scores as score_outputs' slots), and "patterns" (ablated, encoded as in checkpoint_view)
    with shown_as' "labels" and "names" of display_tokens, or of the reader's text (text_tokens) when text is given,
    and each head's caption ("captions", as captions says it; step: the checkpoint's).
    """
    config = TrainConfig(**config)
    weights = decode_params(params, config)
    tokens = eval_batch(config, seed)
    ablate = fitting_ablate(ablate, config)
    if text is None:
        shown, labels = display_tokens(config), display_labels(config)
    else:
        shown, labels = text_tokens(text, config)
    _, patterns = forward(weights, np.array([shown]), config, ablate)
    intact, ablated = rounded(evaluate(weights, tokens, config)), rounded(evaluate(weights, tokens, config, ablate))
    return {"intact": intact, "ablated": ablated, "readout": knockout_readout(intact, ablated, ablate),
            "outputs": score_outputs(ablated),
            "patterns": encode_patterns(patterns), **shown_as(labels),
            "captions": captions(config, step, ablate, None if text is None else YOUR_TEXT)}
