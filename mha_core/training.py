"""A two-layer attention-only transformer, trained by plain NumPy on a task that needs induction heads.

The task: each sequence repeats a block of distinct random tokens, the block's length (its period)
drawn from min_period..max_period. The first occurrence of the block cannot be predicted; every later
token can, by an induction circuit (Olsson et al. 2022): a layer-0 previous-token head writes "the
token before me" into the residual stream, and a layer-1 induction head matches the current token
against it and copies what followed. The period varies, so position alone does not give the answer.

The model (no MLPs, no LayerNorm, no biases), x @ W convention:
    x = W_E[tokens] + W_pos                      # [B, n, d_model]
    x = x + multi_head_attention(x, causal)      # once per layer, weights blocks.<l>.attn.W_Q/W_K/W_V/W_O
    logits = x @ W_U                             # [B, n, vocab]
The attention layers run attention.py's multi-head attention; the backward pass is written by hand
here (NumPy only, so it runs in the browser under Pyodide). Adam updates the weights. Every function
keeps the weights' dtype: the widget's runs train in float32 (SCHEDULE_DTYPE), the checks in float64.
Shapes: B batch, n seq_len, d_model, h n_heads, d_k d_head, V vocab.
"""

from __future__ import annotations

import base64
import itertools
import math
import numbers
import time
from dataclasses import asdict, dataclass

import numpy as np

from .attention import _forward_steps, _matmul_2d, project, split_heads
from .config import whole_number
from .heads import tokenize
from .rng import Random

# Upper bounds for a training run: a browser must finish each step in milliseconds.
TRAIN_LIMITS = {"vocab": 64, "d_model": 128, "n_layers": 4, "n_heads": 8, "d_head": 64,
                "seq_len": 64, "batch": 64, "min_period": 64, "max_period": 64}
MAX_STEP_FLOPS = 60_000_000  # about 10 times the default model's step
MAX_LR = 10.0
DIVERGED = 10  # a training loss above 10 × log(vocab), ten times a uniform guess's, ends the run
DETECTORS = ("previous_token", "induction", "duplicate_token", "first_token")
ADAM = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}


class TrainingDiverged(ValueError):
    """The loss or the weights stopped being finite; the run keeps its last good state."""


@dataclass(frozen=True)
class TrainConfig:
    """The model's sizes, the task's period range and the optimiser's learning rate.

    Raises ValueError naming the field for anything out of range, including sizes whose step would
    take too long in a browser (more than MAX_STEP_FLOPS, see step_flops).
    """

    vocab: int = 32
    d_model: int = 32
    n_layers: int = 2
    n_heads: int = 2
    d_head: int = 16
    seq_len: int = 32
    batch: int = 16
    lr: float = 1e-2
    min_period: int = 5
    max_period: int = 16
    init_scale: float = 1.0  # weights start as normal(0, init_scale / √fan_in)

    def __post_init__(self):
        for name, limit in TRAIN_LIMITS.items():
            value, error = whole_number(name, getattr(self, name), limit)
            if error:
                raise ValueError(error)
            object.__setattr__(self, name, value)
        for name, top in (("lr", MAX_LR), ("init_scale", 10.0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not 0 < value <= top:
                raise ValueError(f"{name} must be a number above 0 and at most {top:g}, got {value!r:.40}.")
            object.__setattr__(self, name, float(value))
        if self.min_period < 2:
            raise ValueError(f"min_period must be at least 2, got {self.min_period}.")
        if self.max_period < self.min_period:
            raise ValueError(f"max_period={self.max_period} is below min_period={self.min_period}.")
        if self.max_period > self.vocab:
            raise ValueError(f"max_period={self.max_period} exceeds vocab={self.vocab}: a block holds distinct tokens.")
        if self.seq_len < self.max_period + 2:
            raise ValueError(f"seq_len={self.seq_len} must be at least max_period + 2 = {self.max_period + 2}, "
                             "so that every sequence repeats part of its block.")
        if self.step_flops > MAX_STEP_FLOPS:
            raise ValueError(f"this model needs about {self.step_flops / 1e6:.0f} million operations per step, "
                             f"more than the {MAX_STEP_FLOPS // 1_000_000} million a browser can do in time: "
                             "make it smaller (batch, seq_len, d_model, n_heads or n_layers).")

    @property
    def step_flops(self) -> int:
        """Multiply-adds of one forward pass, ×3 for forward and backward (a common estimate)."""
        B, n, d, hd = self.batch, self.seq_len, self.d_model, self.n_heads * self.d_head
        per_layer = B * n * 4 * d * hd + B * 2 * n * n * hd  # projections, then scores and weights @ v
        return 3 * (self.n_layers * per_layer + B * n * d * self.vocab)

    @property
    def param_shapes(self) -> dict[str, tuple[int, int]]:
        """Every weight's shape, by TransformerLens-style name, in a fixed order."""
        d, hd = self.d_model, self.n_heads * self.d_head
        shapes = {"W_E": (self.vocab, d), "W_pos": (self.seq_len, d)}
        for layer in range(self.n_layers):
            shapes.update({f"blocks.{layer}.attn.W_Q": (d, hd), f"blocks.{layer}.attn.W_K": (d, hd),
                           f"blocks.{layer}.attn.W_V": (d, hd), f"blocks.{layer}.attn.W_O": (hd, d)})
        shapes["W_U"] = (d, self.vocab)
        return shapes


def as_config(config) -> TrainConfig:
    """A TrainConfig from itself, a dict of fields (the bridge's form) or None (the defaults)."""
    if isinstance(config, TrainConfig):
        return config
    if config is None:
        return TrainConfig()
    if not isinstance(config, dict):
        raise ValueError(f"config must be an object of TrainConfig fields, got {type(config).__name__}.")
    unknown = sorted(set(config) - set(TrainConfig.__dataclass_fields__))
    if unknown:
        known = ", ".join(TrainConfig.__dataclass_fields__)
        raise ValueError(f"unknown config field {unknown[0]!r:.40}; known: {known}.")
    return TrainConfig(**config)


def _seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**32:
        raise ValueError(f"seed must be a whole number from 0 to {2**32 - 1}, got {seed!r:.40}.")
    return int(seed)


# ---------------------------------------------------------------- the task and the weights

def sample_batch(config: TrainConfig, rng: Random) -> np.ndarray:
    """[batch, seq_len] int tokens: each row a block of distinct random tokens, repeated to fill it."""
    periods = rng.integers(config.min_period, config.max_period + 1, size=config.batch)  # [B]
    blocks = rng.permuted(np.tile(np.arange(config.vocab), (config.batch, 1)), axis=1)  # [B, V]: distinct
    positions = np.arange(config.seq_len) % periods[:, None]  # [B, n]: t mod period
    return np.take_along_axis(blocks, positions, axis=1)  # [B, n]


def eval_batch(config: TrainConfig, seed: int) -> np.ndarray:
    """[batch, seq_len] tokens a run with this seed is measured on (never trained on)."""
    return sample_batch(config, Random([_seed(seed), 2]))


def init_params(config: TrainConfig, seed: int) -> dict[str, np.ndarray]:
    """float64 weights, each normal(0, init_scale / √fan_in): fan_in is W's rows in x @ W, d_model for embeddings."""
    rng = Random([_seed(seed), 0])
    fan_in = {name: config.d_model if name in ("W_E", "W_pos") else shape[0]  # embeddings: unit-size vectors
              for name, shape in config.param_shapes.items()}
    return {name: rng.normal(0.0, config.init_scale / math.sqrt(fan_in[name]), shape)
            for name, shape in config.param_shapes.items()}


def _layer(params: dict, layer: int) -> tuple[np.ndarray, ...]:
    return tuple(params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))


# ---------------------------------------------------------------- forward and backward

def _forward(params: dict, tokens: np.ndarray, config: TrainConfig, ablate=()) -> tuple[np.ndarray, list[dict]]:
    """(logits [B, n, V], each layer's intermediate arrays), the heads in ablate zeroed."""
    n = tokens.shape[1]
    x = params["W_E"][tokens] + params["W_pos"][:n]  # [B, n] -> [B, n, d_model]
    layers = []
    for layer in range(config.n_layers):
        W_Q, W_K, W_V, W_O = _layer(params, layer)
        dead = [head for l, head in ablate if l == layer]
        if dead:  # a head's output is z_head @ W_O[its rows]: zero those rows
            W_O = W_O.copy()
            for head in dead:
                W_O[head * config.d_head:(head + 1) * config.d_head] = 0.0
        steps = _forward_steps(x, W_Q, W_K, W_V, W_O, config.n_heads, None, None, True)
        layers.append(steps)
        x = x + steps["out"]  # [B, n, d_model]: the residual stream adds the layer's output
    return project(x, params["W_U"]), layers + [{"x": x}]  # [B, n, d_model] @ [d_model, V] -> [B, n, V]


def _check_tokens(tokens, config: TrainConfig) -> np.ndarray:
    tokens = np.asarray(tokens)
    if tokens.ndim == 1:
        tokens = tokens[None]
    if tokens.ndim != 2 or tokens.dtype.kind not in "iu" or not 2 <= tokens.shape[1] <= config.seq_len:
        raise ValueError(f"tokens must be whole numbers of shape [batch, n] with 2 <= n <= seq_len={config.seq_len}, "
                         f"got dtype {tokens.dtype} and shape {tokens.shape}.")
    if tokens.size and (tokens.min() < 0 or tokens.max() >= config.vocab):
        raise ValueError(f"tokens must lie in 0..{config.vocab - 1} (vocab={config.vocab}).")
    return tokens


def _check_ablate(ablate, config: TrainConfig) -> list[tuple[int, int]]:
    pairs = []
    for pair in ablate or ():
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in pair)
                or not (0 <= pair[0] < config.n_layers and 0 <= pair[1] < config.n_heads)):
            raise ValueError(f"ablate holds [layer, head] pairs with layer < {config.n_layers} and "
                             f"head < {config.n_heads}, got {pair!r:.40}.")
        pairs.append((int(pair[0]), int(pair[1])))
    return pairs


def forward(params: dict, tokens, config: TrainConfig, ablate=()) -> tuple[np.ndarray, list[np.ndarray]]:
    """(logits [B, n, V], patterns): patterns[layer] is [B, h, n, n], each query's attention weights.

    ablate is a list of (layer, head) whose output is zeroed (the head still attends).
    """
    config = as_config(config)
    logits, layers = _forward(params, _check_tokens(tokens, config), config, _check_ablate(ablate, config))
    return logits, [steps["weights"] for steps in layers[:-1]]


def _token_losses(logits: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cross-entropy of each next-token prediction [B, n-1], probabilities [B, n-1, V])."""
    shifted = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)  # [B, n-1, V]
    probs = np.exp(shifted)
    total = probs.sum(axis=-1, keepdims=True)  # [B, n-1, 1]
    probs /= total
    target = tokens[:, 1:, None]  # [B, n-1, 1]: position t predicts token t + 1
    return (np.log(total) - np.take_along_axis(shifted, target, axis=-1))[..., 0], probs  # -log(probs[target])


def _outer_sum(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Σ over batch and positions of a[b, t]ᵀ b[b, t]: [B, n, i], [B, n, j] -> [i, j] (a weight's gradient)."""
    return _matmul_2d(a.reshape(-1, a.shape[-1]).T, b.reshape(-1, b.shape[-1]))  # [i, B·n] @ [B·n, j] -> [i, j]


def _sum_by_token(tokens: np.ndarray, g: np.ndarray, vocab: int) -> np.ndarray:
    """g's rows summed by token: [B, n], [B, n, k] -> [vocab, k]."""
    k = g.shape[-1]
    cells = (tokens.reshape(-1, 1) * k + np.arange(k)).reshape(-1).astype(np.intp)  # [B·n·k]: (token, column)
    return np.bincount(cells, weights=g.reshape(-1), minlength=vocab * k).reshape(vocab, k).astype(g.dtype)


CAUSAL_BLOCKS = 4  # the backward's attention products go block row by block row (see _triangular_matmul)


def _row_blocks(n: int) -> list[tuple[int, int]]:
    """[start, end) of CAUSAL_BLOCKS nearly equal ranges covering 0..n."""
    edges = [n * i // CAUSAL_BLOCKS for i in range(CAUSAL_BLOCKS + 1)]
    return [(s, e) for s, e in zip(edges, edges[1:]) if e > s]


def _triangular_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray, upper: bool = False) -> np.ndarray:
    """out = a @ b for a [..., n, n] that is zero above its diagonal (below it if upper), b [..., n, k].

    Block row s:e of a lower-triangular a has nothing past column e, of an upper one nothing before
    column s: skipping those blocks saves a third of the multiply-adds with 4 blocks.
    """
    for s, e in _row_blocks(a.shape[-1]):
        cols = slice(s, None) if upper else slice(0, e)
        np.matmul(a[..., s:e, cols], b[..., cols, :], out=out[..., s:e, :])
    return out


def _lower_part(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b where it is on or below the diagonal: [..., n, k] @ [..., k, n] -> [..., n, n].

    Block rows s:e are computed up to column e; the blocks right of that stay zero.
    """
    out = np.zeros((*a.shape[:-1], b.shape[-1]), a.dtype)
    for s, e in _row_blocks(a.shape[-2]):
        np.matmul(a[..., s:e, :], b[..., :, :e], out=out[..., s:e, :e])
    return out


def _attention_backward(steps: dict, d_out: np.ndarray, W_O: np.ndarray, n_heads: int):
    """(d_qkv [B, n, 3·h·d_k], d_W_O) of one causal attention layer from d_out [B, n, d_model].

    d_qkv is the gradient of the fused projection qkv = x @ W_QKV; the caller turns it into W_QKV's
    gradient and x's. The weights are zero above the diagonal (causal), so the products skip those blocks.
    """
    weights = steps["weights"]  # [B, h, n, n]
    q, k, v = steps["q_heads"], steps["k_heads"], steps["v_heads"]  # [B, h, n, d_k] each
    d_W_O = _outer_sum(steps["merged"], d_out)  # [h·d_k, d_model]
    d_z = split_heads(project(d_out, W_O.T), n_heads)  # [B, n, d_model] @ [d_model, h·d_k] -> [B, h, n, d_k]: merge's inverse
    d_qkv = np.empty((*d_out.shape[:-1], 3 * W_O.shape[0]), d_out.dtype)  # [B, n, 3·h·d_k]: d_q | d_k | d_v, as qkv
    d_q, d_k, d_v = (split_heads(d_qkv[..., i * W_O.shape[0]:(i + 1) * W_O.shape[0]], n_heads)
                     for i in range(3))  # [B, h, n, d_k] views
    d_weights = _lower_part(d_z, np.swapaxes(v, -1, -2))  # [B, h, n, d_k] @ [B, h, d_k, n] -> [B, h, n_q, n_k]
    _triangular_matmul(np.swapaxes(weights, -1, -2), d_z, d_v, upper=True)  # [B, h, n_k, n_q] @ [B, h, n_q, d_k]
    # softmax: d_scores = w ⊙ (d_w - Σ_k w d_w); masked keys have w = 0, so they get no gradient
    d_scores = weights * (d_weights - (d_weights * weights).sum(axis=-1, keepdims=True))  # [B, h, n, n]
    d_scores *= 1 / math.sqrt(q.shape[-1])  # scores = q kᵀ / √d_k
    _triangular_matmul(d_scores, k, d_q)  # [B, h, n_q, n_k] @ [B, h, n_k, d_k] -> [B, h, n_q, d_k]
    _triangular_matmul(np.swapaxes(d_scores, -1, -2), q, d_k, upper=True)  # [B, h, n_k, n_q] @ [B, h, n_q, d_k]
    return d_qkv, d_W_O


def _embedding_backward(params: dict, tokens: np.ndarray, d_x: np.ndarray, d_qkv: np.ndarray, W_QKV: np.ndarray):
    """(d_W_E, d_W_pos, layer 0's d_W_QKV) from d_x [B, n, d_model], the residual stream's gradient at the
    embedding x = W_E[tokens] + W_pos, and d_qkv [B, n, 3·h·d_k], that of layer 0's qkv = x @ W_QKV.

    x's rows are sums of rows of two small tables, so sums by token (S_E, [V, ·]) and by position
    (S_pos, [n, ·]) replace the products over all B·n rows: xᵀ d_qkv = W_Eᵀ S_E + W_posᵀ S_pos, and
    the gradient d_qkv @ W_QKVᵀ sends back to x reaches W_E as S_E @ W_QKVᵀ and W_pos as S_pos @ W_QKVᵀ.
    """
    n, d = tokens.shape[1], d_x.shape[-1]
    both = np.concatenate((d_x, d_qkv), axis=-1)  # [B, n, d_model + 3·h·d_k]
    sums = {"W_E": _sum_by_token(tokens, both, len(params["W_E"])), "W_pos": both.sum(axis=0)}  # [V, ·], [n, ·]
    d_W_QKV = sum(_matmul_2d(params[name][:len(s)].T, s[:, d:]) for name, s in sums.items())  # [d_model, 3·h·d_k]
    d_E, d_pos = (s[:, :d] + _matmul_2d(s[:, d:], W_QKV.T) for s in sums.values())  # [V, d_model], [n, d_model]
    return d_E, np.pad(d_pos, ((0, len(params["W_pos"]) - n), (0, 0))), d_W_QKV  # positions ≥ n: no gradient


def loss_and_grads(params: dict, tokens, config: TrainConfig) -> tuple[float, dict[str, np.ndarray]]:
    """(mean next-token cross-entropy over every position but the last, its gradient for each weight)."""
    config = as_config(config)
    tokens = _check_tokens(tokens, config)
    logits, layers = _forward(params, tokens, config)
    losses, probs = _token_losses(logits, tokens)  # [B, n-1], [B, n-1, V]
    d_logits = np.zeros_like(logits)  # [B, n, V]; the last position predicts nothing
    d_logits[:, :-1] = probs
    np.put_along_axis(d_logits[:, :-1], tokens[:, 1:, None], np.take_along_axis(probs, tokens[:, 1:, None], -1) - 1, -1)
    d_logits /= losses.size  # d(mean)/d(logits) = (softmax - one-hot) / count
    grads = {"W_U": _outer_sum(layers[-1]["x"], d_logits)}  # [d_model, V]
    d_x = project(d_logits, params["W_U"].T)  # [B, n, V] @ [V, d_model] -> [B, n, d_model]
    for layer in reversed(range(config.n_layers)):
        W_Q, W_K, W_V, W_O = _layer(params, layer)
        W_QKV = np.concatenate((W_Q, W_K, W_V), axis=1)  # [d_model, 3·h·d_k]
        d_qkv, grads[f"blocks.{layer}.attn.W_O"] = _attention_backward(layers[layer], d_x, W_O, config.n_heads)
        if layer:
            d_W_QKV = _outer_sum(layers[layer]["x"], d_qkv)  # [d_model, 3·h·d_k]
            d_x = d_x + project(d_qkv, W_QKV.T)  # the residual stream: x reaches the output directly and through the layer
        else:
            grads["W_E"], grads["W_pos"], d_W_QKV = _embedding_backward(params, tokens, d_x, d_qkv, W_QKV)
        for i, w in enumerate(("W_Q", "W_K", "W_V")):  # [d_model, 3·h·d_k] -> 3 × [d_model, h·d_k]
            grads[f"blocks.{layer}.attn.{w}"] = d_W_QKV[:, i * W_O.shape[0]:(i + 1) * W_O.shape[0]]
    return float(losses.mean()), {name: grads[name] for name in config.param_shapes}


# ---------------------------------------------------------------- evaluation

def _seen_before(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(same [B, n_q, n_k]: key j < query i holds the query's token, seen [B, n]: the token occurred earlier)."""
    n = tokens.shape[1]
    same = (tokens[:, :, None] == tokens[:, None, :]) & np.tri(n, n, -1, dtype=bool)  # [B, n, n]
    return same, same.any(axis=-1)


def ideal_patterns(tokens: np.ndarray) -> dict[str, np.ndarray]:
    """[B, n_q, n_k] bool per detector: the keys an ideal head of that kind attends to.

    previous_token: key i - 1; duplicate_token: earlier keys holding the query's token; induction:
    the keys right after those (j + 1 for each earlier j with the query's token); first_token: key 0.
    """
    B, n = tokens.shape
    same, _ = _seen_before(tokens)
    induction = np.zeros_like(same)
    induction[:, :, 1:] = same[:, :, :-1]  # key j + 1 followed an earlier occurrence j of the query's token
    first = np.zeros_like(same)
    first[:, :, 0] = True
    previous = np.broadcast_to(np.tri(n, n, -1, dtype=bool) & ~np.tri(n, n, -2, dtype=bool), (B, n, n))
    return {"previous_token": previous, "induction": induction, "duplicate_token": same, "first_token": first}


def detector_scores(patterns: list[np.ndarray], tokens: np.ndarray) -> dict[str, list[list[float]]]:
    """scores[kind][layer][head]: TransformerLens's head-detector measure ("mul").

    The share of attention a head puts on the keys the ideal pattern marks (ideal_patterns), summed
    and divided by the attention of the queries that count. TransformerLens counts every query; here
    only the queries whose ideal row marks at least one key count (the first token has no previous
    token, a token seen for the first time has no duplicate), so a perfect head scores 1.
    """
    scores = {}
    for kind, ideal in ideal_patterns(tokens).items():
        rows = ideal.any(axis=-1)  # [B, n]: queries that count
        count = max(int(rows.sum()), 1)
        scores[kind] = [((pattern * ideal[:, None]).sum(axis=(0, 2, 3)) / count).tolist()  # [B, h, n, n] -> [h]
                        for pattern in patterns]
    return scores


def evaluate(params: dict, tokens, config: TrainConfig, ablate=()) -> dict:
    """{"loss", "loss_first", "loss_repeat", "scores"} on tokens, the heads in ablate zeroed.

    loss_repeat averages the predictions made at positions whose token occurred earlier in its
    sequence (an induction head can copy the answer); loss_first averages the others (the block's
    first occurrence, which nothing can predict); scores as detector_scores.
    """
    config = as_config(config)
    tokens = _check_tokens(tokens, config)
    logits, patterns = forward(params, tokens, config, ablate)
    losses, _ = _token_losses(logits, tokens)  # [B, n-1]
    repeat = _seen_before(tokens)[1][:, :-1]  # [B, n-1]

    def mean(mask):
        return float(losses[mask].mean()) if mask.any() else float("nan")

    return {"loss": float(losses.mean()), "loss_first": mean(~repeat), "loss_repeat": mean(repeat),
            "scores": detector_scores(patterns, tokens)}


# ---------------------------------------------------------------- training

class Trainer:
    """A training run that advances in slices: trainer.run(n) takes n more Adam steps.

    Every log_every steps (and at step 0) history gets {"step", "loss", "loss_first", "loss_repeat",
    "scores"}, measured by evaluate on a fixed evaluation batch; every checkpoint_every steps a copy of
    the weights goes into checkpoints ({"step", "params"}). The same config and seed give the same
    run, bit for bit, on one machine. A training loss that is not finite or above DIVERGED × log(vocab),
    or weights that stop being finite, raise TrainingDiverged and leave the run at its last finite state.
    dtype is the weights' and every computation's floating type: float64 (exact, for the gradient
    checks) or float32 (the widget's runs, SCHEDULE_DTYPE: faster in the browser's NumPy).
    """

    def __init__(self, config=None, seed: int = 0, log_every: int = 10, checkpoint_every: int = 0,
                 dtype=np.float64):
        self.config = as_config(config)
        self.seed = _seed(seed)
        self.log_every, error = whole_number("log_every", log_every, 10_000)
        if error:
            raise ValueError(error)
        every = checkpoint_every
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 0:
            raise ValueError(f"checkpoint_every must be a whole number, 0 for none, got {checkpoint_every!r:.40}.")
        self.checkpoint_every = int(checkpoint_every)
        if np.dtype(dtype) not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {dtype!r:.40}.")
        weights = init_params(self.config, self.seed).values()  # float64, then rounded to dtype
        self.flat = np.concatenate([p.reshape(-1) for p in weights]).astype(dtype)  # [P]
        self.params = unflatten(self.flat, self.config)  # views of flat
        self.moments = (np.zeros_like(self.flat), np.zeros_like(self.flat))  # Adam's m and v, [P] each
        self.batches = Random([self.seed, 1])
        self.eval_tokens = eval_batch(self.config, self.seed)
        self.step, self.history, self.checkpoints = 0, [], []
        self._record()

    def _record(self) -> None:
        if self.step % self.log_every == 0:
            self.history.append({"step": self.step, **evaluate(self.params, self.eval_tokens, self.config)})
        if self.checkpoint_every and self.step % self.checkpoint_every == 0:
            self.checkpoints.append({"step": self.step, "params": {k: v.copy() for k, v in self.params.items()}})

    def _adam_step(self, grads: dict) -> tuple[np.ndarray, tuple]:
        """(weights [P], moments) after one Adam step, new arrays: the run's own stay as they were.

        All weights are one flat array, so each of Adam's operations is one NumPy call.
        """
        t, b1, b2 = self.step + 1, ADAM["beta1"], ADAM["beta2"]
        g = np.concatenate([grads[name].reshape(-1) for name in self.config.param_shapes])  # [P]
        m, v = self.moments
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        step = self.config.lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + ADAM["eps"])
        return self.flat - step, (m, v)

    def _check_loss(self, loss: float) -> None:
        """Raise TrainingDiverged if loss is not finite or above DIVERGED × a uniform guess's loss."""
        uniform = math.log(self.config.vocab)
        if not loss <= DIVERGED * uniform:  # NaN fails this test too
            reached = f"reached {loss:.3g}" if math.isfinite(loss) else "stopped being a finite number"
            raise TrainingDiverged(f"training diverged at step {self.step}: the loss {reached} (a uniform guess "
                                   f"scores {uniform:.2f}); try a smaller learning rate than lr={self.config.lr:g}.")

    def run(self, n_steps: int, budget_s: float | None = None) -> int:
        """Take up to n_steps steps (fewer if budget_s seconds have passed); return how many were taken."""
        n_steps, error = whole_number("n_steps", n_steps, 100_000)
        if error:
            raise ValueError(error)
        start = time.perf_counter()
        for taken in range(n_steps):
            if budget_s is not None and taken and time.perf_counter() - start >= budget_s:
                return taken
            tokens = sample_batch(self.config, self.batches)
            loss, grads = loss_and_grads(self.params, tokens, self.config)
            self._check_loss(loss)
            flat, moments = self._adam_step(grads)
            if not np.isfinite(flat).all():
                self._check_loss(math.nan)
            self.flat, self.params, self.moments = flat, unflatten(flat, self.config), moments
            self.step += 1
            self._record()
        return n_steps


def train(config=None, steps: int = 600, seed: int = 0, log_every: int = 10, checkpoint_every: int = 0) -> dict:
    """{"params", "history", "checkpoints"} after steps Adam steps from init_params(config, seed)."""
    trainer = Trainer(config, seed, log_every, checkpoint_every)
    trainer.run(steps)
    return {"params": trainer.params, "history": trainer.history, "checkpoints": trainer.checkpoints}


# ---------------------------------------------------------------- compact weights

def encode_params(params: dict, config: TrainConfig) -> str:
    """The weights as base64 of float16 numbers, concatenated in param_shapes' order (2 bytes each)."""
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


def unflatten(flat: np.ndarray, config: TrainConfig) -> dict[str, np.ndarray]:
    """Every weight as a view of flat [P], the weights concatenated in param_shapes' order."""
    offsets = np.cumsum([0] + [math.prod(shape) for shape in config.param_shapes.values()])
    return {name: flat[a:b].reshape(shape) for (name, shape), a, b in zip(config.param_shapes.items(), offsets, offsets[1:])}


def config_dict(config: TrainConfig) -> dict:
    """The config as plain JSON-ready fields."""
    return asdict(config)


# ---------------------------------------------------------------- what the widget shows, built and live

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # token t is shown as SYMBOLS[t]
SCHEDULE = {"steps": 600, "log_every": 10, "checkpoint_every": 30}  # a run as the widget shows it
SCHEDULE_DTYPE = np.float32  # the widget's runs, built and live, train in float32
ROLE_MIN = 0.4  # a head is named after its best detector score when that score reaches this
MAX_BUDGET_MS = 1000
_RUNS: dict[int, Trainer] = {}  # the browser's run in progress, by id (one at a time)
_RUN_IDS = itertools.count(1)


def display_tokens(config: TrainConfig) -> list[int]:
    """The test sequence the patterns are shown on: a block of distinct tokens, period halfway between
    min_period and max_period, repeated to fill seq_len."""
    period = (config.min_period + config.max_period) // 2
    block = Random(2024).permutation(config.vocab)[:period]  # [period]
    return block[np.arange(config.seq_len) % period].tolist()  # [n]


def head_roles(scores: dict) -> list[list[str | None]]:
    """roles[layer][head]: the detector kind with the head's highest score if it is ≥ ROLE_MIN, else None."""
    n_layers, n_heads = len(scores[DETECTORS[0]]), len(scores[DETECTORS[0]][0])
    roles = []
    for layer in range(n_layers):
        best = [max(DETECTORS, key=lambda kind: scores[kind][layer][head]) for head in range(n_heads)]
        roles.append([kind if scores[kind][layer][head] >= ROLE_MIN else None for head, kind in enumerate(best)])
    return roles


def _rounded(entry: dict) -> dict:
    """A history entry with losses to 4 decimals and scores to 3, the precision the widget shows."""
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in entry.items() if k != "scores"}
    out["scores"] = {kind: [[round(s, 3) for s in layer] for layer in value] for kind, value in entry["scores"].items()}
    return out


def _encode_patterns(patterns: list[np.ndarray]) -> str:
    """[L] × [1, h, n, n] weights as base64 of little-endian uint16 (weight × 65535, rounded), layer by layer."""
    stacked = np.stack([p[0] for p in patterns])  # [L, h, n, n]
    return base64.b64encode(np.rint(stacked * 65535).astype("<u2").tobytes()).decode()


def checkpoint_view(params: dict, config: TrainConfig, step: int, scores: dict) -> dict:
    """One checkpoint for the widget: patterns on display_tokens, the heads' roles and the weights."""
    _, patterns = forward(params, display_tokens(config), config)
    return {"step": step, "patterns": _encode_patterns(patterns), "roles": head_roles(scores),
            "params": encode_params(params, config)}


def run_view(trainer: Trainer) -> dict:
    """The run so far as the widget reads it (history rounded, checkpoints as checkpoint_view)."""
    scores = {h["step"]: h["scores"] for h in trainer.history}
    config = trainer.config
    return {"config": asdict(config), "seed": trainer.seed, **SCHEDULE, "step": trainer.step,
            "tokens": display_tokens(config), "symbols": SYMBOLS[:config.vocab],
            "history": [_rounded(h) for h in trainer.history],
            "checkpoints": [checkpoint_view(c["params"], config, c["step"], scores[c["step"]])
                            for c in trainer.checkpoints]}


def _schedule_trainer(config, seed) -> Trainer:
    return Trainer(config, seed, SCHEDULE["log_every"], SCHEDULE["checkpoint_every"], SCHEDULE_DTYPE)


def recorded_run(config=None, seed: int = 0) -> dict:
    """A whole run of SCHEDULE["steps"] steps in SCHEDULE_DTYPE, as run_view gives it (what the page ships)."""
    trainer = _schedule_trainer(config, seed)
    trainer.run(SCHEDULE["steps"])
    return run_view(trainer)


def _run(run) -> Trainer:
    if run not in _RUNS or isinstance(run, bool):
        raise ValueError("this training run is over (stopped, replaced by a newer one, or never started).")
    return _RUNS[run]


def training_start(config=None, seed: int = 0) -> dict:
    """Start a run in this Python (ending any other): {"run": its id, ...run_view at step 0}."""
    trainer = _schedule_trainer(config, seed)
    _RUNS.clear()
    run = next(_RUN_IDS)
    _RUNS[run] = trainer
    return {"run": run, **run_view(trainer)}


def training_advance(run: int, budget_ms: float = 80) -> dict:
    """Train run for about budget_ms (at least one step, never past SCHEDULE["steps"]).

    Returns {"step", "done", "history": the new entries, "checkpoints": the new ones}. A diverged run
    is ended and its message raised (TrainingDiverged, a ValueError).
    """
    trainer = _run(run)
    if isinstance(budget_ms, bool) or not isinstance(budget_ms, numbers.Real) or not 0 < budget_ms <= MAX_BUDGET_MS:
        raise ValueError(f"budget_ms must be a number above 0 and at most {MAX_BUDGET_MS}, got {budget_ms!r:.40}.")
    logged, saved = len(trainer.history), len(trainer.checkpoints)
    left = SCHEDULE["steps"] - trainer.step
    try:
        if left:
            trainer.run(left, budget_s=budget_ms / 1000)
    except TrainingDiverged:
        _RUNS.pop(run, None)
        raise
    scores = {h["step"]: h["scores"] for h in trainer.history}
    done = trainer.step >= SCHEDULE["steps"]
    if done:
        _RUNS.pop(run, None)
    return {"step": trainer.step, "done": done, "history": [_rounded(h) for h in trainer.history[logged:]],
            "checkpoints": [checkpoint_view(c["params"], trainer.config, c["step"], scores[c["step"]])
                            for c in trainer.checkpoints[saved:]]}


def training_stop(run: int) -> dict:
    """End run; {"stopped": False} if it had already ended."""
    return {"stopped": _RUNS.pop(run, None) is not None}


def text_tokens(text: str, config: TrainConfig) -> tuple[list[int], list[str]]:
    """(token ids, the words) of a reader's text: words and punctuation marks (heads.tokenize), ids given in
    order of first appearance (case-insensitive), so repeats stay repeats; at most seq_len of them."""
    words = tokenize(text)[:config.seq_len]
    ids: dict[str, int] = {}
    for word in words:
        ids.setdefault(word.lower(), len(ids))
    if len(ids) > config.vocab:
        raise ValueError(f"the text has {len(ids)} different words in its first {len(words)}; "
                         f"the model knows {config.vocab} tokens.")
    if len(words) < 2:
        raise ValueError("the text needs at least 2 words or punctuation marks.")
    return [ids[word.lower()] for word in words], words


def training_evaluate(config, seed: int, params: str, ablate=(), text: str | None = None) -> dict:
    """A checkpoint's weights (params, encode_params' form) with and without the heads in ablate zeroed.

    Returns {"intact": evaluate(...), "ablated": evaluate(..., ablate)} on the evaluation batch of the
    run with this seed, and "patterns" (ablated, encoded as in checkpoint_view) with their "labels" on
    display_tokens, or on the reader's text (text_tokens) when text is given.
    """
    config = as_config(config)
    weights = decode_params(params, config)
    tokens = eval_batch(config, seed)
    ablate = _check_ablate(ablate, config)
    if text is None:
        shown = display_tokens(config)
        labels = [SYMBOLS[t] for t in shown]
    else:
        shown, labels = text_tokens(text, config)
    _, patterns = forward(weights, shown, config, ablate)
    return {"intact": _rounded(evaluate(weights, tokens, config)),
            "ablated": _rounded(evaluate(weights, tokens, config, ablate)),
            "patterns": _encode_patterns(patterns), "labels": labels}
