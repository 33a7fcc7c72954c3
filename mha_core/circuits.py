"""The trained model's circuits, read from its weights alone (Elhage et al. 2021, "A Mathematical Framework for
Transformer Circuits"; TransformerLens's names and definitions), and its loss at each position of one sequence.

x @ W convention: a row vector goes left to right through each product. For head h of a layer:
    W_OV^h = W_V^h W_O^h               [d_model, d_model]  what the head writes, given the vector it attends to
    W_QK^h = W_Q^h W_K^hᵀ              [d_model, d_model]  score = x_query W_QK^h x_keyᵀ (before the 1/√d_k)
    full OV circuit W_E W_OV^h W_U      [V, V]  row: the token attended to; column: the logit it raises
    positional QK circuit W_pos W_QK^h W_posᵀ  [n, n]  row: the query's position; column: the key's position
    K-composition of head a (earlier layer) into head b: ‖W_OV^a W_QK^bᵀ‖_F / (‖W_OV^a‖_F ‖W_QK^bᵀ‖_F), in [0, 1]:
        how much of what a writes is what b's keys read (TransformerLens's all_composition_scores("K")).
    direct logit attribution at position p: resid_final[p] = W_E[t_p] + W_pos[p] + Σ_heads z_h[p] W_O^h (no MLP,
        no norm), and the unembedding is linear, so a logit is the direct path plus one term per head, exactly.
The matrices here are d_model or vocab wide (32 by default), so every product is formed in full: no factored
forms, no SVD (Pyodide's NumPy ships without LAPACK). Shapes: L n_layers, h n_heads, d_k d_head, V vocab,
n positions.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from .detectors import evaluate
from .model import TrainConfig, block_weights, forward, next_token_losses, run_with_cache
from .rng import Random
from .training import eval_batch

BASELINE_SAMPLES = 200  # random pairs of heads the K-composition baseline averages over


def check_params(params: dict, config: TrainConfig) -> None:
    """A ValueError naming the first weight missing from params or not of config's shape."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of weights by name, got {type(params).__name__}.")
    for name, shape in config.param_shapes.items():
        if name not in params:
            raise ValueError(f"params has no {name!r}; this config has {', '.join(config.param_shapes)}.")
        if np.shape(params[name]) != shape:
            raise ValueError(f"params[{name!r}] has shape {np.shape(params[name])}, this config's is {shape}.")


def check_layer(params: dict, config: TrainConfig, layer) -> None:
    """check_params, then a ValueError if layer is not one of config's layers."""
    check_params(params, config)
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral) or not 0 <= layer < config.n_layers:
        raise ValueError(f"layer must be a whole number from 0 to {config.n_layers - 1}, got {layer!r:.40}.")


def check_tokens(name: str, tokens, config: TrainConfig, ndim: int) -> np.ndarray:
    """tokens as an int array of ndim axes, its last 2 to seq_len long, each a token of config's vocabulary,
    or a ValueError naming it."""
    tokens = np.asarray(tokens)
    if (tokens.ndim != ndim or tokens.dtype.kind not in "iu" or not 2 <= tokens.shape[-1] <= config.seq_len
            or tokens.size == 0 or tokens.min() < 0 or tokens.max() >= config.vocab):
        raise ValueError(f"{name} must be {'sequences' if ndim > 1 else 'a sequence'} of 2 to {config.seq_len} "
                         f"whole numbers from 0 to {config.vocab - 1} ({ndim} axes), got {tokens.tolist()!r:.60}.")
    return tokens


# ---------------------------------------------------------------- one head's circuits

def ov_circuits(params: dict, config: TrainConfig, layer: int) -> np.ndarray:
    """W_OV = W_V W_O of every head of layer: [h, d_model, d_k] @ [h, d_k, d_model] -> [h, d_model, d_model]."""
    check_layer(params, config, layer)
    _, _, W_V, W_O = block_weights(params, layer)
    return W_V @ W_O


def qk_circuits(params: dict, config: TrainConfig, layer: int) -> np.ndarray:
    """W_QK = W_Q W_Kᵀ of every head of layer: [h, d_model, d_k] @ [h, d_k, d_model] -> [h, d_model, d_model]."""
    check_layer(params, config, layer)
    W_Q, W_K, _, _ = block_weights(params, layer)
    return W_Q @ W_K.mT


def full_ov_circuits(params: dict, config: TrainConfig, layer: int) -> np.ndarray:
    """W_E W_OV W_U of every head of layer, [h, V, V]: entry [t, u] is how much attending to token t raises the
    logit of token u (through that head alone, as if it attended to t's embedding)."""
    return params["W_E"] @ ov_circuits(params, config, layer) @ params["W_U"]  # [V, d] @ [h, d, d] @ [d, V]


def copying_scores(full_ov: np.ndarray) -> np.ndarray:
    """[..., V, V] full OV circuits -> [...]: the fraction of tokens whose row has its largest entry on the diagonal.

    Rows, because a row is one token attended to and its entries the logits that token raises: the head copies
    token t when attending to t raises t's own logit most. (ARENA's convention; a column would ask which
    attended token raises one logit most, another question.)
    """
    full_ov = np.asarray(full_ov)
    if full_ov.ndim < 2 or full_ov.shape[-1] != full_ov.shape[-2] or full_ov.shape[-1] == 0:
        raise ValueError(f"full_ov must be [..., V, V] with V ≥ 1, got shape {full_ov.shape}.")
    on_diagonal = full_ov.argmax(axis=-1) == np.arange(full_ov.shape[-1])  # [..., V]
    return on_diagonal.mean(axis=-1)


def positional_qk_circuits(params: dict, config: TrainConfig, layer: int) -> np.ndarray:
    """W_pos W_QK W_posᵀ of every head of layer, [h, n, n] (n = seq_len): entry [i, j] is the score query position
    i gives key position j from the positions alone. Only j ≤ i is ever used (causal attention); a previous-token
    head shows a stripe on the sub-diagonal j = i − 1."""
    W_pos = params["W_pos"]  # [n, d_model]
    return W_pos @ qk_circuits(params, config, layer) @ W_pos.T  # [n, d] @ [h, d, d] @ [d, n] -> [h, n, n]


# ---------------------------------------------------------------- composition

def frobenius(M: np.ndarray) -> np.ndarray:
    """[..., a, b] -> [...]: the Frobenius norm of each matrix, √(Σ entries²)."""
    return np.sqrt((M * M).sum(axis=(-2, -1)))


def composition_scores(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """‖left right‖_F / (‖left‖_F ‖right‖_F) for [..., a, d] and [..., d, b] matrices (leading axes broadcast)."""
    return frobenius(left @ right) / (frobenius(left) * frobenius(right))


def k_composition(params: dict, config: TrainConfig) -> np.ndarray:
    """[L, h, L, h]: entry [l, a, m, b] is the K-composition score of head a of layer l into head b of layer m,
    ‖W_OV^a W_QK^bᵀ‖_F / (‖W_OV^a‖_F ‖W_QK^bᵀ‖_F), and 0 unless l < m (a head reads only earlier layers' output)."""
    L = config.n_layers
    OV = np.stack([ov_circuits(params, config, layer) for layer in range(L)])  # [L, h, d, d]
    QK_T = np.stack([qk_circuits(params, config, layer).mT for layer in range(L)])  # [L, h, d, d]: W_K W_Qᵀ
    scores = composition_scores(OV[:, :, None, None], QK_T[None, None])  # [L, h, 1, 1, d, d] @ [1, 1, L, h, d, d]
    earlier = np.arange(L)[:, None, None, None] < np.arange(L)[None, None, :, None]  # [L, 1, L, 1]
    return np.where(earlier, scores, 0.0)  # [L, h, L, h]


def random_k_composition(config: TrainConfig, samples: int = BASELINE_SAMPLES, seed: int = 0) -> np.ndarray:
    """[samples]: the K-composition score of random heads, W_V, W_O, W_Q, W_K of config's shapes with independent
    normal entries (seeded): what a score is worth by chance. (The score does not depend on the weights' scale.)"""
    if isinstance(samples, bool) or not isinstance(samples, numbers.Integral) or samples < 1:
        raise ValueError(f"samples must be a whole number of at least 1, got {samples!r:.40}.")
    rng = Random([seed, 3])
    d, d_k = config.d_model, config.d_head
    W_V, W_Q, W_K = (rng.standard_normal((samples, d, d_k)) for _ in range(3))  # [S, d_model, d_k] each
    W_O = rng.standard_normal((samples, d_k, d))  # [S, d_k, d_model]
    return composition_scores(W_V @ W_O, W_K @ W_Q.mT)  # W_OV [S, d, d], W_QKᵀ [S, d, d] -> [S]


# ---------------------------------------------------------------- loss, and all of it over a run

def position_losses(params: dict, tokens, config: TrainConfig) -> np.ndarray:
    """[n − 1]: the cross-entropy in nats of each next-token prediction on one sequence tokens [n]: entry t is
    −ln p(tokens[t + 1]) as predicted from tokens[0..t]."""
    check_params(params, config)
    tokens = check_tokens("tokens", tokens, config, 1)
    logits, _ = forward(params, tokens[None], config)  # [1, n, V]
    losses, _ = next_token_losses(logits, tokens[None])  # [1, n − 1]
    return losses[0]


def logit_attribution(params: dict, tokens, config: TrainConfig, position) -> dict:
    """The logit of the token after position in tokens [n] (the one the model should predict there), split along
    the model's paths: {"target": that token, "logit", "direct": the embeddings W_E[t] + W_pos[position] read
    straight by W_U, "heads" [L, h]: each head's output at position, z_h W_O^h, read by W_U}. In an attention-only
    model with no norm, direct + heads.sum() is the logit (to rounding). A head's term is its direct effect only:
    what a layer-0 head changes through layer 1 is counted in layer 1's terms."""
    check_params(params, config)
    tokens = check_tokens("tokens", tokens, config, 1)
    if isinstance(position, bool) or not isinstance(position, numbers.Integral) or not 0 <= position < len(tokens) - 1:
        raise ValueError(f"position must be a whole number from 0 to {len(tokens) - 2} (a token must follow it), "
                         f"got {position!r:.40}.")
    target = int(tokens[position + 1])
    logits, cache = run_with_cache(params, tokens[None], config)  # [1, n, V], activations
    W_U = params["W_U"][:, target]  # [d_model]
    direct = cache["blocks.0.hook_resid_pre"][0, position] @ W_U  # [d_model] @ [d_model] -> scalar
    heads = np.stack([np.einsum("hk,hkd->hd", cache[f"blocks.{layer}.attn.hook_z"][0, position],
                                block_weights(params, layer)[3]) @ W_U  # [h, d_k], [h, d_k, d_model] -> [h]
                      for layer in range(config.n_layers)])  # [L, h]
    return {"target": target, "logit": float(logits[0, position, target]), "direct": float(direct), "heads": heads}


def every_full_ov_circuit(params: dict, config: TrainConfig) -> np.ndarray:
    """[L, h, V, V]: full_ov_circuits of every layer."""
    return np.stack([full_ov_circuits(params, config, layer) for layer in range(config.n_layers)])


def circuits(params: dict, config: TrainConfig) -> dict[str, np.ndarray]:
    """One checkpoint's circuits: "full_ov" [L, h, V, V], "copying" [L, h], "positional_qk" [L, h, n, n],
    "k_composition" [L, h, L, h]."""
    full_ov = every_full_ov_circuit(params, config)
    return {"full_ov": full_ov, "copying": copying_scores(full_ov),
            "positional_qk": np.stack([positional_qk_circuits(params, config, l) for l in range(config.n_layers)]),
            "k_composition": k_composition(params, config)}


def over_training(checkpoints: list[dict], config: TrainConfig, tokens, eval_tokens: np.ndarray) -> list[dict]:
    """Per checkpoint ({"step", "params"}, as Trainer keeps them): {"step", "k_composition" [L, h, L, h],
    "copying" [L, h], "loss", "loss_first", "loss_repeat" (evaluate's, on eval_tokens [B, n]), "position_losses"
    [n − 1] (on tokens [n])}: what a plot of composition and loss over training reads."""
    eval_tokens = check_tokens("eval_tokens", eval_tokens, config, 2)
    if not isinstance(checkpoints, list) or not all(isinstance(c, dict) and c.keys() >= {"step", "params"}
                                                     for c in checkpoints):
        raise ValueError("checkpoints must be a list of {\"step\", \"params\"} dicts, as Trainer keeps them.")
    run = []
    for checkpoint in checkpoints:
        params = checkpoint["params"]
        losses = evaluate(params, eval_tokens, config)
        run.append({"step": checkpoint["step"], "k_composition": k_composition(params, config),
                    "copying": copying_scores(every_full_ov_circuit(params, config)),
                    **{key: losses[key] for key in ("loss", "loss_first", "loss_repeat")},
                    "position_losses": position_losses(params, tokens, config)})
    return run


@functools.lru_cache(maxsize=8)  # the same for every checkpoint of a run: one run's views ask for it once
def k_baseline(config: TrainConfig) -> dict:
    """{"mean", "std"} of the K-composition score of random heads of config's shapes (seeded, so always the same)."""
    scores = random_k_composition(config)
    return {"mean": float(scores.mean()), "std": float(scores.std())}


def at_checkpoint(params: dict, config: TrainConfig, tokens) -> dict:
    """One checkpoint's circuits (circuits'), "k_baseline", and "position_losses" on "tokens" [n]."""
    return {**circuits(params, config), "k_baseline": k_baseline(config), "tokens": tokens,
            "position_losses": position_losses(params, tokens, config)}


def run_over_training(steps: list[int], params: list[dict], config: TrainConfig, tokens, seed: int) -> dict:
    """A run's checkpoints (steps[i], increasing, and its weights params[i]) -> {"checkpoints": over_training's
    entries, losses on the evaluation batch of the run with this seed, position losses on "tokens"; "k_baseline"}."""
    if len(steps) != len(params):
        raise ValueError(f"steps and params must be as long as each other (one step per checkpoint), "
                         f"got {len(steps)} and {len(params)}.")
    if steps != sorted(set(steps)):
        raise ValueError(f"steps must increase, got {steps[:8]}.")
    checkpoints = [{"step": step, "params": p} for step, p in zip(steps, params)]
    return {"checkpoints": over_training(checkpoints, config, tokens, eval_batch(config, seed)),
            "k_baseline": k_baseline(config), "tokens": tokens}
