"""Build-time side of the circuits widget: the shipped run's circuits at every recorded step.

The run is the training widget's asset (run.json, trained once at build time and kept in .cache/). context()
computes mha_page.views.circuits' view of each of its checkpoints in CPython and gives the template the last
one to render; assets() ships all of them (and the run's own view) as one file, named by its content's sha256 so
that no cache holds another build's, which circuits.js fetches when the widget comes near: the step control binds
the view of the step it is moved to with the shared binding, so the widget needs no Python in the browser (every
step is about 6 kB, which the page would otherwise carry unread). The root carries data-mha-widget="circuits".
"""
from __future__ import annotations

import functools
import hashlib
import json

from mha_page.views.circuits import circuits_view, messages
from sitebuild import BuildError
from widgets.training import run as recorded

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
    run = recorded.run()
    steps = [c["step"] for c in run["checkpoints"]]
    if len({b - a for a, b in zip(steps, steps[1:])}) != 1:
        raise BuildError(f"circuits widget: the step control needs evenly spaced checkpoints, got {steps}")
    view = circuits_view(run["config"], run["seed"], steps, [c["params"] for c in run["checkpoints"]],
                         previous_token_head(run))
    return json.loads(json.dumps(view, allow_nan=False))


@functools.cache
def asset() -> tuple[str, bytes]:
    """(file name, content) of the steps' file: {"run": the run's view, "views": {step: its view}} as compact
    JSON, named steps-<the first 16 hex digits of its sha256>.json."""
    view = run_view()
    data = json.dumps({"run": view["run"], "views": {v["data"]["step"]: v for v in view["views"]}},
                      separators=(",", ":"), ensure_ascii=False).encode()
    return f"steps-{hashlib.sha256(data).hexdigest()[:16]}.json", data


def assets() -> dict[str, bytes]:
    """File name -> content, written beside the widget's script."""
    name, data = asset()
    return {name: data}


def context() -> dict:
    """The template's variables: the last step's view, what no step changes, the steps' file and the words
    the widget's script says."""
    view = run_view()
    return {"view": view["views"][-1], "run": view["run"], "fixed": view["fixed"], "asset": asset()[0],
            "words": messages()}
