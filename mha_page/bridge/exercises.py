"""The exercises' Python's one entry point: call(fn_name, args_json) over EXERCISE_FUNCTIONS, as bridge.call.

This module is the entry of the worker that runs the reader's code (widgets/exercise/runner.js), a Python of
its own: run_exercise is served here and nowhere in the widgets' FUNCTIONS, so the widgets' Python never
runs a reader's code.
"""

from __future__ import annotations

from mha_core.exercises import MAX_CODE_CHARS, run_exercise
from ..views.runtime import ready_message
from . import call as bridge_call

# Their arguments declared where they are defined; ready_message, what every Python's start asks (worker.js).
EXERCISE_FUNCTIONS = {fn.__name__: fn for fn in (run_exercise, ready_message)}
__all__ = ["EXERCISE_FUNCTIONS", "MAX_CODE_CHARS", "call"]


def call(fn_name: str, args_json: str) -> str:
    """Run EXERCISE_FUNCTIONS[fn_name] with the JSON arguments and answer in JSON; never raises."""
    return bridge_call(fn_name, args_json, EXERCISE_FUNCTIONS)
