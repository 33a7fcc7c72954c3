"""What a circuits view reads: a checkpoint's circuits (mha_core.circuits), or a whole run's composition and loss,
from weights in encode_params' form, as plain numbers (no rounding, no words: views are made elsewhere).

Its functions circuits_at and circuits_over_training are the ones the browser calls (see bridge.FUNCTIONS).
"""

from __future__ import annotations

from mha_core import circuits
from mha_core.fields import Text, arguments
from mha_core.model import SEED, TRAIN_CONFIG, TrainConfig
from mha_core.params_codec import MAX_PARAMS_CHARS, decode_params
from ..views.circuits import MAX_CHECKPOINTS, PARAMS, STEPS  # noqa: F401 (MAX_CHECKPOINTS: read here by callers)
from ..views.training import display_tokens


@arguments(config=TRAIN_CONFIG, params=Text(MAX_PARAMS_CHARS))
def circuits_at(config: dict, params: str) -> dict:
    """One checkpoint's weights (encode_params' form) -> circuits.circuits' arrays ("full_ov", "copying",
    "positional_qk", "k_composition"), "k_baseline", and "position_losses" on "tokens", display_tokens' sequence."""
    config = TrainConfig(**config)
    return circuits.at_checkpoint(decode_params(params, config), config, display_tokens(config))


@arguments(config=TRAIN_CONFIG, seed=SEED, steps=STEPS, params=PARAMS)
def circuits_over_training(config: dict, seed: int, steps: list, params: list) -> dict:
    """A run's checkpoints (steps[i] and its weights params[i]) -> circuits.run_over_training's {"checkpoints",
    "k_baseline", "tokens"} on display_tokens' sequence."""
    config = TrainConfig(**config)
    return circuits.run_over_training(steps, [decode_params(p, config) for p in params], config,
                                      display_tokens(config), seed)
