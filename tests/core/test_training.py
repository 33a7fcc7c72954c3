"""training.py: the task's batches, Adam against the textbook, runs that repeat bit for bit, a diverging run,
and the induction circuit that training finds (checked by rules written here) with its ablation."""

import math

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mha_core.detectors import evaluate
from mha_core.model import TrainConfig, forward
from mha_core.training import ADAM, Trainer, TrainingDiverged, adam_update, best_first_loss, sample_batch, train

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)
STEPS = 600


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


def exact_next_token_probability(prefix: list[int], token: int, config: TrainConfig) -> float:
    """p(token | prefix) under the task, by Bayes over every period: each period consistent with prefix weighs
    its prior times the chance of the prefix's distinct tokens, and says what comes next."""
    V, t = config.vocab, len(prefix)
    total = chance = 0.0
    for period in range(config.min_period, config.max_period + 1):
        if any(prefix[i] != prefix[i % period] for i in range(t)) or len(set(prefix[:period])) != min(period, t):
            continue
        weight = math.prod(1 / (V - j) for j in range(min(period, t)))
        if t < period:  # still inside the block: any token not yet drawn
            follows = 0.0 if token in prefix else 1 / (V - t)
        else:
            follows = float(token == prefix[t % period])
        total, chance = total + weight, chance + weight * follows
    return chance / total


def test_best_first_loss_is_the_exact_predictor_s_loss_on_sampled_sequences():
    """Monte-Carlo: the exact predictor's mean loss on the first-occurrence predictions of sampled batches,
    pooled as evaluate pools them, matches the closed form within 3 standard errors (0.0027 nats each; the
    mean of per-sequence means, 0.010 higher, would not)."""
    config, rng, losses = TrainConfig(), np.random.default_rng(1), []
    for _ in range(250):
        for row in sample_batch(config, rng).tolist():
            for t in range(len(row) - 1):
                if row[t] in row[:t]:
                    break  # from here on every token is a repeat
                losses.append(-math.log(exact_next_token_probability(row[:t + 1], row[t + 1], config)))
    assert abs(np.mean(losses) - best_first_loss(config)) < 0.008
    assert best_first_loss(config) < math.log(config.vocab) - 0.25  # below a uniform guess's


def test_best_first_loss_knows_when_the_block_must_end():
    fixed = TrainConfig(min_period=8, max_period=8)  # the end is certain: 7 predictions of unseen tokens, 1 free
    assert best_first_loss(fixed) == pytest.approx(sum(math.log(32 - k) for k in range(1, 8)) / 8)
    with pytest.raises(ValueError, match="config"):
        best_first_loss({"vocab": 32})


# ---------------------------------------------------------------- Adam

def test_adam_is_the_textbook_update():
    rng = np.random.default_rng(0)
    w, m, v = rng.standard_normal(5), np.zeros(5), np.zeros(5)
    weights, moments = w.copy(), (np.zeros(5), np.zeros(5))
    for t in range(1, 4):
        g = rng.standard_normal(5)
        m = ADAM["beta1"] * m + (1 - ADAM["beta1"]) * g
        v = ADAM["beta2"] * v + (1 - ADAM["beta2"]) * g**2
        w = w - 0.01 * (m / (1 - ADAM["beta1"]**t)) / (np.sqrt(v / (1 - ADAM["beta2"]**t)) + ADAM["eps"])
        weights, moments = adam_update(weights, g, moments, t, 0.01)
    np.testing.assert_allclose(weights, w, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(moments[1], v, rtol=1e-15, atol=0)


# ---------------------------------------------------------------- runs

def test_a_float32_run_stays_float32_and_is_repeatable():
    runs = [Trainer(SMALL, seed=4, dtype=np.float32) for _ in range(2)]
    for trainer in runs:
        trainer.run(20)
    assert all(p.dtype == np.float32 for p in runs[0].params.values())
    assert all(m.dtype == np.float32 for m in runs[0].moments)
    assert all(np.array_equal(runs[0].params[k], runs[1].params[k]) for k in runs[0].params)


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


def test_diverging_run_stops_with_a_message_and_keeps_its_last_good_state():
    trainer = Trainer(TrainConfig(lr=1.0), seed=0, log_every=1)
    with pytest.raises(TrainingDiverged, match=r"diverged at step \d+: the loss reached .*learning rate smaller than 1\.$"):
        trainer.run(200)
    assert all(np.isfinite(p).all() for p in trainer.params.values())
    assert all(math.isfinite(h["loss"]) for h in trainer.history)
    assert len(trainer.history) == trainer.step + 1


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


# ---------------------------------------------------------------- the public door

@pytest.mark.parametrize("call, message", [
    (lambda: sample_batch({"batch": 2}, np.random.default_rng(0)), "config must be a TrainConfig, got dict."),
    (lambda: sample_batch(TrainConfig(), 0), "rng must be a random generator such as mha_core.rng.Random (with integers, permuted), got int."),
    (lambda: train(steps=-1), "steps must be at least 0, got -1."),
    (lambda: train(log_every=0), "log_every must be at least 1, got 0."),
    (lambda: train(seed=2**32), "seed must be at most 4,294,967,295"),
    (lambda: Trainer(TrainConfig(), dtype=np.int32), "dtype must be one of float32, float64"),
    (lambda: Trainer(TrainConfig(), checkpoint_every=-2), "checkpoint_every must be at least 0, got -2."),
    (lambda: Trainer(TrainConfig()).run(-1), "n_steps must be at least 0, got -1."),
    (lambda: Trainer(TrainConfig()).run(1, budget_s=0), "budget_s must be a number above 0"),
])
def test_the_training_functions_refuse_nonsense_by_name(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message)


def test_a_checked_run_is_the_same_run():
    config = TrainConfig(batch=2, seq_len=8, max_period=6, min_period=2, d_model=8, d_head=4)
    a, b = train(config, steps=3, seed=5), train.fn(config, 3, 5, 10, 0)
    assert all(np.array_equal(a["params"][k], b["params"][k]) for k in a["params"])
