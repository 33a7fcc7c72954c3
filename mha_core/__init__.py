"""mha_core: multi-head attention in pure NumPy, the numbers behind every widget of the explainer.

Runs unchanged in CPython 3.11+ and in Pyodide (numpy 2.0.2): numpy and the standard library only.

    config, shapes, presets            one attention layer's sizes, what they cost, published models
    attention                          the layer itself: softmax, split and merge, multi-head attention
    flash                              the same attention tile by tile (FlashAttention's online softmax), and its counts
    heads, tokens                      constructed heads on a sentence, and the tokenizer
    memory, worked                     the split and merge in memory; the first page's worked example
    model, detectors, training         a two-layer attention-only transformer, its heads' scores, its training
    rng                                seeded random numbers without numpy.random
    fields                             the declaration of every public function's arguments, checked on each call
    params_codec                       a model's weights as text, the form they travel in
    llama/                             a real model (SmolLM2-135M) from its GGUF file: its block, tokenizer, heads' scores

Numbers only: the page's views and bridge, worded for its reader, are mha_page's (which imports this package).

Each public function refuses nonsense with a ValueError naming the argument (its declaration, @arguments); the
kernel underneath trusts its input.
"""

from .attention import merge_heads, multi_head_attention, scaled_dot_product_attention, softmax, split_heads
from .flash import flash_attention, flash_counts, online_softmax_update
from .config import LIMITS, AttentionConfig, ConfigError, check_config
from .heads import HEAD_LAYER, HEAD_KINDS, MAX_TOKENS, head_patterns, head_weights, tokenize
from .presets import PRESETS, Preset, presets
from .memory import memory_steps
from .shapes import param_count, shape_report
from .worked import worked_example
from .model import TrainConfig, forward, init_params, loss_and_grads, run_with_cache
from .detectors import detector_scores, evaluate
from .training import Trainer, TrainingDiverged, sample_batch, train

__version__ = "0.1.0"

__all__ = [
    "LIMITS", "AttentionConfig", "ConfigError", "check_config",
    "PRESETS", "Preset", "presets", "param_count", "shape_report",
    "softmax", "split_heads", "merge_heads", "scaled_dot_product_attention", "multi_head_attention",
    "flash_attention", "flash_counts", "online_softmax_update",
    "HEAD_LAYER", "HEAD_KINDS", "MAX_TOKENS", "tokenize", "head_patterns", "head_weights",
    "memory_steps", "worked_example",
    "TrainConfig", "init_params", "forward", "run_with_cache", "loss_and_grads", "detector_scores", "evaluate",
    "Trainer", "TrainingDiverged", "sample_batch", "train",
]
