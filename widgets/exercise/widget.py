"""Build-time side of an exercise: its task, skeleton and solution, from mha_core.exercises (the one place
they are defined, with the checks the browser runs), and the editor's bundle (sitebuild/editor.py). An exercise
checked on the trained model also carries that model's weights: the last checkpoint of the run the training
widget ships (widgets/training/run.py), which Run hands to the checks."""
from __future__ import annotations

import json

from markupsafe import Markup, escape

from mha_core.exercises import EXERCISES, TIME_LIMIT_S, exercise_info, page_messages
from sitebuild import editor
from widgets.training.run import asset_bytes as training_run

OPTIONS = {"name": str}


def context(name: str = "") -> dict:
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise name={name!r} (known: {', '.join(EXERCISES)})")
    info = exercise_info(name)
    params = json.loads(training_run())["checkpoints"][-1]["params"] if EXERCISES[name].trained_cases else None
    return {"exercise": info, "skeleton": one_line(info["skeleton"]), "solution": one_line(info["solution"]),
            "params": params, "words": page_messages(), "time_limit_ms": TIME_LIMIT_S * 1000}


def one_line(code: str) -> Markup:
    """code escaped, its line breaks as character references: a widget's HTML reaches Markdown without blank
    lines (sitebuild/widgets.py), and a textarea or a pre reads &#10; as a line break."""
    return Markup(str(escape(code)).replace("\n", "&#10;"))


def assets() -> dict[str, bytes]:
    return editor.bundle()
