"""mha_core: multi-head attention in pure NumPy, the numbers behind every widget of the explainer.

Runs unchanged in CPython 3.11+ and in Pyodide (numpy 2.0.2): numpy and the standard library only.
"""

from .attention import merge_heads, multi_head_attention, scaled_dot_product_attention, softmax, split_heads
from .config import LIMITS, AttentionConfig, ConfigError, check_config
from .heads import HEAD_INFO, HEAD_KINDS, MAX_TOKENS, head_patterns, head_weights, tokenize
from .presets import PRESETS, Preset, presets
from .memory import memory_steps
from .shapes import param_count, shape_report
from .worked import worked_example
from .training import TrainConfig, Trainer, TrainingDiverged, evaluate, forward, init_params, loss_and_grads, sample_batch, train

__version__ = "0.1.0"

__all__ = [
    "LIMITS", "AttentionConfig", "ConfigError", "check_config",
    "PRESETS", "Preset", "presets", "param_count", "shape_report",
    "softmax", "split_heads", "merge_heads", "scaled_dot_product_attention", "multi_head_attention",
    "HEAD_INFO", "HEAD_KINDS", "MAX_TOKENS", "tokenize", "head_patterns", "head_weights",
    "memory_steps", "worked_example",
    "TrainConfig", "Trainer", "TrainingDiverged", "sample_batch", "init_params", "forward", "loss_and_grads",
    "evaluate", "train",
]
