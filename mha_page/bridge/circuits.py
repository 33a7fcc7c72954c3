"""What a circuits view reads: a checkpoint's circuits (mha_core.circuits), or a whole run's composition and loss,
from weights in encode_params' form, as plain numbers (no rounding, no words: views are made elsewhere).

Its functions circuits_at and circuits_over_training are the ones the browser calls (see bridge.FUNCTIONS).
"""

from __future__ import annotations

import functools

import numpy as np

from mha_core import circuits
from mha_core.fields import Text, arguments
from mha_core.model import SEED, TRAIN_CONFIG, TrainConfig
from mha_core.training import eval_batch
from ..views.circuits import MAX_CHECKPOINTS, PARAMS, STEPS  # noqa: F401 (MAX_CHECKPOINTS: read here by callers)
from mha_core.params_codec import MAX_PARAMS_CHARS, decode_params
from ..views.training import display_tokens


@functools.lru_cache(maxsize=8)  # the same for every checkpoint of a run: one run's views ask for it once
def k_baseline(config: TrainConfig) -> dict:
    """{"mean", "std"} of the K-composition score of random heads of config's shapes (seeded, so always the same)."""
    scores = circuits.random_k_composition(config)
    return {"mean": float(scores.mean()), "std": float(scores.std())}


@arguments(config=TRAIN_CONFIG, params=Text(MAX_PARAMS_CHARS))
def circuits_at(config: dict, params: str) -> dict:
    """One checkpoint's weights (encode_params' form) -> circuits.circuits' arrays ("full_ov", "copying",
    "positional_qk", "k_composition"), "k_baseline", and "position_losses" on "tokens", display_tokens' sequence."""
    config = TrainConfig(**config)
    weights = decode_params(params, config)
    tokens = display_tokens(config)
    return {**circuits.circuits(weights, config), "k_baseline": k_baseline(config), "tokens": tokens,
            "position_losses": circuits.position_losses(weights, tokens, config)}


@arguments(config=TRAIN_CONFIG, seed=SEED, steps=STEPS, params=PARAMS)
def circuits_over_training(config: dict, seed: int, steps: list, params: list) -> dict:
    """A run's checkpoints (steps[i] and its weights params[i]) -> {"checkpoints": circuits.over_training's entries,
    losses on the evaluation batch of the run with this seed, position losses on "tokens"; "k_baseline"}."""
    if len(steps) != len(params):
        raise ValueError(f"steps and params must be as long as each other (one step per checkpoint), "
                         f"got {len(steps)} and {len(params)}.")
    if steps != sorted(set(steps)):
        raise ValueError(f"steps must increase, got {steps[:8]}.")
    config = TrainConfig(**config)
    checkpoints = [{"step": step, "params": decode_params(p, config)} for step, p in zip(steps, params)]
    tokens = display_tokens(config)
    return {"checkpoints": circuits.over_training(checkpoints, config, tokens, eval_batch(config, seed)),
            "k_baseline": k_baseline(config), "tokens": tokens}
