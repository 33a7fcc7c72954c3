"""training.py: the hand-written backward pass against finite differences and torch.autograd, the
induction circuit that training finds (checked by rules written here), its ablation, and bad input."""

import json
import math
from dataclasses import asdict

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from mha_core import attention, bridge, multi_head_attention, training
from mha_core.training import (TrainConfig, Trainer, TrainingDiverged, decode_params, encode_params, evaluate,
                               forward, init_params, loss_and_grads, recorded_run, sample_batch, text_tokens, train)

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)
STEPS = 600


def small_case(seed=0):
    params = init_params(SMALL, seed)
    params = {k: v * 2.0 for k, v in params.items()}  # larger weights: patterns far from uniform
    return params, sample_batch(SMALL, np.random.default_rng(seed))


# ---------------------------------------------------------------- the task

def test_batches_repeat_a_block_of_distinct_tokens():
    config = TrainConfig()
    tokens = sample_batch(config, np.random.default_rng(0))
    assert tokens.shape == (config.batch, config.seq_len) and tokens.dtype.kind == "i"
    periods = set()
    for row in tokens:
        period = next(p for p in range(1, len(row)) if row[p] == row[0])
        assert len(set(row[:period].tolist())) == period  # distinct within the block
        assert all(row[t] == row[t % period] for t in range(len(row)))
        assert config.min_period <= period <= config.max_period
        periods.add(period)
    assert len(periods) > 3  # the period varies


# ---------------------------------------------------------------- forward

def test_forward_layers_are_multi_head_attention():
    params, tokens = small_case()
    logits, patterns = forward(params, tokens, SMALL)
    x = params["W_E"][tokens] + params["W_pos"][: tokens.shape[1]]
    for layer in range(SMALL.n_layers):
        W = [params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O")]
        out, weights = multi_head_attention(x, *W, n_heads=SMALL.n_heads, causal=True)
        np.testing.assert_allclose(patterns[layer], weights, atol=1e-12)
        x = x + out
    np.testing.assert_allclose(logits, x @ params["W_U"], atol=1e-12)


def test_ablation_zeroes_exactly_that_heads_output():
    params, tokens = small_case()
    logits, _ = forward(params, tokens, SMALL, ablate=[(0, 1)])
    x = params["W_E"][tokens] + params["W_pos"][: tokens.shape[1]]
    for layer in range(SMALL.n_layers):  # per head, written out: z_head @ W_O rows of that head
        W_Q, W_K, W_V, W_O = (params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
        out = 0
        for head in range(SMALL.n_heads):
            cols = slice(head * SMALL.d_head, (head + 1) * SMALL.d_head)
            s = (x @ W_Q[:, cols]) @ (x @ W_K[:, cols]).swapaxes(-1, -2) / math.sqrt(SMALL.d_head)
            s = np.where(np.tri(tokens.shape[1], dtype=bool), s, -np.inf)
            w = np.exp(s - s.max(-1, keepdims=True))
            w /= w.sum(-1, keepdims=True)
            if (layer, head) != (0, 1):
                out = out + (w @ (x @ W_V[:, cols])) @ W_O[cols]
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
def test_the_browsers_paths_give_the_same_gradients(monkeypatch, n):
    """Without BLAS (Pyodide) products run as einsum; causal blocks are skipped at any length."""
    params, tokens = small_case()
    loss, grads = loss_and_grads(params, tokens[:, :n], SMALL)
    monkeypatch.setattr(attention, "NO_BLAS", True)
    monkeypatch.setattr(training, "CAUSAL_BLOCKS", 1)
    plain_loss, plain = loss_and_grads(params, tokens[:, :n], SMALL)
    assert abs(loss - plain_loss) <= 1e-12
    for name in grads:
        assert np.allclose(grads[name], plain[name], rtol=1e-10, atol=1e-14), name


def test_a_float32_run_stays_float32_and_is_repeatable():
    runs = [Trainer(SMALL, seed=4, dtype=np.float32) for _ in range(2)]
    for trainer in runs:
        trainer.run(20)
    assert all(p.dtype == np.float32 for p in runs[0].params.values())
    assert all(m.dtype == np.float32 for m in runs[0].moments)
    assert all(np.array_equal(runs[0].params[k], runs[1].params[k]) for k in runs[0].params)
    params, tokens = small_case()
    _, exact = loss_and_grads(params, tokens, SMALL)
    _, single = loss_and_grads({k: v.astype(np.float32) for k, v in params.items()}, tokens, SMALL)
    for name in exact:
        assert single[name].dtype == np.float32
        assert np.linalg.norm(single[name] - exact[name]) <= 1e-4 * np.linalg.norm(exact[name]), name
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        Trainer(SMALL, dtype=np.float16)


def torch_loss(params: dict, tokens: np.ndarray, config: TrainConfig) -> torch.Tensor:
    """The same model in torch, per head, with torch's softmax and cross-entropy."""
    t = torch.as_tensor(tokens)
    n = t.shape[1]
    x = params["W_E"][t] + params["W_pos"][:n]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    for layer in range(config.n_layers):
        W_Q, W_K, W_V, W_O = (params[f"blocks.{layer}.attn.{w}"] for w in ("W_Q", "W_K", "W_V", "W_O"))
        heads = []
        for head in range(config.n_heads):
            cols = slice(head * config.d_head, (head + 1) * config.d_head)
            scores = (x @ W_Q[:, cols]) @ (x @ W_K[:, cols]).transpose(-1, -2) / math.sqrt(config.d_head)
            weights = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
            heads.append(weights @ (x @ W_V[:, cols]))
        x = x + torch.cat(heads, dim=-1) @ W_O
    logits = x @ params["W_U"]
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


# ---------------------------------------------------------------- it learns the induction circuit

def induction_share(pattern: np.ndarray, tokens: np.ndarray) -> float:
    """Mean over repeated queries (the token occurred before) of the attention on the keys that followed
    its earlier occurrences; pattern is one head's [B, n, n]."""
    shares = []
    for b, row in enumerate(tokens):
        for q in range(len(row)):
            keys = [j + 1 for j in range(q) if row[j] == row[q]]
            if keys:
                shares.append(pattern[b, q, keys].sum())
    return float(np.mean(shares))


def previous_share(pattern: np.ndarray) -> float:
    """Mean over queries 1..n-1 of the attention on the key just before; pattern is [B, n, n]."""
    n = pattern.shape[-1]
    return float(np.mean([pattern[:, q, q - 1] for q in range(1, n)]))


@pytest.fixture(scope="module", params=[0, 1, 3])
def run(request):
    """A default-config run of STEPS steps, the weights at step 0 and at the end, and test sequences. (Seed 2
    grows two previous-token heads that share the work, so knocking out either alone leaves half the circuit.)"""
    trainer = Trainer(TrainConfig(), seed=request.param, log_every=STEPS)
    start = trainer.params
    with threadpool_limits(1):  # matrices this small run fastest on one thread
        trainer.run(STEPS)
    tokens = sample_batch(trainer.config, np.random.default_rng(1000 + request.param))
    return {"trainer": trainer, "start": start, "tokens": tokens}


def circuit(run):
    """(layer-0 previous-token head, layer-1 induction head) of the trained run, by the rules above."""
    _, patterns = forward(run["trainer"].params, run["tokens"], run["trainer"].config)
    prev = max(range(2), key=lambda h: previous_share(patterns[0][:, h]))
    induction = max(range(2), key=lambda h: induction_share(patterns[1][:, h], run["tokens"]))
    return prev, induction, patterns


def test_it_learns_induction(run):
    trainer, tokens = run["trainer"], run["tokens"]
    config = trainer.config
    _, start_patterns = forward(run["start"], tokens, config)
    assert all(induction_share(start_patterns[1][:, h], tokens) <= 0.3 for h in range(config.n_heads))
    prev, induction, patterns = circuit(run)
    assert induction_share(patterns[1][:, induction], tokens) >= 0.6
    assert previous_share(patterns[0][:, prev]) >= 0.4
    after = evaluate(trainer.params, tokens, config)
    assert after["loss_repeat"] < 0.4 < math.log(config.vocab) - 1 < after["loss_first"]
    # the detector scores say the same as the rules written here
    assert after["scores"]["induction"][1][induction] == pytest.approx(induction_share(patterns[1][:, induction], tokens))
    assert after["scores"]["previous_token"][0][prev] == pytest.approx(previous_share(patterns[0][:, prev]))
    assert [h["step"] for h in trainer.history] == [0, STEPS]


def test_ablation_shows_the_circuit(run):
    trainer, tokens = run["trainer"], run["tokens"]
    prev, induction, _ = circuit(run)
    base = evaluate(trainer.params, tokens, trainer.config)
    no_prev = evaluate(trainer.params, tokens, trainer.config, ablate=[(0, prev)])
    no_other = evaluate(trainer.params, tokens, trainer.config, ablate=[(0, 1 - prev)])
    assert no_prev["loss_repeat"] > base["loss_repeat"] + 1.0
    assert no_prev["loss_repeat"] - base["loss_repeat"] > 3 * (no_other["loss_repeat"] - base["loss_repeat"])
    # the induction head still attends, but without the previous-token head its keys say nothing
    assert no_prev["scores"]["induction"][1][induction] < 0.5 * base["scores"]["induction"][1][induction]


def test_training_is_deterministic():
    a = train(SMALL, steps=30, seed=7, log_every=10, checkpoint_every=15)
    b = train(SMALL, steps=30, seed=7, log_every=10, checkpoint_every=15)
    assert a["history"] == b["history"] and [c["step"] for c in a["checkpoints"]] == [0, 15, 30]
    assert all(np.array_equal(a["params"][k], b["params"][k]) for k in a["params"])
    c = train(SMALL, steps=30, seed=8)
    assert not np.array_equal(a["params"]["W_E"], c["params"]["W_E"])


def test_run_in_slices_equals_one_run():
    whole = Trainer(SMALL, seed=3)
    whole.run(20)
    sliced = Trainer(SMALL, seed=3)
    for _ in range(4):
        sliced.run(5)
    assert whole.history == sliced.history
    assert all(np.array_equal(whole.params[k], sliced.params[k]) for k in whole.params)


def test_params_survive_encoding_to_float16():
    params = init_params(SMALL, 0)
    back = decode_params(encode_params(params, SMALL), SMALL)
    for name, p in params.items():
        np.testing.assert_allclose(back[name], p, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="numbers"):
        decode_params(encode_params(params, SMALL)[:-8], SMALL)
    with pytest.raises(ValueError, match="base64"):
        decode_params("not base64!", SMALL)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("fields, message", [
    ({"vocab": 0}, "vocab must be at least 1"),
    ({"n_heads": 2.5}, "n_heads must be a whole number"),
    ({"d_model": "32"}, "d_model must be a whole number"),
    ({"lr": float("nan")}, "lr must be a number above 0"),
    ({"lr": -1}, "lr must be a number above 0"),
    ({"lr": True}, "lr must be a number above 0"),
    ({"min_period": 1}, "min_period must be at least 2"),
    ({"min_period": 9, "max_period": 8}, "max_period=8 is below min_period=9"),
    ({"vocab": 10, "max_period": 12}, "max_period=12 exceeds vocab=10"),
    ({"seq_len": 17}, "seq_len=17 must be at least max_period \\+ 2"),
    ({"batch": 10**9}, "batch must be at most 64"),
    ({"batch": 64, "seq_len": 64, "d_model": 128, "n_heads": 8}, "operations per step"),
])
def test_bad_configs_are_refused_by_name(fields, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**fields)


def test_diverging_run_stops_with_a_message_and_keeps_its_last_good_state():
    trainer = Trainer(TrainConfig(lr=1.0), seed=0, log_every=1)
    with pytest.raises(TrainingDiverged, match=r"diverged at step \d+: the loss reached .*smaller learning rate"):
        trainer.run(200)
    assert all(np.isfinite(p).all() for p in trainer.params.values())
    assert all(math.isfinite(h["loss"]) for h in trainer.history)
    assert len(trainer.history) == trainer.step + 1


def test_bad_tokens_seeds_and_ablations():
    params, tokens = small_case()
    with pytest.raises(ValueError, match="tokens must lie in 0..7"):
        forward(params, tokens + 8, SMALL)
    with pytest.raises(ValueError, match="tokens must be whole numbers"):
        forward(params, tokens.astype(float), SMALL)
    with pytest.raises(ValueError, match="ablate holds"):
        forward(params, tokens, SMALL, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="seed must be"):
        Trainer(SMALL, seed=-1)
    with pytest.raises(ValueError, match="n_steps must be at least 1"):
        Trainer(SMALL).run(0)


# ---------------------------------------------------------------- the browser's calls, through the bridge

def bridge_call(fn, **args):
    return json.loads(bridge.call(fn, json.dumps(args)))


def test_a_run_through_the_bridge_in_slices():
    fields = {"n_heads": 1, "batch": 4}
    started = bridge_call("training_start", config=fields, seed=5)
    assert started["ok"], started
    run = started["result"]
    assert run["step"] == 0 and [c["step"] for c in run["checkpoints"]] == [0]
    assert run["config"] == {**asdict(TrainConfig()), **fields} and len(run["tokens"]) == 32
    steps = 0
    while steps < 35:
        answer = bridge_call("training_advance", run=run["run"], budget_ms=50)
        assert answer["ok"], answer
        assert answer["result"]["step"] > steps and not answer["result"]["done"]
        steps = answer["result"]["step"]
        run["history"] += answer["result"]["history"]
        run["checkpoints"] += answer["result"]["checkpoints"]
    assert [h["step"] for h in run["history"]] == list(range(0, steps + 1, 10))
    assert [c["step"] for c in run["checkpoints"]] == list(range(0, steps + 1, 30))
    assert bridge_call("training_stop", run=run["run"]) == {"ok": True, "result": {"stopped": True}}
    assert bridge_call("training_stop", run=run["run"])["result"] == {"stopped": False}
    over = bridge_call("training_advance", run=run["run"])
    assert not over["ok"] and "this training run is over" in over["error"]
    # a checkpoint's weights, sent back, give its recorded numbers (float16 weights: close, not equal)
    last = run["checkpoints"][-1]
    measured = bridge_call("training_evaluate", config=run["config"], seed=5, params=last["params"])["result"]
    recorded = next(h for h in run["history"] if h["step"] == last["step"])
    assert measured["intact"]["loss"] == pytest.approx(recorded["loss"], abs=5e-3)
    assert measured["ablated"] == measured["intact"]


def test_bridge_refuses_bad_runs_and_weights():
    assert "unknown config field 'heads'" in bridge_call("training_start", config={"heads": 2})["error"]
    assert "lr must be a number above 0" in bridge_call("training_start", config={"lr": 0})["error"]
    run = bridge_call("training_start", config={"batch": 2})["result"]["run"]
    assert "budget_ms must be" in bridge_call("training_advance", run=run, budget_ms=10**6)["error"]
    params = encode_params(init_params(TrainConfig(), 0), TrainConfig())
    assert "this config has" in bridge_call("training_evaluate", config={"n_heads": 1}, seed=0, params=params)["error"]
    assert "ablate holds" in bridge_call("training_evaluate", config={}, seed=0, params=params, ablate=[[0, 9]])["error"]


def test_a_diverging_run_ends_through_the_bridge():
    run = bridge_call("training_start", config={"lr": 1.0, "batch": 4}, seed=0)["result"]["run"]
    for _ in range(100):
        answer = bridge_call("training_advance", run=run, budget_ms=50)
        if not answer["ok"]:
            break
    assert "training diverged at step" in answer["error"]
    assert "this training run is over" in bridge_call("training_advance", run=run)["error"]


def test_the_recorded_run_is_the_same_bytes_every_time():
    def recorded():
        return json.dumps(recorded_run(SMALL, 1), sort_keys=True, allow_nan=False)
    assert recorded() == recorded()


def test_a_readers_text_becomes_tokens_in_order_of_first_appearance():
    ids, words = text_tokens("The cat sat. the CAT sat!", TrainConfig())
    assert words == ["The", "cat", "sat", ".", "the", "CAT", "sat", "!"] and ids == [0, 1, 2, 3, 0, 1, 2, 4]
    assert len(text_tokens("a b " * 40, TrainConfig())[0]) == 32
    with pytest.raises(ValueError, match="33 different words in its first 33; the model knows 32 tokens"):
        text_tokens(" ".join(f"w{i}" for i in range(40)), TrainConfig(seq_len=33, vocab=32))
    with pytest.raises(ValueError, match="at least 2 words"):
        text_tokens("one", TrainConfig())
    with pytest.raises(ValueError, match="text is empty"):
        text_tokens("   ", TrainConfig())
