"""model.py: the weights per head, the forward pass against attention.py's layer and a per-head reference, the
textbook backward pass against finite differences and torch.autograd, the float32 path, and the rules that tie a
config together."""

import math

import numpy as np
import pytest
import torch

from mha_core import attention, multi_head_attention
from mha_core.model import (TrainConfig, forward, init_params, layer_heads, layer_matrices, loss_and_grads,
                            run_with_cache, unflatten)
from mha_core.rng import Random
from mha_core.training import sample_batch

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


def small_case(seed=0):
    params = init_params(SMALL, seed)
    params = {k: v * 2.0 for k, v in params.items()}  # larger weights: patterns far from uniform
    return params, sample_batch(SMALL, np.random.default_rng(seed))


# ---------------------------------------------------------------- the weights

def test_weights_have_their_shapes_and_scales():
    config = TrainConfig()
    params = init_params(config, 0)
    assert {k: v.shape for k, v in params.items()} == config.param_shapes
    assert list(params) == list(config.param_shapes)  # the fixed order unflatten relies on
    assert params["W_U"].std() == pytest.approx(1 / math.sqrt(config.d_model), rel=0.1)
    flat = np.concatenate([p.reshape(-1) for p in params.values()])
    back = unflatten(flat, config)
    assert all(np.shares_memory(back[k], flat) and np.array_equal(back[k], params[k]) for k in params)


def test_attention_weights_are_held_per_head_as_transformer_lens_holds_them():
    config = TrainConfig(d_model=12, n_heads=3, d_head=5)
    params = init_params(config, 0)
    h, d, d_k = config.n_heads, config.d_model, config.d_head
    assert params["blocks.1.attn.W_Q"].shape == (h, d, d_k) and params["blocks.1.attn.W_O"].shape == (h, d_k, d)
    # a seed draws each layer's matrices x @ W multiplies by ([d_model, h·d_k], [h·d_k, d_model]), in order
    rng = Random([0, 0])
    drawn = [rng.normal(0, 1 / math.sqrt(d), shape) for shape in ((config.vocab, d), (config.seq_len, d))]
    drawn += [rng.normal(0, 1 / math.sqrt(rows), (rows, cols)) for rows, cols in ((d, h * d_k),) * 3 + ((h * d_k, d),)]
    np.testing.assert_array_equal(params["W_pos"], drawn[1])
    W_Q, W_K, W_V, W_O = (params[f"blocks.0.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
    for head in range(h):  # head i: columns i·d_k .. (i + 1)·d_k − 1 of W_Q, W_K, W_V; those rows of W_O
        cols = slice(head * d_k, (head + 1) * d_k)
        for per_head, matrix in zip((W_Q, W_K, W_V), drawn[2:5]):
            np.testing.assert_array_equal(per_head[head], matrix[:, cols])
        np.testing.assert_array_equal(W_O[head], drawn[5][cols])
    side_by_side = layer_matrices(W_Q, W_K, W_V, W_O)
    assert all(np.array_equal(a, b) for a, b in zip(side_by_side, drawn[2:]))
    assert all(np.array_equal(a, b) for a, b in zip(layer_heads(*side_by_side, h), (W_Q, W_K, W_V, W_O)))


# ---------------------------------------------------------------- forward

def test_forward_layers_are_multi_head_attention():
    params, tokens = small_case()
    logits, patterns = forward(params, tokens, SMALL)
    x = params["W_E"][tokens] + params["W_pos"][: tokens.shape[1]]
    for layer in range(SMALL.n_layers):
        W_Q, W_K, W_V, W_O = (params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
        W = [np.concatenate(list(W), axis=-1) for W in (W_Q, W_K, W_V)]  # heads side by side: [d_model, h·d_k]
        out, weights = multi_head_attention(x, *W, np.concatenate(list(W_O)), n_heads=SMALL.n_heads, causal=True)
        np.testing.assert_allclose(patterns[layer], weights, atol=1e-12)
        x = x + out
    np.testing.assert_allclose(logits, x @ params["W_U"], atol=1e-12)


def test_the_cache_holds_each_activation_by_its_transformer_lens_name():
    params, tokens = small_case()
    logits, cache = run_with_cache(params, tokens, SMALL)
    B, n = tokens.shape
    for layer in range(SMALL.n_layers):
        assert cache[f"blocks.{layer}.hook_resid_pre"].shape == (B, n, SMALL.d_model)
        for name in ("q", "k", "v"):
            assert cache[f"blocks.{layer}.attn.hook_{name}"].shape == (B, SMALL.n_heads, n, SMALL.d_head)
        assert cache[f"blocks.{layer}.attn.hook_z"].shape == (B, n, SMALL.n_heads, SMALL.d_head)  # as TransformerLens
        assert cache[f"blocks.{layer}.attn.hook_pattern"].shape == (B, SMALL.n_heads, n, n)
    q = cache["blocks.0.attn.hook_q"]
    W_Q = params["blocks.0.attn.W_Q"]
    np.testing.assert_allclose(q[:, 1], cache["blocks.0.hook_resid_pre"] @ W_Q[1], atol=1e-12)  # head 1
    np.testing.assert_allclose(logits, cache["hook_resid_final"] @ params["W_U"], atol=1e-12)


def test_ablation_zeroes_exactly_that_heads_output():
    params, tokens = small_case()
    logits, _ = forward(params, tokens, SMALL, ablate=[(0, 1)])
    x = params["W_E"][tokens] + params["W_pos"][: tokens.shape[1]]
    for layer in range(SMALL.n_layers):  # per head, written out: the layer's output is the sum of z_h @ W_O[h]
        W_Q, W_K, W_V, W_O = (params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
        out = 0
        for head in range(SMALL.n_heads):
            s = (x @ W_Q[head]) @ (x @ W_K[head]).swapaxes(-1, -2) / math.sqrt(SMALL.d_head)
            s = np.where(np.tri(tokens.shape[1], dtype=bool), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            if (layer, head) != (0, 1):  # the knocked-out head's term is skipped
                out = out + (w @ (x @ W_V[head])) @ W_O[head]
        x = x + out
    np.testing.assert_allclose(logits, x @ params["W_U"], atol=1e-10)


# ---------------------------------------------------------------- gradients

def test_gradients_match_central_finite_differences():
    params, tokens = small_case()
    _, grads = loss_and_grads(params, tokens, SMALL)
    eps = 1e-5
    for name, p in params.items():
        numeric = np.zeros_like(p)
        for i in np.ndindex(p.shape):
            old = p[i]
            p[i] = old + eps
            up, _ = loss_and_grads(params, tokens, SMALL)
            p[i] = old - eps
            down, _ = loss_and_grads(params, tokens, SMALL)
            p[i] = old
            numeric[i] = (up - down) / (2 * eps)
        error = np.linalg.norm(numeric - grads[name]) / max(np.linalg.norm(numeric), np.linalg.norm(grads[name]))
        assert error <= 1e-6, f"{name}: relative error {error:.2e}"


@pytest.mark.parametrize("n", [2, 3, 10])
def test_the_browsers_path_gives_the_same_gradients(monkeypatch, n):
    """Without BLAS (Pyodide) the weight products run as einsum; at any sequence length the same numbers."""
    params, tokens = small_case()
    loss, grads = loss_and_grads(params, tokens[:, :n], SMALL)
    monkeypatch.setattr(attention, "NO_BLAS", True)
    plain_loss, plain = loss_and_grads(params, tokens[:, :n], SMALL)
    assert abs(loss - plain_loss) <= 1e-12
    for name in grads:
        assert np.allclose(grads[name], plain[name], rtol=1e-10, atol=1e-14), name


def test_float32_weights_give_float32_gradients_close_to_float64():
    params, tokens = small_case()
    _, exact = loss_and_grads(params, tokens, SMALL)
    _, single = loss_and_grads({k: v.astype(np.float32) for k, v in params.items()}, tokens, SMALL)
    for name in exact:
        assert single[name].dtype == np.float32
        assert np.linalg.norm(single[name] - exact[name]) <= 1e-4 * np.linalg.norm(exact[name]), name


def torch_logits(params: dict, tokens: np.ndarray, config: TrainConfig) -> torch.Tensor:
    """The same model in torch, per head, with torch's softmax: logits [B, n, V]."""
    t = torch.as_tensor(tokens)
    n = t.shape[1]
    x = params["W_E"][t] + params["W_pos"][:n]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for layer in range(config.n_layers):
        W_Q, W_K, W_V, W_O = (params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
        heads = []
        for head in range(config.n_heads):
            scores = (x @ W_Q[head]) @ (x @ W_K[head]).transpose(-1, -2) / math.sqrt(config.d_head)
            weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
            heads.append(weights @ (x @ W_V[head]) @ W_O[head])
        x = x + sum(heads)
    return x @ params["W_U"]


def torch_loss(params: dict, tokens: np.ndarray, config: TrainConfig) -> torch.Tensor:
    """torch_logits' mean next-token cross-entropy, by torch."""
    logits, t = torch_logits(params, tokens, config), torch.as_tensor(tokens)
    return torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, config.vocab), t[:, 1:].reshape(-1))


@pytest.mark.parametrize("seed", [0, 1])
def test_gradients_match_torch_autograd(seed):
    config = TrainConfig(batch=4, seq_len=20)
    params = init_params(config, seed)
    tokens = sample_batch(config, np.random.default_rng(seed))
    loss, grads = loss_and_grads(params, tokens, config)
    leaves = {k: torch.tensor(v, requires_grad=True) for k, v in params.items()}
    reference = torch_loss(leaves, tokens, config)
    reference.backward()
    assert loss == pytest.approx(reference.item(), rel=1e-12)
    for name, leaf in leaves.items():
        np.testing.assert_allclose(grads[name], leaf.grad.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


# ---------------------------------------------------------------- the config's own rules

@pytest.mark.parametrize("fields, message", [
    ({"min_period": 9, "max_period": 8}, "max_period=8 is below min_period=9"),
    ({"vocab": 10, "max_period": 12}, "max_period=12 exceeds vocab=10"),
    ({"seq_len": 17}, "seq_len=17 must be at least max_period \\+ 2"),
    ({"batch": 64, "seq_len": 64, "d_model": 128, "n_heads": 8}, "operations per step"),
])
def test_configs_whose_fields_do_not_fit_together_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**fields)


def test_one_configuration_the_defaults_choices_and_experiments_fit_the_ranges():
    """The default model, every choice the widget offers and every experiment lie in TRAIN_RANGES; the default
    is among the choices; each experiment is a valid TrainConfig; the bridge declares exactly these ranges."""
    from dataclasses import asdict, fields

    from mha_page import bridge
    from mha_core.model import EXPERIMENTS, TRAIN_CHOICES, TRAIN_RANGES

    default = asdict(TrainConfig())
    assert set(TRAIN_RANGES) == {f.name for f in fields(TrainConfig)}

    def inside(name, value):
        low, high = TRAIN_RANGES[name]
        return (low < value if isinstance(high, float) else low <= value) and value <= high

    assert all(inside(name, value) for name, value in default.items())
    for name, offered in TRAIN_CHOICES.items():
        assert default[name] in offered and all(inside(name, v) for v in offered), name
    for name, change in EXPERIMENTS.items():
        config = TrainConfig(**{**default, **change})
        assert all(inside(k, v) for k, v in asdict(config).items()) and change.items() <= asdict(config).items(), name
    limits = bridge.limits("training_start")["config"]
    assert {name: (field.get("min", field.get("above")), field["max"]) for name, field in limits.items()} == TRAIN_RANGES


# ---------------------------------------------------------------- the public door

@pytest.mark.parametrize("fields, message", [
    ({"n_heads": 0}, "n_heads must be at least 1, got 0."),
    ({"d_model": 2.5}, "d_model must be a whole number, got 2.5."),
    ({"lr": -1}, "lr must be a number above 0 and at most 10, got -1."),
    ({"vocab": "32"}, "vocab must be a whole number, got '32'."),
])
def test_a_field_out_of_its_range_is_refused_by_name(fields, message):
    with pytest.raises(ValueError) as refused:
        TrainConfig(**fields)
    assert str(refused.value) == message


SMALL = TrainConfig(vocab=8, d_model=8, n_heads=2, d_head=4, seq_len=8, batch=2, min_period=2, max_period=6)


def model_args():
    return {"params": init_params(SMALL, 0), "tokens": np.array([[0, 1, 2, 0, 1, 2], [3, 4, 3, 4, 3, 4]]),
            "config": SMALL}


def with_weight(name, value):
    return {**model_args()["params"], name: value}


@pytest.mark.parametrize("change, message", [
    ({"config": {"vocab": 8}}, "config must be a TrainConfig, got dict."),
    ({"params": [np.zeros((8, 8))]}, "params must be a dict of arrays by name, got list."),
    ({"params": with_weight("W_E", np.zeros((7, 8)))}, "params['W_E'] must have shape (8, 8), got (7, 8)."),
    ({"params": {k: v for k, v in model_args()["params"].items() if k != "W_U"}},
     "params['W_U'] must have shape (8, 8), got none."),
    ({"params": with_weight("W_in", np.zeros((8, 8)))}, "params holds 'W_in', not a weight of this model (W_E, W_pos,"),
    ({"params": with_weight("W_U", np.zeros(8))}, "params['W_U'] must have shape (8, 8), got (8,)."),
    ({"params": with_weight("W_pos", np.full((8, 8), np.nan))}, "params['W_pos'] contains NaN"),
    ({"tokens": np.array([[0.0, 1.0]])}, "tokens must hold integers, got dtype float64."),
    ({"tokens": np.array([0, 1, 2])}, "tokens must have 2 dimensions, got shape (3,)."),
    ({"tokens": np.array([[0]])}, "tokens must hold 2 to seq_len=8 positions, got shape (1, 1)."),
    ({"tokens": np.zeros((1, 9), dtype=int)}, "tokens must hold 2 to seq_len=8 positions"),
    ({"tokens": np.array([[0, 8]])}, "tokens must be ids from 0 to vocab - 1 = 7, got 0 to 8."),
    ({"tokens": np.array([[-1, 2]])}, "tokens must be ids from 0 to vocab - 1 = 7, got -1 to 2."),
])
@pytest.mark.parametrize("fn", [forward, run_with_cache, loss_and_grads])
def test_the_model_refuses_what_does_not_fit_by_name(fn, change, message):
    with pytest.raises(ValueError) as refused:
        fn(**{**model_args(), **change})
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("ablate, message", [
    ([(2, 0)], "ablate holds (layer, head) pairs with layer < 2 and head < 2, got (2, 0)."),
    ([(0, 5)], "ablate holds (layer, head) pairs with layer < 2 and head < 2, got (0, 5)."),
    ([(0, -1)], "ablate[0]'s head must be at least 0, got -1."),
    ([0], "ablate[0] must be a pair [layer, head], got 0."),
])
def test_ablating_a_head_the_model_lacks_is_refused(ablate, message):
    with pytest.raises(ValueError) as refused:
        forward(**model_args(), ablate=ablate)
    assert str(refused.value) == message


@pytest.mark.parametrize("args, message", [
    ((SMALL, -1), "seed must be at least 0, got -1."),
    ((None, 0), "config must be a TrainConfig, got NoneType."),
])
def test_init_params_refuses_by_name(args, message):
    with pytest.raises(ValueError, match=f"^{message}$".replace(".", r"\.")):
        init_params(*args)


def test_valid_calls_answer_as_the_functions_themselves():
    args = model_args()
    loss, grads = loss_and_grads(**args)
    loss_fn, grads_fn = loss_and_grads.fn(**args)
    assert loss == loss_fn and all(np.array_equal(grads[k], grads_fn[k]) for k in grads)
    assert np.array_equal(forward(**args, ablate=[(1, 1)])[0], forward.fn(**args, ablate=[(1, 1)])[0])
