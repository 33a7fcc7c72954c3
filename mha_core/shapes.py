"""Shape, parameter and cost arithmetic of one attention layer, O(1) in the sizes.

Nothing here allocates a tensor of the configured size: every count is an exact Python int, so
d_model=12288, h=96, n=131072, B=512 answers in microseconds.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .attention import attention_steps
from .config import BIAS, LAYER, SIZES, AttentionConfig, configure
from .fields import Choice, arguments
from .rng import Random

TENSOR_NAMES = ("x", "q", "k", "v", "q_heads", "k_heads", "v_heads", "scores", "weights", "z", "merged", "out")

# name -> (the tensor it is computed from, how)
STEPS = {
    "x": (None, "the input: one d_model-wide vector per token"),
    "q": ("x", "x @ W_Q (+ b_Q), one projection for all heads at once"),
    "k": ("x", "x @ W_K (+ b_K)"),
    "v": ("x", "x @ W_V (+ b_V)"),
    "q_heads": ("q", "split_heads(q): reshape, then transpose"),
    "k_heads": ("k", "split_heads(k): reshape, then transpose"),
    "v_heads": ("v", "split_heads(v): reshape, then transpose"),
    "scores": ("q_heads", "q_heads @ k_headsᵀ / √d_k, every query against every key"),
    "weights": ("scores", "softmax of each row of scores"),
    "z": ("weights", "weights @ v_heads: each head's output"),
    "merged": ("z", "merge_heads(z): transpose, then reshape"),
    "out": ("merged", "merged @ W_O (+ b_O): mixes the heads"),
}


DTYPE_BYTES = Choice((1, 2, 4, 8), "int8, 16-bit, float32, float64")


@arguments(**LAYER, bias=BIAS)
# --8<-- [start:param_count]
def param_count(d_model, n_heads, n_kv_heads=None, d_head=None, bias=True) -> int:
    """Learned numbers in one attention layer, as an exact int (raises ConfigError if the sizes do not fit).

    Counting policy: the four projections and, when bias is True, their biases; nothing else
    (no layer norm, no embeddings). With d_q = h·d_k and d_kv = h_kv·d_k:

        W_Q: d_model·d_q   W_K: d_model·d_kv   W_V: d_model·d_kv   W_O: d_q·d_model
        b_Q: d_q           b_K: d_kv           b_V: d_kv           b_O: d_model

    Plain multi-head attention (h_kv = h, d_q = d_model) gives 4·d_model² + 4·d_model;
    grouped-query and multi-query attention shrink W_K, W_V, b_K and b_V.
    """
    return AttentionConfig(d_model, n_heads, n_kv_heads, d_head, bias).param_count
# --8<-- [end:param_count]


def _symbols(cfg: AttentionConfig) -> dict[str, str]:
    """Symbolic shapes: d_model where h·d_k equals it, h_kv where keys have fewer heads."""
    q_width = "d_model" if cfg.d_q == cfg.d_model else "h·d_k"
    kv_heads = "h" if cfg.n_kv_heads == cfg.n_heads else "h_kv"
    kv_width = q_width if kv_heads == "h" else "h_kv·d_k"
    return {
        "x": "B×n×d_model", "q": f"B×n×{q_width}", "k": f"B×n×{kv_width}", "v": f"B×n×{kv_width}",
        "q_heads": "B×h×n×d_k", "k_heads": f"B×{kv_heads}×n×d_k", "v_heads": f"B×{kv_heads}×n×d_k",
        "scores": "B×h×n×n", "weights": "B×h×n×n", "z": "B×h×n×d_k",
        "merged": f"B×n×{q_width}", "out": "B×n×d_model",
        "W_Q": f"d_model×{q_width}", "W_K": f"d_model×{kv_width}", "W_V": f"d_model×{kv_width}",
        "W_O": f"{q_width}×d_model", "b_Q": q_width, "b_K": kv_width, "b_V": kv_width, "b_O": "d_model",
    }


def _shapes(cfg: AttentionConfig, B: int, n: int) -> dict[str, tuple[int, ...]]:
    h, h_kv, d_k = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    return {
        "x": (B, n, cfg.d_model), "q": (B, n, cfg.d_q), "k": (B, n, cfg.d_kv), "v": (B, n, cfg.d_kv),
        "q_heads": (B, h, n, d_k), "k_heads": (B, h_kv, n, d_k), "v_heads": (B, h_kv, n, d_k),
        "scores": (B, h, n, n), "weights": (B, h, n, n), "z": (B, h, n, d_k),
        "merged": (B, n, cfg.d_q), "out": (B, n, cfg.d_model),
    }


@functools.lru_cache(maxsize=64)
def _views(B: int, n: int, h_kv: int, group: int, d_k: int) -> dict[str, bool]:
    """Which steps share memory with the tensor they come from, asked of numpy itself.

    Runs the real forward pass on a tiny input of the same rank; each size is capped at 2 (4 query
    heads for grouped-query attention), which keeps every size-1 axis that decides view or copy.
    """
    h, d_model = h_kv * group, 3
    rng = Random(0)
    x = rng.standard_normal((B, n, d_model))
    W_Q, W_K, W_V = (rng.standard_normal((d_model, width)) for width in (h * d_k, h_kv * d_k, h_kv * d_k))
    steps = attention_steps(x, W_Q, W_K, W_V, rng.standard_normal((h * d_k, d_model)), h, None, None, False)
    return {name: source is not None and bool(np.shares_memory(steps[name], steps[source]))
            for name, (source, _) in STEPS.items()}


def _tensors(cfg: AttentionConfig, B: int, n: int, dtype_bytes: int) -> list[dict]:
    shapes, symbols = _shapes(cfg, B, n), _symbols(cfg)
    views = _views(min(B, 2), min(n, 2), min(cfg.n_kv_heads, 2), min(cfg.group_size, 2), min(cfg.d_head, 2))
    tensors = []
    for name in TENSOR_NAMES:
        source, op = STEPS[name]
        numel = math.prod(shapes[name])
        tensors.append({
            "name": name, "symbol": symbols[name], "shape": list(shapes[name]),
            "numel": numel, "bytes": numel * dtype_bytes,
            "view": views[name], "source": source, "op": op,
        })
    return tensors


def _flops(cfg: AttentionConfig, B: int, n: int) -> dict[str, int]:
    tokens, h, d_k = B * n, cfg.n_heads, cfg.d_head
    return {
        "projections": 2 * tokens * cfg.d_model * (cfg.d_q + 2 * cfg.d_kv),
        "scores": 2 * B * h * n * n * d_k,
        "weighted_sum": 2 * B * h * n * n * d_k,
        "output": 2 * tokens * cfg.d_q * cfg.d_model,
    }


@arguments(**LAYER, seq_len=SIZES["seq_len"], batch=SIZES["batch"], bias=BIAS, dtype_bytes=DTYPE_BYTES,
           n_layers=SIZES["n_layers"])
def shape_report(d_model, n_heads, seq_len, batch, n_kv_heads=None, d_head=None, bias=True, dtype_bytes=4,
                 n_layers=1) -> dict:
    """Every tensor shape, the parameter count, KV-cache size and FLOPs of one attention layer.

    Sizes that do not fit together (check_config) give check.ok = False, tensors [] and None elsewhere.
    Plain JSON types only. Keys:
      ok, check ({ok, message, suggestions}, see check_config), config (the resolved sizes),
      tensors: one dict per step in pipeline order (TENSOR_NAMES), each {name, symbol, shape, numel,
        bytes, view, source, op}; view is True when numpy's np.shares_memory says the step
        shares the buffer of its source (asked of the real forward pass on a tiny input);
      weights: one dict per learned array {name, symbol, shape, numel, bytes};
      params: {W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O, total} (biases 0 when bias is False);
      kv_cache_bytes: keys and values of this layer for B sequences of n tokens,
        2·B·n·h_kv·d_k·dtype_bytes; kv_cache_model_bytes: the same for all n_layers layers;
      flops and flops_by_step: one forward pass, counting a multiply-add as 2 FLOPs,
        2·B·n·d_model·(d_q + 2·d_kv)   projections
        + 2·B·h·n²·d_k                 scores
        + 2·B·h·n²·d_k                 weighted sum (weights @ v)
        + 2·B·n·d_q·d_model            output projection
        (softmax, scaling, masking and bias additions are O(B·h·n²) and O(B·n·d) and not counted).
    What the shapes widget shows of it, as text: mha_page.views.shapes.
    """
    cfg, check = configure(d_model, n_heads, n_kv_heads, d_head, bias)
    report = {"ok": check["ok"], "check": check, "config": None, "tensors": [], "weights": [], "params": None,
              "kv_cache_bytes": None, "kv_cache_model_bytes": None, "flops": None, "flops_by_step": None}
    if not check["ok"]:
        return report
    n, B, n_layers, dtype_bytes = int(seq_len), int(batch), int(n_layers), int(dtype_bytes)
    flops, symbols = _flops(cfg, B, n), _symbols(cfg)
    weights = [{"name": name, "symbol": symbols[name], "shape": list(shape), "numel": math.prod(shape),
                "bytes": math.prod(shape) * dtype_bytes} for name, shape in cfg.weight_shapes.items()]
    params = {name: 0 for name in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O")}
    params.update({w["name"]: w["numel"] for w in weights}, total=cfg.param_count)
    report.update(
        config={"d_model": cfg.d_model, "n_heads": cfg.n_heads, "n_kv_heads": cfg.n_kv_heads, "d_head": cfg.d_head,
                "group_size": cfg.group_size, "seq_len": n, "batch": B, "bias": cfg.bias, "dtype_bytes": dtype_bytes,
                "n_layers": n_layers},
        tensors=_tensors(cfg, B, n, dtype_bytes),
        weights=weights,
        params=params,
        kv_cache_bytes=2 * B * n * cfg.d_kv * dtype_bytes,
        kv_cache_model_bytes=n_layers * 2 * B * n * cfg.d_kv * dtype_bytes,
        flops=sum(flops.values()),
        flops_by_step=flops,
    )
    return report
