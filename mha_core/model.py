"""A small attention-only transformer: its configuration, its weights, its forward and backward passes.

The model (no MLPs, no LayerNorm, no biases), x @ W convention, TransformerLens's names and weight layout:
    resid_pre_0 = W_E[tokens] + W_pos[:n]                  # [B, n, d_model]: the embeddings
    resid_post_l = resid_pre_l + attn_out_l                # attn_out_l: attention.py's causal layer, blocks.<l>.attn
    logits = resid_final @ W_U                             # [B, n, V]
    loss = mean over positions t < n - 1 of −log softmax(logits[t])[tokens[t + 1]]
Each layer's weights are held per head, as TransformerLens holds them: W_Q, W_K, W_V [h, d_model, d_k] and
W_O [h, d_k, d_model], so head i is W_Q[i], W_K[i], W_V[i], W_O[i] and knocking it out zeroes W_O[i]. A layer
runs every head at once: side by side (layer_matrices), its weights are attention.py's one big projection.
The backward pass is the chain rule run back through these lines, one gradient per line, each beside the formula
it differentiates. NumPy only (it runs in the browser under Pyodide). Every function keeps the weights' dtype:
float32 in, float32 out. The public functions check their arguments (@arguments); what they call trusts them.
Shapes: B batch, n seq, d_model, h n_heads, d_k d_head, V vocab.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .attention import attention_steps, matmul_2d, merge_heads, project, split_heads
from .fields import Array, ArraysByName, Fields, Instance, Labelled, ListOf, Number, Pair, Whole, arguments
from .rng import Random

MAX_STEP_FLOPS = 60_000_000  # about 10 times the default model's step: a browser must finish one in milliseconds
# The one configuration of the trained model, with TrainConfig's defaults below: each field's own range (how the
# fields fit together is TrainConfig's check), what the training widget offers (what trains in a browser in
# seconds to a minute), and its experiments, each a change to the default.
TRAIN_RANGES = {"vocab": (1, 64), "d_model": (1, 128), "n_layers": (1, 4), "n_heads": (1, 8), "d_head": (1, 64),
                "seq_len": (1, 64), "batch": (1, 64), "lr": (0.0, 10.0), "init_scale": (0.0, 10.0),
                "min_period": (2, 62), "max_period": (2, 62)}  # a block, then at least 2 tokens of its repeat
TRAIN_CHOICES = {"n_layers": (1, 2), "n_heads": (1, 2, 3, 4), "lr": (0.003, 0.01, 0.03, 0.1, 1.0)}
EXPERIMENTS = {"one-layer": {"n_layers": 1}, "fixed-block": {"min_period": 8, "max_period": 8},
               "diverge": {"lr": 1.0}}  # 1.0: the largest learning rate offered, which diverges
RECORDED_SEED = 0  # the run the site ships: TrainConfig's defaults trained from this seed
TRAIN_LABELS = {"n_layers": "The number of layers", "n_heads": "The number of heads per layer",
                "lr": "The learning rate", "min_period": "The shortest block length",
                "max_period": "The longest block length"}  # the training widget's controls, as a refusal names them
TRAIN_FIELDS = {name: (Number if isinstance(high, float) else Whole)(low, high)
                for name, (low, high) in TRAIN_RANGES.items()}  # each field's own range
TRAIN_CONFIG = Fields({name: Labelled(field, TRAIN_LABELS[name]) if name in TRAIN_LABELS else field
                       for name, field in TRAIN_FIELDS.items()})
MAX_TRAIN_LAYERS, MAX_TRAIN_HEADS = TRAIN_RANGES["n_layers"][1], TRAIN_RANGES["n_heads"][1]
SEED = Whole(0, 2**32 - 1)
ABLATE = ListOf(Pair(Whole(0, MAX_TRAIN_LAYERS - 1), Whole(0, MAX_TRAIN_HEADS - 1), ("layer", "head")),
                max_items=MAX_TRAIN_LAYERS * MAX_TRAIN_HEADS)


@dataclass(frozen=True)
class TrainConfig:
    """The model's sizes, the task's period range and the optimiser's learning rate.

    Checks each field's range (TRAIN_CONFIG), then the rules that tie them together: raises ValueError naming
    the numbers.
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
        for name, value in TRAIN_CONFIG.check("config", self.__dict__.copy()).items():
            object.__setattr__(self, name, value)
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
        per_layer = B * n * 4 * d * hd + B * 2 * n * n * hd  # projections, then scores and pattern @ v
        return 3 * (self.n_layers * per_layer + B * n * d * self.vocab)

    @property
    def param_shapes(self) -> dict[str, tuple[int, ...]]:
        """Every weight's shape, by TransformerLens's name, in a fixed order: the attention weights per head."""
        d, h, d_k = self.d_model, self.n_heads, self.d_head
        shapes = {"W_E": (self.vocab, d), "W_pos": (self.seq_len, d)}
        for layer in range(self.n_layers):
            shapes.update({f"blocks.{layer}.attn.W_Q": (h, d, d_k), f"blocks.{layer}.attn.W_K": (h, d, d_k),
                           f"blocks.{layer}.attn.W_V": (h, d, d_k), f"blocks.{layer}.attn.W_O": (h, d_k, d)})
        shapes["W_U"] = (d, self.vocab)
        return shapes


CONFIG, PARAMS, TOKENS = Instance(TrainConfig), ArraysByName(Array()), Array(ndim=(2,), kind="i")


def fits_model(args: dict) -> None:
    """params, tokens and ablate fit config: its weights' shapes, 2 to seq_len tokens from its vocabulary, its heads."""
    config = args["config"]
    shapes = {name: w.shape for name, w in args.get("params", {}).items()}
    if "params" in args and shapes != config.param_shapes:
        unknown = sorted(set(shapes) - set(config.param_shapes))
        if unknown:
            raise ValueError(f"params holds {unknown[0]!r}, not a weight of this model "
                             f"({', '.join(config.param_shapes)}).")
        wrong = next(n for n in config.param_shapes if shapes.get(n) != config.param_shapes[n])
        raise ValueError(f"params[{wrong!r}] must have shape {config.param_shapes[wrong]}, "
                         f"got {shapes.get(wrong, 'none')}.")
    tokens = args.get("tokens")
    if tokens is not None and not 2 <= tokens.shape[1] <= config.seq_len:
        raise ValueError(f"tokens must hold 2 to seq_len={config.seq_len} positions, got shape {tokens.shape}.")
    if tokens is not None and tokens.size and not 0 <= tokens.min() <= tokens.max() < config.vocab:
        raise ValueError(f"tokens must be ids from 0 to vocab - 1 = {config.vocab - 1}, got {tokens.min()} to "
                         f"{tokens.max()}.")
    for layer, head in args.get("ablate", ()):
        if layer >= config.n_layers or head >= config.n_heads:
            raise ValueError(f"ablate holds (layer, head) pairs with layer < {config.n_layers} and "
                             f"head < {config.n_heads}, got {(layer, head)}.")


@arguments(config=CONFIG, seed=SEED)
def init_params(config: TrainConfig, seed: int) -> dict[str, np.ndarray]:
    """float64 weights, each normal(0, init_scale / √fan_in): fan_in is the rows of the matrix x @ W multiplies
    by (d_model for W_Q, W_K, W_V, h·d_k for W_O), d_model for the embeddings.

    A layer's weights are drawn as the matrices x @ W multiplies by, all heads side by side, then split into heads
    (layer_heads): the numbers a seed draws do not depend on how the heads are held.
    """
    rng = Random([seed, 0])
    params = {}
    for name, shape in config.param_shapes.items():
        if name.endswith(("W_Q", "W_K", "W_V")):
            shape = (shape[1], shape[0] * shape[2])  # [h, d_model, d_k] drawn as [d_model, h·d_k]
        elif name.endswith("W_O"):
            shape = (shape[0] * shape[1], shape[2])  # [h, d_k, d_model] drawn as [h·d_k, d_model]
        fan_in = config.d_model if name in ("W_E", "W_pos") else shape[0]  # embeddings: unit-size vectors
        params[name] = rng.normal(0.0, config.init_scale / math.sqrt(fan_in), shape)
    for layer in range(config.n_layers):
        names = [f"blocks.{layer}.attn.{w}" for w in ("W_Q", "W_K", "W_V", "W_O")]
        heads = layer_heads(*(params[name] for name in names), config.n_heads)
        params.update((name, np.ascontiguousarray(W)) for name, W in zip(names, heads))
    return params


def unflatten(flat: np.ndarray, config: TrainConfig) -> dict[str, np.ndarray]:
    """Every weight as a view of flat [P], the weights concatenated in param_shapes' order."""
    offsets = np.cumsum([0] + [math.prod(shape) for shape in config.param_shapes.values()])
    return {name: flat[a:b].reshape(shape)
            for (name, shape), a, b in zip(config.param_shapes.items(), offsets, offsets[1:])}


def block_weights(params: dict, layer: int) -> tuple[np.ndarray, ...]:
    """(W_Q, W_K, W_V [h, d_model, d_k], W_O [h, d_k, d_model]) of one layer, per head."""
    return tuple(params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))


def layer_matrices(W_Q, W_K, W_V, W_O) -> tuple[np.ndarray, ...]:
    """A layer's per-head weights side by side, the matrices x @ W multiplies by (new arrays):
    W_Q, W_K, W_V [h, d_model, d_k] -> [d_model, h·d_k] (head i in columns i·d_k to (i + 1)·d_k − 1),
    W_O [h, d_k, d_model] -> [h·d_k, d_model] (head i in the same rows)."""
    d_model = W_Q.shape[1]
    side_by_side = [W.transpose(1, 0, 2).reshape(d_model, -1) for W in (W_Q, W_K, W_V)]  # [h, d, d_k] -> [d, h·d_k]
    return (*side_by_side, W_O.reshape(-1, d_model))  # [h, d_k, d_model] -> [h·d_k, d_model]


def layer_heads(W_Q, W_K, W_V, W_O, n_heads: int) -> tuple[np.ndarray, ...]:
    """layer_matrices' inverse: [d_model, h·d_k] -> [h, d_model, d_k] for W_Q, W_K, W_V, [h·d_k, d_model] ->
    [h, d_k, d_model] for W_O (views where NumPy can make them)."""
    d_model = W_Q.shape[0]
    per_head = [W.reshape(d_model, n_heads, -1).transpose(1, 0, 2) for W in (W_Q, W_K, W_V)]  # -> [h, d, d_k]
    return (*per_head, W_O.reshape(n_heads, -1, d_model))  # [h·d_k, d_model] -> [h, d_k, d_model]


# ---------------------------------------------------------------- forward

def without_heads(W_O: np.ndarray, heads) -> np.ndarray:
    """W_O [h, d_k, d_model] with each head in heads zeroed (a copy): head i writes z_i @ W_O[i], now nothing."""
    W_O = W_O.copy()
    W_O[list(heads)] = 0.0
    return W_O


@arguments(fits_model, params=PARAMS, tokens=TOKENS, config=CONFIG, ablate=ABLATE)
def run_with_cache(params: dict, tokens: np.ndarray, config: TrainConfig, ablate=()) -> tuple[np.ndarray, dict]:
    """(logits [B, n, V], cache): every activation by TransformerLens's hook name, the heads in ablate
    ((layer, head) pairs) writing nothing. tokens is [B, n] ints, 2 <= n <= seq_len.

    cache[f"blocks.{l}.hook_resid_pre"] [B, n, d_model]; cache[f"blocks.{l}.attn.hook_{q,k,v}"] [B, h, n, d_k]
    (heads before positions, as split_heads gives them); cache[f"blocks.{l}.attn.hook_pattern"] [B, h, n, n];
    cache[f"blocks.{l}.attn.hook_z"] [B, n, h, d_k] (TransformerLens's layout, the heads merged for W_O);
    cache["hook_resid_final"] [B, n, d_model].
    """
    n = tokens.shape[1]
    resid = params["W_E"][tokens] + params["W_pos"][:n]  # [B, n] -> [B, n, d_model]
    cache = {}
    for layer in range(config.n_layers):
        W_Q, W_K, W_V, W_O = block_weights(params, layer)
        dead = [head for l, head in ablate if l == layer]
        if dead:
            W_O = without_heads(W_O, dead)
        W_Q, W_K, W_V, W_O = layer_matrices(W_Q, W_K, W_V, W_O)  # every head at once: [d_model, h·d_k], ...
        steps = attention_steps(resid, W_Q, W_K, W_V, W_O, config.n_heads, None, None, True)
        cache[f"blocks.{layer}.hook_resid_pre"] = resid
        for name, step in (("q", "q_heads"), ("k", "k_heads"), ("v", "v_heads"), ("pattern", "weights")):
            cache[f"blocks.{layer}.attn.hook_{name}"] = steps[step]
        cache[f"blocks.{layer}.attn.hook_z"] = steps["merged"].reshape(*resid.shape[:2], config.n_heads, -1)  # a view
        resid = resid + steps["out"]  # [B, n, d_model]: resid_post = resid_pre + attn_out
    cache["hook_resid_final"] = resid
    return project(resid, params["W_U"]), cache  # [B, n, d_model] @ [d_model, V] -> [B, n, V]


@arguments(fits_model, params=PARAMS, tokens=TOKENS, config=CONFIG, ablate=ABLATE)
def forward(params: dict, tokens: np.ndarray, config: TrainConfig, ablate=()) -> tuple[np.ndarray, list[np.ndarray]]:
    """(logits [B, n, V], patterns): patterns[layer] is [B, h, n, n], each query's attention pattern.

    ablate is a list of (layer, head) whose output is zeroed (the head still attends).
    """
    logits, cache = run_with_cache.fn(params, tokens, config, ablate)
    return logits, [cache[f"blocks.{layer}.attn.hook_pattern"] for layer in range(config.n_layers)]


def next_token_losses(logits: np.ndarray, tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cross-entropy of each next-token prediction [B, n-1], the predicted probabilities [B, n-1, V])."""
    shifted = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)  # [B, n-1, V]: position t predicts t + 1
    probs = np.exp(shifted)
    total = probs.sum(axis=-1, keepdims=True)  # [B, n-1, 1]
    probs /= total
    target = tokens[:, 1:, None]  # [B, n-1, 1]
    return (np.log(total) - np.take_along_axis(shifted, target, axis=-1))[..., 0], probs  # −log probs[target]


# ---------------------------------------------------------------- backward

def weight_grad(x: np.ndarray, d_y: np.ndarray) -> np.ndarray:
    """dL/dW of y = x @ W, summed over batch and positions: xᵀ d_y, [B, n, i], [B, n, j] -> [i, j]."""
    return matmul_2d(x.reshape(-1, x.shape[-1]).T, d_y.reshape(-1, d_y.shape[-1]))  # [i, B·n] @ [B·n, j] -> [i, j]


def attention_backward(cache: dict, layer: int, d_out: np.ndarray, weights: tuple, n_heads: int):
    """(d_resid_pre [B, n, d_model], {"W_Q", "W_K", "W_V", "W_O": gradients, per head}) of one causal attention
    layer, from d_out [B, n, d_model], the gradient of its output attn_out; weights are layer_matrices'."""
    x = cache[f"blocks.{layer}.hook_resid_pre"]  # [B, n, d_model]
    q, k, v, pattern, z = (cache[f"blocks.{layer}.attn.hook_{name}"] for name in ("q", "k", "v", "pattern", "z"))
    W_Q, W_K, W_V, W_O = weights
    # attn_out = merge(z) @ W_O
    d_W_O = weight_grad(z.reshape(*z.shape[:2], -1), d_out)  # [B, n, h, d_k] -> [B, n, h·d_k]; -> [h·d_k, d_model]
    d_z = split_heads.fn(project(d_out, W_O.T), n_heads)  # [B, n, d_model] @ [d_model, h·d_k] -> [B, h, n, d_k]
    # z = pattern @ v
    d_pattern = d_z @ v.mT  # [B, h, n, d_k] @ [B, h, d_k, n] -> [B, h, n_q, n_k]
    d_v_heads = pattern.mT @ d_z  # [B, h, n_k, n_q] @ [B, h, n_q, d_k] -> [B, h, n_k, d_k]
    # pattern = softmax(scores): d_scores = pattern ⊙ (d_pattern − Σ_k pattern ⊙ d_pattern); masked keys get 0
    d_scores = pattern * (d_pattern - (pattern * d_pattern).sum(axis=-1, keepdims=True))  # [B, h, n_q, n_k]
    # scores = q kᵀ / √d_k
    d_scores /= math.sqrt(q.shape[-1])
    d_q_heads = d_scores @ k  # [B, h, n_q, n_k] @ [B, h, n_k, d_k] -> [B, h, n_q, d_k]
    d_k_heads = d_scores.mT @ q  # [B, h, n_k, n_q] @ [B, h, n_q, d_k] -> [B, h, n_k, d_k]
    # Q = x @ W_Q, K = x @ W_K, V = x @ W_V (all heads side by side), then split into heads
    d_Q, d_K, d_V = (merge_heads.fn(d) for d in (d_q_heads, d_k_heads, d_v_heads))  # [B, h, n, d_k] -> [B, n, h·d_k]
    side_by_side = (weight_grad(x, d_Q), weight_grad(x, d_K), weight_grad(x, d_V), d_W_O)  # every head at once
    grads = dict(zip(("W_Q", "W_K", "W_V", "W_O"), layer_heads(*side_by_side, n_heads)))  # -> [h, d_model, d_k], ...
    d_x = project(d_Q, W_Q.T) + project(d_K, W_K.T) + project(d_V, W_V.T)  # [B, n, h·d_k] @ [h·d_k, d_model]
    return d_x, grads


@arguments(fits_model, params=PARAMS, tokens=TOKENS, config=CONFIG)
def loss_and_grads(params: dict, tokens: np.ndarray, config: TrainConfig) -> tuple[float, dict[str, np.ndarray]]:
    """(mean next-token cross-entropy over every position but the last, its gradient for each weight)."""
    logits, cache = run_with_cache.fn(params, tokens, config)
    losses, probs = next_token_losses(logits, tokens)  # [B, n-1], [B, n-1, V]
    # loss = mean of −log softmax(logits)[target]: d_logits = (softmax − one_hot(target)) / count
    d_logits = np.zeros_like(logits)  # [B, n, V]; the last position predicts nothing
    d_logits[:, :-1] = probs - np.eye(config.vocab, dtype=probs.dtype)[tokens[:, 1:]]  # [B, n-1, V]
    d_logits /= losses.size
    # logits = resid_final @ W_U
    grads = {"W_U": weight_grad(cache["hook_resid_final"], d_logits)}  # [d_model, V]
    d_resid = project(d_logits, params["W_U"].T)  # [B, n, V] @ [V, d_model] -> [B, n, d_model]
    for layer in reversed(range(config.n_layers)):
        # resid_post = resid_pre + attn_out(resid_pre): the gradient reaches resid_pre both ways
        weights = layer_matrices(*block_weights(params, layer))
        d_x, layer_grads = attention_backward(cache, layer, d_resid, weights, config.n_heads)
        d_resid = d_resid + d_x
        grads.update({f"blocks.{layer}.attn.{name}": g for name, g in layer_grads.items()})
    # resid_pre_0 = W_E[tokens] + W_pos[:n]: each row of d_resid goes to its token's row and its position's row
    grads["W_E"] = np.zeros_like(params["W_E"])  # [V, d_model]
    np.add.at(grads["W_E"], tokens, d_resid)
    grads["W_pos"] = np.zeros_like(params["W_pos"])  # [seq_len, d_model]; positions ≥ n get no gradient
    grads["W_pos"][:tokens.shape[1]] = d_resid.sum(axis=0)  # [B, n, d_model] -> [n, d_model]
    return float(losses.mean()), {name: grads[name] for name in config.param_shapes}
