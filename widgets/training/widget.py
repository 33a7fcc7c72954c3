"""Build-time side of the training widget: the default model, trained once in CPython, as the page's asset.

recorded_run trains the default TrainConfig from SEED for the widget's schedule (in float32, as the
reader's live runs do) and returns the run as the browser reads it (history, and checkpoints with
patterns and weights). assets() ships it as
run.json, byte-identical between builds of the same sources; context() gives the template the last
checkpoint's numbers and the asset's sha256, which training.js checks before using the file.
The run is kept in .cache/, keyed on this file, SEED and every mha_core module the run imports (found from the
imports themselves, sitebuild.sources), so an edit to any of them trains it again.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from mha_core import bridge
from mha_core.model import TRAIN_LABELS
from mha_core.views import whole_error
from mha_core.views.training import BOX, MAX_LINES, MAX_TICKS, built_status, messages, recorded_run, shown_heads
from mha_core.model import EXPERIMENTS, RECORDED_SEED as SEED, TRAIN_CHOICES, TrainConfig
from sitebuild import CACHE, kept
from sitebuild.sources import sources_key
from widgets.palette import PALETTE, STEPS

ROOT = Path(__file__).resolve().parents[2]
RUN_MODULE = ROOT / "mha_core" / "views" / "training.py"  # where recorded_run lives
ASSET = "run.json"
# What the reader can pick, from the model's one configuration (mha_core.model: the bridge takes more).
LRS, LAYERS, HEADS = (list(TRAIN_CHOICES[name]) for name in ("lr", "n_layers", "n_heads"))

OPTIONS: dict = {}


def cache_key(root: Path = ROOT) -> str:
    """What the recorded run depends on: SEED, this file, and every module recorded_run imports, transitively."""
    digest = hashlib.sha256(f"seed={SEED}".encode() + Path(__file__).read_bytes())
    digest.update(sources_key(root, root / RUN_MODULE.relative_to(ROOT)).encode())
    return digest.hexdigest()[:20]


@functools.cache
def asset_bytes() -> bytes:
    """run.json: the recorded run as compact JSON (sorted keys, no NaN), from the cache when the sources match."""
    def make() -> bytes:
        run = recorded_run(TrainConfig(), SEED)
        return json.dumps(run, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return kept(CACHE / f"training-run-{cache_key()}.json", make)


def assets() -> dict[str, bytes]:
    """File name -> content, written beside the widget's scripts."""
    return {ASSET: asset_bytes()}


def context() -> dict:
    """The template's variables: the last checkpoint's view (its grid of heads among them) and the run's charts
    (mha_core.views' slots), the asset's name and sha256."""
    data = asset_bytes()
    run = json.loads(data)
    last = run["checkpoints"][-1]
    config = run["config"]
    limits = bridge.limits("training_start")["config"]  # each setting's range, as the bridge checks it
    for name, offered in (("n_layers", LAYERS), ("n_heads", HEADS)):
        if not limits[name]["min"] <= min(offered) <= max(offered) <= limits[name]["max"]:
            raise ValueError(f"training widget: {name} {offered} outside the bridge's {limits[name]}")
    return {
        "asset": ASSET, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data),
        "checkpoints": len(run["checkpoints"]), "outputs": {**last["outputs"], **run["charts"]}, "config": config,
        "box": BOX, "max_ticks": MAX_TICKS, "max_lines": MAX_LINES, "lrs": LRS, "layers": LAYERS, "heads": HEADS, "total_steps": run["steps"],
        "limits": limits, "whole_error": whole_error, "built": built_status(run["seed"]), "words": messages(), "labels": TRAIN_LABELS, "experiments": {name: json.dumps(change) for name, change in EXPERIMENTS.items()},
        "data": {"history": run["history"], "charts": run["charts"], "last": {k: v for k, v in last.items() if k != "params"},
                 "labels": run["labels"], "names": run["names"], "config": config, "seed": run["seed"],
                 "steps": run["steps"], "checkpoint_steps": [c["step"] for c in run["checkpoints"]],
                 "palette": PALETTE, "paletteSteps": STEPS, "limits": limits,
                 "reference": [h["loss_repeat"] for h in run["history"]], **shown_heads(run), "words": messages()},
    }
