"""Build-time side of the training widget: the default model, trained once in CPython, as the page's asset.

assets() ships the recorded run (widgets/training/run.py: history, and checkpoints with patterns and weights)
as run.json; context() gives the template the last checkpoint's numbers and the asset's sha256, which
training.js checks before using the file.
"""
from __future__ import annotations

import hashlib
import json

from mha_page import bridge
from mha_core.model import TRAIN_LABELS
from mha_page.views import whole_error
from mha_page.views.training import shown_heads
from mha_page.views.training_charts import BOX, MAX_LINES, MAX_TICKS
from mha_page.views.training_words import built_status, messages
from mha_core.model import EXPERIMENTS, TRAIN_CHOICES
from widgets.palette import PALETTE, STEPS
from widgets.training.run import ASSET, asset_bytes

# What the reader can pick, from the model's one configuration (mha_core.model: the bridge takes more).
LRS, LAYERS, HEADS = (list(TRAIN_CHOICES[name]) for name in ("lr", "n_layers", "n_heads"))

OPTIONS: dict = {}


def assets() -> dict[str, bytes]:
    """File name -> content, written beside the widget's scripts."""
    return {ASSET: asset_bytes()}


def context() -> dict:
    """The template's variables: the last checkpoint's view (its grid of heads among them) and the run's charts
    (mha_page.views' slots), the asset's name and sha256."""
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
        "box": BOX, "max_ticks": MAX_TICKS, "max_lines": MAX_LINES, "lrs": LRS, "layers": LAYERS, "heads": HEADS,
        "total_steps": run["steps"], "limits": limits, "whole_error": whole_error, "labels": TRAIN_LABELS,
        "built": built_status(run["seed"]), "words": messages(),
        "experiments": {name: json.dumps(change) for name, change in EXPERIMENTS.items()},
        "data": {"history": run["history"], "charts": run["charts"], "last": {k: v for k, v in last.items() if k != "params"},
                 "labels": run["labels"], "names": run["names"], "config": config, "seed": run["seed"],
                 "checkpoint_steps": [c["step"] for c in run["checkpoints"]], "palette": PALETTE, "paletteSteps": STEPS,
                 "reference": [h["loss_repeat"] for h in run["history"]], **shown_heads(run), "words": messages()},
    }
