"""bridge/circuits.py: a checkpoint's circuits and a run's through the bridge, as plain JSON numbers, and the
refusals that depend on the checkpoints or the config."""

import json

import numpy as np
import pytest

from mha_core import circuits
from mha_page import bridge
from mha_page.bridge.circuits import MAX_CHECKPOINTS
from mha_page.views.training import decode_params, display_tokens, encode_params
from mha_core.model import TrainConfig, init_params
from mha_core.training import Trainer, eval_batch

SMALL = dict(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3, min_period=2, max_period=4)


def bridge_call(fn, **args):
    return json.loads(bridge.call(fn, json.dumps(args)))


@pytest.fixture(scope="module")
def small_run():
    """A short run of SMALL: its checkpoints' steps and weights in encode_params' form."""
    config = TrainConfig(**SMALL)
    trainer = Trainer(config, seed=2, checkpoint_every=10)
    trainer.run(30)
    return [c["step"] for c in trainer.checkpoints], [encode_params(c["params"], config) for c in trainer.checkpoints]


def test_a_checkpoints_circuits_arrive_as_plain_numbers(small_run):
    _, params = small_run
    answer = bridge_call("circuits_at", config=SMALL, params=params[-1])
    assert answer["ok"], answer
    result, config = answer["result"], TrainConfig(**SMALL)
    weights = decode_params(params[-1], config)
    for name, array in circuits.circuits(weights, config).items():
        assert result[name] == array.tolist(), name  # not rounded
    assert result["tokens"] == display_tokens(config)
    assert result["position_losses"] == circuits.position_losses(weights, result["tokens"], config).tolist()
    scores = circuits.random_k_composition(config)
    assert result["k_baseline"] == {"mean": scores.mean(), "std": scores.std()}


def test_a_runs_composition_and_loss_arrive_per_checkpoint(small_run):
    steps, params = small_run
    answer = bridge_call("circuits_over_training", config=SMALL, seed=2, steps=steps, params=params)
    assert answer["ok"], answer
    config = TrainConfig(**SMALL)
    checkpoints = [{"step": s, "params": decode_params(p, config)} for s, p in zip(steps, params)]
    want = circuits.over_training(checkpoints, config, display_tokens(config), eval_batch(config, 2))
    got = answer["result"]["checkpoints"]
    assert [c["step"] for c in got] == steps == [0, 10, 20, 30]
    for entry, expected in zip(got, want):
        assert entry == json.loads(json.dumps(expected, default=bridge.array_as_list))


@pytest.mark.parametrize("change, message", [
    (lambda steps, params: dict(steps=steps[:-1]), "steps and params must be as long as each other"),
    (lambda steps, params: dict(steps=steps[::-1]), "steps must increase"),
    (lambda steps, params: dict(steps=[0] * len(steps)), "steps must increase"),
    (lambda steps, params: dict(steps=list(range(MAX_CHECKPOINTS + 1)), params=params[:1] * (MAX_CHECKPOINTS + 1)),
     f"steps must hold at most {MAX_CHECKPOINTS} items"),
    (lambda steps, params: dict(config={**SMALL, "n_heads": 1}), "this config has"),
    (lambda steps, params: dict(config={**SMALL, "max_period": 9}), "max_period=9 exceeds vocab=8"),
])
def test_checkpoints_that_do_not_fit_are_refused(small_run, change, message):
    steps, params = small_run
    args = {"config": SMALL, "seed": 2, "steps": steps, "params": params, **change(steps, params)}
    answer = bridge_call("circuits_over_training", **args)
    assert not answer["ok"] and message in answer["error"]


def test_weights_of_another_config_are_refused_for_one_checkpoint():
    params = encode_params(init_params(TrainConfig(), 0), TrainConfig())
    assert "this config has" in bridge_call("circuits_at", config=SMALL, params=params)["error"]
    assert np.isfinite(bridge_call("circuits_at", config={}, params=params)["result"]["k_baseline"]["mean"])
