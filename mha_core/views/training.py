"""What the training widget reads: a run as plain JSON (histories rounded to what is shown, patterns and weights
packed into text and base64), the run the page ships (recorded_run), and the run in progress in this Python.

The numbers come from mha_core.model, .detectors and .training; this module only chooses what the widget
shows and how it travels. Its functions training_* are the ones the browser calls (see bridge.FUNCTIONS).
"""

from __future__ import annotations

import base64
import itertools
import math
import time
from dataclasses import asdict

import numpy as np

from ..detectors import DETECTORS, evaluate
from ..fields import Maybe, Number, Text, Whole, arguments
from ..model import ABLATE, MAX_STEP_FLOPS, RECORDED_SEED, SEED, TRAIN_CONFIG, TrainConfig, forward, unflatten
from ..rng import Random
from ..tokens import MAX_TEXT_CHARS, first_tokens, token_key
from ..training import Trainer, TrainingDiverged, eval_batch
from . import decimal, plural

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # token t is shown as SYMBOLS[t]
SCHEDULE = {"steps": 600, "log_every": 10, "checkpoint_every": 30}  # a run as the widget shows it
SCHEDULE_DTYPE = np.float32  # the widget's runs, built and live, train in float32
ROLE_MIN = 0.4  # a head is named after its best detector score when that score reaches this
ROLE_NAMES = {"previous_token": "previous-token", "induction": "induction", "duplicate_token": "duplicate-token",
              "first_token": "first-token", None: "no clear role"}
RUNS: dict[int, Trainer] = {}  # the browser's run in progress, by id (one at a time)
STARTED: dict[int, float] = {}  # when each run in RUNS started (time.perf_counter), for its elapsed time
RUN_IDS = itertools.count(1)
RUN = Whole(1, 2**53)  # a run's id, as training_start gave it
MAX_BUDGET_MS = 1000
MAX_PARAMS_CHARS = 4 * MAX_STEP_FLOPS  # base64 of float16 weights: far more than any allowed model has


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
    parts = [f"L{layer} H{head} is {'an' if ROLE_NAMES[role][0] in 'aeiou' else 'a'} {ROLE_NAMES[role]} head "
             f"(score {decimal(scores[role][layer][head], 3)})" for role, layer, head in named]
    others = [(scores[kind][layer][head], kind, layer, head) for kind in scores
              for layer, row in enumerate(roles) for head, role in enumerate(row) if not role]
    rest = ""
    if others:
        score, kind, layer, head = max(others, key=lambda o: o[0])  # the first of equal scores, as listed
        rest = (f" The highest score of {'the other heads' if named else 'any head'}: L{layer} H{head}'s "
                f"{ROLE_NAMES[kind]} score, {decimal(score, 3)}.")
    if not named:
        return f"At step {step} no head has a clear role yet: every detector score is below {ROLE_MIN}.{rest}"
    return f"At step {step}, {'; '.join(parts)}.{rest}"


def score_outputs(evaluated: dict, roles: list[list[str | None]] | None = None) -> dict:
    """The slots (mha_core.views' form) of evaluate's numbers: the loss on the repeats and each head's scores,
    its cell "head-{layer}-{head}"; with roles, each head's role too."""
    loss = decimal(evaluated["loss_repeat"], 3)
    out = {"loss": {"text": loss, "value": loss}}
    prev, induction = evaluated["scores"]["previous_token"], evaluated["scores"]["induction"]
    for layer, row in enumerate(prev):
        for head in range(len(row)):
            p, i = decimal(prev[layer][head], 3), decimal(induction[layer][head], 3)
            cell = {"data": {"score-previous-token": p, "score-induction": i}, "outputs": {"prev": p, "induction": i}}
            if roles is not None:
                cell["data"]["role"] = roles[layer][head] or ""
                cell["outputs"]["role"] = ROLE_NAMES[roles[layer][head]]
            out[f"head-{layer}-{head}"] = cell
    return out


def checkpoint_outputs(entry: dict, roles: list[list[str | None]]) -> dict:
    """Every number and word shown for a checkpoint (entry: its history entry, rounded): the step, the loss on the
    repeats, each head's scores and role, and the sentence under the slider."""
    step = str(entry["step"])
    return {"step": {"text": step, "value": step}, **score_outputs(entry, roles),
            "summary": summary(roles, entry["scores"], entry["step"])}


SCORE_TICKS = 5  # the score axis: 0, 0.2, …, 1.0


def score_lines(config: TrainConfig) -> list[dict]:
    """The scores drawn, one line per head: previous-token for the layers before the last, induction for the last
    (both for a model of one layer): [{"kind", "layer", "head", "label"}]."""
    def kinds(layer):
        return ["previous_token", "induction"] if config.n_layers == 1 else \
            ["previous_token" if layer < config.n_layers - 1 else "induction"]
    return [{"kind": kind, "layer": layer, "head": head, "label": f"L{layer} H{head} {ROLE_NAMES[kind]}"}
            for layer in range(config.n_layers) for kind in kinds(layer) for head in range(config.n_heads)]


def reference_label(config: TrainConfig) -> str:
    """The legend of a run's loss on repeats drawn beside another run's, for comparison."""
    return f"recorded run ({plural(config.n_layers, 'layer')}), loss on repeats"


def chart_axes(history: list[dict], config: TrainConfig) -> dict:
    """The two charts' axes and lines as the reader reads them: {"steps": the x-axis both share ({"start", "end",
    "label"}), "loss", "scores"}, each {"top", "unit", "ticks": [{"value", "text"}], "lines"}; the loss's also "level", a uniform guess's loss (ln vocab) with its label. The
    loss axis reaches the highest loss of history, at most twice a uniform guess's (a diverging run is clipped, not
    squeezed flat), in whole nats."""
    vocab = config.vocab
    uniform = math.log(vocab)
    losses = [h[k] for h in history for k in ("loss_first", "loss_repeat") if math.isfinite(h[k])]
    top = math.ceil(min(max([uniform, *losses]), 2 * uniform))
    level = {"value": uniform, "text": f"{uniform:.4f}", "label": f"uniform guess: ln {vocab} = {decimal(uniform)}",
             "legend": f"uniform guess ({decimal(uniform)} nats)"}
    losses = [{"key": "loss_first", "label": "loss on first occurrences"},
              {"key": "loss_repeat", "label": "loss on repeats"}]
    steps = {"start": "0", "end": str(SCHEDULE["steps"]), "label": "training step"}
    return {"steps": steps, "loss": {"top": top, "unit": "loss (nats)", "level": level, "lines": losses,
                     "ticks": [{"value": v, "text": str(v)} for v in range(top + 1)]},
            "scores": {"top": 1, "unit": "score (0 to 1)", "lines": score_lines(config),
                       "ticks": [{"value": i / SCORE_TICKS, "text": "0" if i == 0 else decimal(i / SCORE_TICKS, 1)}
                                 for i in range(SCORE_TICKS + 1)]}}


# ---------------------------------------------------------------- how it travels

WEIGHT_CHARS = 6  # a weight as the heatmap's cells read it: 0.1234


def encode_patterns(patterns: list[np.ndarray]) -> str:
    """[L] × [1, h, n, n] weights as the heatmap's cells read them, to 4 decimals (WEIGHT_CHARS each), layer by
    layer, head by head, row by row, each row's keys up to its query (the others are masked): one text, about
    the size of the same weights in base64, that the page reads and draws without writing a number."""
    stacked = np.nan_to_num(np.stack([p[0] for p in patterns]))  # [L, h, n, n]; a diverged run's NaN: 6 characters too
    q, k = np.tril_indices(stacked.shape[-1])
    return "".join(f"{w:.4f}" for w in stacked[..., q, k].ravel().tolist())  # weights in [0, 1]: no sign


def encode_params(params: dict, config: TrainConfig) -> str:
    """The weights as base64 of float16 numbers, concatenated in param_shapes' order (2 bytes each)."""
    return base64.b64encode(b"".join(params[name].astype("<f2").tobytes() for name in config.param_shapes)).decode()


def decode_params(text: str, config: TrainConfig) -> dict[str, np.ndarray]:
    """encode_params' inverse (float64 arrays), or a ValueError if text does not fit config."""
    try:
        data = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f2")
    except (TypeError, ValueError):
        raise ValueError("params must be base64 text (encode_params' form).") from None
    sizes = [math.prod(shape) for shape in config.param_shapes.values()]
    if data.size != sum(sizes):
        raise ValueError(f"params hold {data.size} numbers, but this config has {sum(sizes)} weights.")
    if not np.isfinite(data).all():
        raise ValueError("params contain NaN or infinite values.")
    return {name: p.astype(np.float64) for name, p in unflatten(data, config).items()}


def checkpoint_view(params: dict, config: TrainConfig, entry: dict) -> dict:
    """One checkpoint for the widget: patterns on display_tokens, the heads' roles, the weights, and what is shown
    for it ("outputs": checkpoint_outputs). entry: the history entry of its step."""
    _, patterns = forward(params, np.array([display_tokens(config)]), config)
    roles = head_roles(entry["scores"])
    return {"step": entry["step"], "patterns": encode_patterns(patterns), "roles": roles,
            "params": encode_params(params, config), "outputs": checkpoint_outputs(rounded(entry), roles)}


def checkpoint_views(trainer: Trainer, checkpoints: list[dict]) -> list[dict]:
    entries = {h["step"]: h for h in trainer.history}
    return [checkpoint_view(c["params"], trainer.config, entries[c["step"]]) for c in checkpoints]


def head_titles(config: TrainConfig) -> list[list[dict]]:
    """Each head's names, [n_layers][n_heads]: {"name": "L1 H0" (the grid's, a knock-out's), "title": "Layer 1,
    head 0" (the heatmap's caption)}."""
    return [[{"name": f"L{layer} H{head}", "title": f"Layer {layer}, head {head}"} for head in range(config.n_heads)]
            for layer in range(config.n_layers)]


def messages() -> dict:
    """The widget's sentences that are not a view's; {name} marks what the page fills in with texts made elsewhere
    (a head's names from head_titles, a step's text from checkpoint_outputs, a field's text as typed)."""
    return {"caption": "{head} at step {step}{knocked}: each row is a query, each column a key, on {sequence}.",
            "knocked": " (knocked out: {heads})", "separator": ", ", "your-text": "your text", "cell-name": "{head}: ",
            "knock-out": "Knock out this head", "restore": "Restore this head",
            "measuring": "Measuring without the knocked-out heads (Python)\u2026",
            "starting": "Starting Python and a fresh model\u2026",
            "partial": "Shown: your run, up to its last good checkpoint.", "left": "{left} {shown}",
            "no-text": "Type a text first: at least two words or punctuation marks.",
            "asset-failed": "The recorded run could not be loaded: {error}",
            "asset-changed": "{asset} is not the file this page was built with (its sha256 differs)",
            "block-order": "Block length from {from} to {to}: the first must not be larger than the second."}


def run_view(trainer: Trainer) -> dict:
    """The run so far as the widget reads it (history rounded, checkpoints as checkpoint_view)."""
    config = trainer.config
    return {"config": asdict(config), "seed": trainer.seed, **SCHEDULE, "step": trainer.step, "heads": head_titles(config),
            "tokens": display_tokens(config), "sequence": display_words(config), "symbols": SYMBOLS[:config.vocab],
            "history": [rounded(h) for h in trainer.history], "axes": chart_axes(trainer.history, config),
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
    """The reader's run as its status line, progress and clock say it (mha_core.views' slots)."""
    steps, name = SCHEDULE["steps"], run_name(trainer.seed)
    elapsed = f"{decimal(time.perf_counter() - STARTED[run], 1)} s"
    status = (f"Shown: your run ({name}), {trainer.step} steps in {elapsed}." if done else
              f"Training a fresh model ({name}): step {trainer.step} of {steps}…")
    return {"run": status, "elapsed": elapsed, "progress": f"{trainer.step} of {steps} steps"}


def running(run: int) -> Trainer:
    """The run in progress with this id, or a ValueError that says it is over."""
    if run not in RUNS:
        raise ValueError("this training run is over (stopped, replaced by a newer one, or never started).")
    return RUNS[run]


@arguments(config=TRAIN_CONFIG, seed=SEED)
def training_start(config: dict | None = None, seed: int = 0) -> dict:
    """Start a run of TrainConfig(**config) in this Python (ending any other): {"run": its id, ...run_view at step 0,
    "outputs": run_outputs}."""
    trainer = schedule_trainer(TrainConfig(**(config or {})), seed)
    RUNS.clear()
    STARTED.clear()
    run = next(RUN_IDS)
    RUNS[run], STARTED[run] = trainer, time.perf_counter()
    return {"run": run, **run_view(trainer), "outputs": run_outputs(run, trainer)}


@arguments(run=RUN, budget_ms=Number(0, MAX_BUDGET_MS))
def training_advance(run: int, budget_ms: float = 80) -> dict:
    """Train run for about budget_ms (at least one step, never past SCHEDULE["steps"]).

    Returns {"step", "done", "history": the new entries, "checkpoints": the new ones, "axes": the charts'
    axes for the whole history, "outputs": run_outputs}. A diverged run
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
    outputs = run_outputs(run, trainer, done)
    if done:
        RUNS.pop(run, None)
    return {"step": trainer.step, "done": done, "outputs": outputs,
            "history": [rounded(h) for h in trainer.history[logged:]],
            "axes": chart_axes(trainer.history, trainer.config),
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
    left = f"Your run ({run_name(trainer.seed)}) stopped at step {trainer.step} when you left this page."
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
    names = [f"L{layer} H{head}" for layer, head in sorted(heads)]
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
           text=Maybe(Text(MAX_TEXT_CHARS)))
def training_evaluate(config: dict, seed: int, params: str, ablate=(), text: str | None = None) -> dict:
    """A checkpoint's weights (params, encode_params' form) with and without the heads in ablate zeroed.

    Returns {"intact": evaluate(...), "ablated": evaluate(..., ablate)} on the evaluation batch of the
    run with this seed, "readout" (knockout_readout's words, empty without a knock-out), "outputs" (the
    ablated loss and scores as score_outputs' slots), and "patterns" (ablated, encoded as in checkpoint_view)
    with their "labels" on display_tokens, or on the reader's text (text_tokens) when text is given.
    """
    config = TrainConfig(**config)
    weights = decode_params(params, config)
    tokens = eval_batch(config, seed)
    ablate = fitting_ablate(ablate, config)
    if text is None:
        shown = display_tokens(config)
        labels = [SYMBOLS[t] for t in shown]
    else:
        shown, labels = text_tokens(text, config)
    _, patterns = forward(weights, np.array([shown]), config, ablate)
    intact, ablated = rounded(evaluate(weights, tokens, config)), rounded(evaluate(weights, tokens, config, ablate))
    return {"intact": intact, "ablated": ablated, "readout": knockout_readout(intact, ablated, ablate),
            "outputs": score_outputs(ablated),
            "patterns": encode_patterns(patterns), "labels": labels}
