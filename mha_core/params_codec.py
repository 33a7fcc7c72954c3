"""A model's weights as text, the form they travel in between the build, the page and the exercises' Python:
base64 of float16 numbers, concatenated in TrainConfig.param_shapes' order (2 bytes each)."""
from __future__ import annotations

import base64
import math

import numpy as np

from .model import MAX_STEP_FLOPS, TrainConfig, unflatten

MAX_PARAMS_CHARS = 4 * MAX_STEP_FLOPS  # base64 of float16 weights: far more than any allowed model has


def encode_params(params: dict, config: TrainConfig) -> str:
    """The weights ({name: array of param_shapes[name]}) as base64 of float16 numbers, in param_shapes' order."""
    return base64.b64encode(b"".join(params[name].astype("<f2").tobytes() for name in config.param_shapes)).decode()


def decode_params(text: str, config: TrainConfig) -> dict[str, np.ndarray]:
    """encode_params' inverse (float64 arrays), or a ValueError if text does not fit config."""
    try:
        data = np.frombuffer(base64.b64decode(text, validate=True), dtype="<f2")
    except (TypeError, ValueError):
        raise ValueError("params must be base64 text (encode_params' form).") from None
    sizes = [math.prod(shape) for shape in config.param_shapes.values()]
    if data.size != sum(sizes):
        raise ValueError(f"params hold {data.size} numbers, but this config has {sum(sizes)} weights.")
    if not np.isfinite(data).all():
        raise ValueError("params contain NaN or infinite values.")
    return {name: p.astype(np.float64) for name, p in unflatten(data, config).items()}
