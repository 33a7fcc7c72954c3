"""Build-time side of the circuits widget: the shipped run's circuits at every recorded step.

The run is the training widget's asset (run.json, trained once at build time and kept in .cache/). context()
computes mha_core.views.circuits' view of each of its checkpoints in CPython and gives the template the last
one to render, and all of them to embed: the step control binds the view of the step it is moved to with the
shared binding, so the widget needs no Python in the browser (every step costs about 6 kB of the page). The root
carries data-mha-widget="circuits".
"""
from __future__ import annotations

import functools
import json

from markupsafe import Markup

from mha_core.views.circuits import circuits_view
from sitebuild import BuildError, widgets

OPTIONS: dict = {}


def previous_token_head(run: dict) -> int:
    """The layer-0 head the run's detectors name previous-token at its last checkpoint (the text speaks of one)."""
    roles = run["checkpoints"][-1]["roles"][0]
    if roles.count("previous_token") != 1:
        raise BuildError(f"circuits widget: the run's layer 0 has no single previous-token head: {roles}")
    return roles.index("previous_token")


@functools.cache
def run_view() -> dict:
    """circuits_view of the training widget's recorded run, as the JSON the browser reads."""
    run = json.loads(widgets.assets("training")["run.json"])
    steps = [c["step"] for c in run["checkpoints"]]
    if len({b - a for a, b in zip(steps, steps[1:])}) != 1:
        raise BuildError(f"circuits widget: the step control needs evenly spaced checkpoints, got {steps}")
    view = circuits_view(run["config"], run["seed"], steps, [c["params"] for c in run["checkpoints"]],
                         previous_token_head(run))
    return json.loads(json.dumps(view, allow_nan=False))


def embedded(value) -> Markup:
    """value as compact JSON safe inside a <template> (no <, > or & left as such)."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return Markup(text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e"))


def context() -> dict:
    """The template's variables: the last step's view, what no step changes, and every step's view to embed
    with the run's own view (the step control's way back to the recorded run after the reader's)."""
    view = run_view()
    return {"view": view["views"][-1], "run": view["run"], "fixed": view["fixed"], "run_json": embedded(view["run"]),
            "steps": embedded({v["data"]["step"]: v for v in view["views"]})}
