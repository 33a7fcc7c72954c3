"""Build-time side of an exercise: its task, skeleton and solution, from mha_core.exercises (the one place
they are defined, with the checks the browser runs), and the editor's bundle (sitebuild/editor.py)."""
from __future__ import annotations

from markupsafe import Markup, escape

from mha_core.exercises import EXERCISES, exercise_info
from sitebuild import editor

OPTIONS = {"name": str}


def context(name: str = "") -> dict:
    if name not in EXERCISES:
        raise ValueError(f"unknown exercise name={name!r} (known: {', '.join(EXERCISES)})")
    info = exercise_info(name)
    return {"exercise": info, "skeleton": one_line(info["skeleton"]), "solution": one_line(info["solution"])}


def one_line(code: str) -> Markup:
    """code escaped, its line breaks as character references: a widget's HTML reaches Markdown without blank
    lines (sitebuild/widgets.py), and a textarea or a pre reads &#10; as a line break."""
    return Markup(str(escape(code)).replace("\n", "&#10;"))


def assets() -> dict[str, bytes]:
    return {editor.BUNDLE: editor.bundle()}
