"""The one entry point the browser calls: call(fn_name, args_json) -> JSON string, and FUNCTIONS, every function it
may call, each with the declaration of its arguments it carries (mha_core.fields): names, types, limits, allowed values.

The worker passes the function's name and its arguments as data; nothing is evaluated. call checks the arguments
against the declaration, then runs the function itself (declared.fn), which takes them as given: the same
declaration checks a Python user's call. Answers are {"ok": true, "result": ...} or {"ok": false, "error":
"message"}, with arrays as nested lists, and a refusal worded for the page's reader (worded). To add a function:
declare its arguments where it is defined (@arguments(name=field, ...)) and add it to FUNCTIONS.
"""

from __future__ import annotations

import json
import re

import numpy as np

from mha_core.config import check_config
from mha_core.fields import Declared, Invalid
from mha_core.presets import presets
from mha_core.shapes import param_count
from ..views.heads import heads_view, heads_weights_view
from ..views.memory import memory_view
from ..views.one_vs_many import one_vs_many_view
from ..views.runtime import ready_message
from ..views.shapes import shapes_view
from ..views.tiling import tiling_view
from ..views.circuits import circuits_run_view
from ..views.training import training_evaluate
from ..views.training_runs import training_advance, training_start, training_stop
from ..views.worked import worked_view
from .circuits import circuits_at, circuits_over_training
from .real_model import (real_model_advance, real_model_head_set, real_model_knockout_advance,
                         real_model_knockout_start, real_model_lens, real_model_pattern, real_model_position,
                         real_model_pruning_advance, real_model_pruning_start, real_model_start)


def declare(fn, **args) -> Declared:
    """fn with a declaration of its arguments, for a function that does not carry one itself."""
    return Declared(fn, args)


FUNCTIONS = {fn.__name__: fn for fn in (
    check_config, shapes_view, param_count, presets, heads_view, heads_weights_view, worked_view, memory_view,
    one_vs_many_view, training_start, training_advance, training_stop, training_evaluate, circuits_at,
    circuits_over_training, circuits_run_view, real_model_start, real_model_advance, real_model_pattern,
    real_model_position, real_model_lens, real_model_knockout_start, real_model_knockout_advance, real_model_head_set,
    real_model_pruning_start, real_model_pruning_advance, tiling_view, ready_message)}


def limits(fn_name: str) -> dict:
    """{argument: its limits as plain data} of a browser-callable function: what a widget's page carries."""
    return {name: field.limits() for name, field in FUNCTIONS[fn_name].args.items()}


def array_as_list(value):
    """json.dumps' default for what it cannot write itself: a numpy array or scalar as plain numbers. (json writes
    the rest, tuples as lists, at C speed: a view of thousands of cells is no walk in Python.)"""
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON")


def error(message: str, refused: bool = False) -> str:
    """A call not answered: refused (the arguments, as the reader gave them, cannot be computed: asking again
    cannot help) or failed (a call the page should not have made, or a bug)."""
    return json.dumps({"ok": False, "error": message, "refused": refused})


def worded(problem: ValueError, declared: Declared | None = None) -> str:
    """A refusal as the page's reader reads it, a sentence: the control's words where a Labelled field refused
    (fields.Invalid.said), and a capital to start prose ("this run is over" -> "This run is over"). A message that
    starts with a name (d_model, lr=1, tokens[1], or a word that names an argument of the function declared or
    a field of one: "steps must increase") keeps its spelling."""
    if isinstance(problem, Invalid):
        return problem.said or str(problem)
    message = str(problem)
    first = re.match(r"([a-z]+) ", message)
    if not first or declared is not None and first[1] in argument_names(declared):
        return message
    return message[0].upper() + message[1:]


def argument_names(declared: Declared) -> set:
    """The names of declared's arguments and of the fields of those that are objects (a config's lr)."""
    return set(declared.args).union(*(getattr(field, "fields", ()) for field in declared.args.values()))


def call(fn_name: str, args_json: str, functions: dict = FUNCTIONS) -> str:
    """Run functions[fn_name] (the widgets' FUNCTIONS unless another table is given) with json.loads(args_json) as keyword arguments and answer in JSON; never raises.

    args_json is a JSON object of keyword arguments ("" or "null" for none). An unknown function,
    malformed JSON, unexpected, missing or invalid arguments and any ValueError the function raises
    come back as {"ok": false, "error": ..., "refused": ...}: refused for invalid arguments and ValueErrors.
    """
    if not isinstance(fn_name, str) or fn_name not in functions:
        return error(f"unknown function {fn_name!r:.60}; known: {', '.join(functions)}")
    declared = functions[fn_name]
    try:
        args = json.loads(args_json) if args_json not in ("", None) else None
    except (TypeError, ValueError) as problem:
        return error(f"arguments are not valid JSON: {problem}")
    args = {} if args is None else args
    if not isinstance(args, dict):
        return error(f"arguments must be a JSON object of named arguments, got {type(args).__name__}")
    try:
        declared.signature.bind(**args)
        args = declared.checked(args)
    except TypeError as problem:
        return error(f"{fn_name}: {problem}")
    except ValueError as problem:  # Invalid, or arguments that do not fit together
        return error(worded(problem, declared), refused=True)
    try:
        result = declared.fn(**args)
    except ValueError as problem:  # includes ConfigError: how the reader's numbers fit together, explained
        return error(worded(problem, declared), refused=True)
    except Exception as problem:  # a bug; say so rather than leave the widget waiting
        return error(f"internal error in {fn_name}: {type(problem).__name__}: {problem}")
    try:
        return json.dumps({"ok": True, "result": result}, allow_nan=False, default=array_as_list)
    except (TypeError, ValueError) as problem:
        return error(f"{fn_name} returned a value JSON cannot carry: {problem}")
