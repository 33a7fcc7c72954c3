"""The one entry point the browser calls: call(fn_name, args_json) -> JSON string.

The worker passes the function's name and its arguments as data; nothing is evaluated. Answers are
{"ok": true, "result": ...} or {"ok": false, "error": "message"}, with arrays as nested lists.
"""

from __future__ import annotations

import inspect
import json

import numpy as np

from .config import check_config
from .heads import head_patterns, head_weights
from .memory import memory_steps
from .one_vs_many import one_vs_many
from .presets import presets
from .shapes import param_count, shape_report
from .worked import worked_example
from .training import training_advance, training_evaluate, training_start, training_stop

FUNCTIONS = {
    "check_config": check_config,
    "shape_report": shape_report,
    "param_count": param_count,
    "presets": presets,
    "head_patterns": head_patterns,
    "head_weights": head_weights,
    "worked_example": worked_example,
    "memory_steps": memory_steps,
    "one_vs_many": one_vs_many,
    "training_start": training_start,
    "training_advance": training_advance,
    "training_stop": training_stop,
    "training_evaluate": training_evaluate,
}


def _plain(value):
    """value with numpy arrays and scalars turned into lists and Python numbers, tuples into lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def _error(message: str) -> str:
    return json.dumps({"ok": False, "error": message})


def call(fn_name: str, args_json: str, functions: dict = FUNCTIONS) -> str:
    """Run functions[fn_name](**json.loads(args_json)) and answer in JSON; never raises.

    args_json is a JSON object of keyword arguments ("" or "null" for none). An unknown function,
    malformed JSON, unexpected or missing arguments and any ValueError the function raises come
    back as {"ok": false, "error": ...}.
    """
    if not isinstance(fn_name, str) or fn_name not in functions:
        return _error(f"unknown function {fn_name!r:.60}; known: {', '.join(functions)}")
    fn = functions[fn_name]
    try:
        args = json.loads(args_json) if args_json not in ("", None) else None
    except (TypeError, ValueError) as error:
        return _error(f"arguments are not valid JSON: {error}")
    args = {} if args is None else args
    if not isinstance(args, dict):
        return _error(f"arguments must be a JSON object of named arguments, got {type(args).__name__}")
    try:
        inspect.signature(fn).bind(**args)
    except TypeError as error:
        return _error(f"{fn_name}: {error}")
    try:
        result = fn(**args)
    except ValueError as error:  # includes ConfigError: the reader's input, explained
        return _error(str(error))
    except Exception as error:  # a bug; say so rather than leave the widget waiting
        return _error(f"internal error in {fn_name}: {type(error).__name__}: {error}")
    try:
        return json.dumps({"ok": True, "result": _plain(result)}, allow_nan=False)
    except ValueError as error:
        return _error(f"{fn_name} returned a value JSON cannot carry: {error}")
