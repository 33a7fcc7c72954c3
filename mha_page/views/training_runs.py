"""The reader's own runs in this Python: the registry of the run in progress (one at a time, by id), and the
functions the browser calls to start it, train it slice by slice and stop it (see bridge.FUNCTIONS)."""
from __future__ import annotations

import itertools
import time

from mha_core.fields import ListOf, Maybe, Number, Whole, arguments
from mha_core.model import SEED, TRAIN_CONFIG, TRAIN_LABELS, TrainConfig
from mha_core.training import Trainer, TrainingDiverged

from . import decimal
from .training import checkpoint_views, rounded, run_view
from .training_charts import chart_slots
from .training_schedule import SCHEDULE, schedule_trainer
from .training_words import built_status, run_name

RUNS: dict[int, Trainer] = {}  # the browser's run in progress, by id (one at a time)
STARTED: dict[int, float] = {}  # when each run in RUNS started (time.perf_counter), for its elapsed time
REFERENCES: dict[int, list[float] | None] = {}  # each run in RUNS's reference (training_start's), for its charts
RUN_IDS = itertools.count(1)
RUN = Whole(1, 2**53)  # a run's id, as training_start gave it
MAX_BUDGET_MS = 1000
REFERENCE_LOSSES = ListOf(Number(-1, 1e6), SCHEDULE["steps"] // SCHEDULE["log_every"] + 1)  # a run's, one per log


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
