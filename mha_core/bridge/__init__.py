"""The one entry point the browser calls: call(fn_name, args_json) -> JSON string, and FUNCTIONS, every function it
may call with its arguments declared once (fields.py): names, types, limits, allowed values.

The worker passes the function's name and its arguments as data; nothing is evaluated. call checks the arguments
against the declaration, so the functions behind it take valid input as given. Answers are
{"ok": true, "result": ...} or {"ok": false, "error": "message"}, with arrays as nested lists.
To add a function: one line in FUNCTIONS, declare(fn, argument=field, ...) for each of its arguments.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass

import numpy as np

from ..config import LIMITS, check_config
from ..heads import HEAD_KINDS, MAX_TEXT_CHARS, head_patterns, head_weights
from ..memory import HEAD_CHOICES, MAX_TOKENS as MEMORY_TOKENS
from ..model import MAX_STEP_FLOPS, TRAIN_RANGES
from ..one_vs_many import MAX_WEIGHT
from ..presets import presets
from ..shapes import param_count
from ..views.memory import memory_view
from ..views.one_vs_many import one_vs_many_view
from ..views.shapes import shapes_view
from ..views.worked import worked_view
from ..worked import MAX_SEED, TOKENS, VOCAB
from .circuits import MAX_CHECKPOINTS, circuits_at, circuits_over_training
from .fields import Between, Choice, Fields, Flag, Invalid, ListOf, Maybe, Number, Pair, Text, TextOrTokens, Whole
from .training_views import training_advance, training_evaluate, training_start, training_stop


@dataclass(frozen=True)
class Declared:
    """A browser-callable function and the declaration of each of its arguments."""
    fn: object
    args: dict

    def checked(self, args: dict) -> dict:
        """args as the declarations read them; Invalid names the first that is not."""
        return {name: self.args[name].check(name, value) for name, value in args.items()}


def declare(fn, **args) -> Declared:
    return Declared(fn, args)


SIZES = {name: Whole(1, limit) for name, limit in LIMITS.items()}
LAYER = dict(d_model=SIZES["d_model"], n_heads=SIZES["n_heads"], n_kv_heads=Maybe(SIZES["n_kv_heads"]),
             d_head=Maybe(SIZES["d_head"]))
BIAS = Flag()
DTYPE_BYTES = Choice((1, 2, 4, 8), "int8, 16-bit, float32, float64")
TRAIN_CONFIG = Fields({  # each field's own range (model.TRAIN_RANGES); how they fit together is TrainConfig's check
    name: (Number if isinstance(high, float) else Whole)(low, high) for name, (low, high) in TRAIN_RANGES.items()})
MAX_TRAIN_LAYERS, MAX_TRAIN_HEADS = TRAIN_RANGES["n_layers"][1], TRAIN_RANGES["n_heads"][1]
SEED = Whole(0, 2**32 - 1)
HEAD_ABLATE = ListOf(Choice(tuple(kind for kind in HEAD_KINDS if kind != "averaged")), max_items=4)
TRAIN_ABLATE = ListOf(Pair(Whole(0, MAX_TRAIN_LAYERS - 1), Whole(0, MAX_TRAIN_HEADS - 1), ("layer", "head")),
                      max_items=MAX_TRAIN_LAYERS * MAX_TRAIN_HEADS)
RUN = Whole(1, 2**53)  # a run's id, as training_start gave it
MAX_BUDGET_MS = 1000
MAX_PARAMS_CHARS = 4 * MAX_STEP_FLOPS  # base64 of float16 weights: far more than any allowed model has

FUNCTIONS = {
    "check_config": declare(check_config, **LAYER),
    "shapes_view": declare(shapes_view, **LAYER, seq_len=SIZES["seq_len"], batch=SIZES["batch"], bias=BIAS,
                            dtype_bytes=DTYPE_BYTES, n_layers=SIZES["n_layers"]),
    "param_count": declare(param_count, **LAYER, bias=BIAS),
    "presets": declare(presets),
    "head_patterns": declare(head_patterns, text_or_tokens=TextOrTokens(MAX_TEXT_CHARS), ablate=HEAD_ABLATE),
    "head_weights": declare(head_weights, text_or_tokens=TextOrTokens(MAX_TEXT_CHARS), ablate=HEAD_ABLATE),
    "worked_view": declare(worked_view, seed=Whole(1, MAX_SEED + 1),
                              tokens=ListOf(Choice(VOCAB), len(TOKENS), length=len(TOKENS))),
    "memory_view": declare(memory_view, n_tokens=Whole(1, MEMORY_TOKENS),
                            n_heads=Choice(HEAD_CHOICES, "d_model = 8"), wrong=Flag()),
    "one_vs_many_view": declare(one_vs_many_view, subject=Between(0, MAX_WEIGHT), clause=Between(0, MAX_WEIGHT),
                           previous=Between(0, MAX_WEIGHT), wide=Flag()),
    "training_start": declare(training_start, config=TRAIN_CONFIG, seed=SEED),
    "training_advance": declare(training_advance, run=RUN, budget_ms=Number(0, MAX_BUDGET_MS)),
    "training_stop": declare(training_stop, run=RUN),
    "training_evaluate": declare(training_evaluate, config=TRAIN_CONFIG, seed=SEED, params=Text(MAX_PARAMS_CHARS),
                                 ablate=TRAIN_ABLATE, text=Maybe(Text(MAX_TEXT_CHARS))),
    "circuits_at": declare(circuits_at, config=TRAIN_CONFIG, params=Text(MAX_PARAMS_CHARS)),
    "circuits_over_training": declare(circuits_over_training, config=TRAIN_CONFIG, seed=SEED, steps=ListOf(
        Whole(0, 2**31), MAX_CHECKPOINTS), params=ListOf(Text(MAX_PARAMS_CHARS), MAX_CHECKPOINTS)),
}


def limits(fn_name: str) -> dict:
    """{argument: its limits as plain data} of a browser-callable function: what a widget's page carries."""
    return {name: field.limits() for name, field in FUNCTIONS[fn_name].args.items()}


def plain(value):
    """value with numpy arrays and scalars turned into lists and Python numbers, tuples into lists."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)):
        return value.tolist()
    return value


def error(message: str) -> str:
    return json.dumps({"ok": False, "error": message})


def call(fn_name: str, args_json: str, functions: dict = FUNCTIONS) -> str:
    """Run functions[fn_name] (the widgets' FUNCTIONS unless another table is given) with json.loads(args_json) as keyword arguments and answer in JSON; never raises.

    args_json is a JSON object of keyword arguments ("" or "null" for none). An unknown function,
    malformed JSON, unexpected, missing or invalid arguments and any ValueError the function raises
    come back as {"ok": false, "error": ...}.
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
        inspect.signature(declared.fn).bind(**args)
        args = declared.checked(args)
    except TypeError as problem:
        return error(f"{fn_name}: {problem}")
    except Invalid as problem:
        return error(str(problem))
    try:
        result = declared.fn(**args)
    except ValueError as problem:  # includes ConfigError: how the reader's numbers fit together, explained
        return error(str(problem))
    except Exception as problem:  # a bug; say so rather than leave the widget waiting
        return error(f"internal error in {fn_name}: {type(problem).__name__}: {problem}")
    try:
        return json.dumps({"ok": True, "result": plain(result)}, allow_nan=False)
    except ValueError as problem:
        return error(f"{fn_name} returned a value JSON cannot carry: {problem}")
