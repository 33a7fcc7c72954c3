"""The exercises' Python's one entry point: call(fn_name, args_json) over EXERCISE_FUNCTIONS, as bridge.call.

This module is the entry of the worker that runs the reader's code (widgets/exercise/runner.js), a Python of
its own: run_exercise is declared here and nowhere in the widgets' FUNCTIONS, so the widgets' Python never
runs a reader's code.
"""

from __future__ import annotations

from ..exercises import EXERCISES, run_exercise
from . import call as bridge_call, declare
from ..fields import Choice, Text

MAX_CODE_CHARS = 100_000  # far more than any answer needs; bounds what compile() is handed

EXERCISE_FUNCTIONS = {
    "run_exercise": declare(run_exercise, name=Choice(tuple(EXERCISES)), code=Text(MAX_CODE_CHARS)),
}


def call(fn_name: str, args_json: str) -> str:
    """Run EXERCISE_FUNCTIONS[fn_name] with the JSON arguments and answer in JSON; never raises."""
    return bridge_call(fn_name, args_json, EXERCISE_FUNCTIONS)
