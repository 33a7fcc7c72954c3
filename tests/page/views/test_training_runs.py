"""views/training_runs.py: a reader's run through the bridge in slices, its stop and its end, a diverging run, the
status it says, and the refusal of block lengths out of order in the fields' words."""

import json
import re
from dataclasses import asdict

import pytest

from mha_page import bridge
from mha_page.views import training_runs
from mha_core.model import RECORDED_SEED, TrainConfig


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
    assert run["outputs"]["run"] == "Training a fresh model (seed 5): step 0 of 600…"
    assert answer["result"]["outputs"]["run"] == f"Training a fresh model (seed 5): step {steps} of 600…"
    assert answer["result"]["outputs"]["progress"] == {"text": f"{steps} of 600 steps", "attrs": {"value": steps}}
    assert re.fullmatch(r"\d+\.\d s", answer["result"]["outputs"]["elapsed"])
    stopped = bridge_call("training_stop", run=run["run"])
    assert stopped == {"ok": True, "result": {"stopped": True, "outputs": {
        "run": f"Shown: your run (seed 5), stopped at step {steps} (its last checkpoint: step {steps // 30 * 30})."},
        "left": f"Your run (seed 5) stopped at step {steps} when you left this page. "
                "Shown: the run trained when this page was built (seed 0)."}}
    assert bridge_call("training_stop", run=run["run"])["result"] == {"stopped": False}
    over = bridge_call("training_advance", run=run["run"])
    assert not over["ok"] and over["error"].startswith("This training run is over")  # a sentence, for the reader
    # a checkpoint's weights, sent back, give its recorded numbers (float16 weights: close, not equal)
    last = run["checkpoints"][-1]
    measured = bridge_call("training_evaluate", config=run["config"], seed=5, params=last["params"])["result"]
    recorded = next(h for h in run["history"] if h["step"] == last["step"])
    assert measured["intact"]["loss"] == pytest.approx(recorded["loss"], abs=5e-3)
    assert measured["ablated"] == measured["intact"]


def test_a_diverging_run_ends_through_the_bridge():
    run = bridge_call("training_start", config={"lr": 1.0, "batch": 4}, seed=0)["result"]["run"]
    for _ in range(100):
        answer = bridge_call("training_advance", run=run, budget_ms=50)
        if not answer["ok"]:
            break
    assert answer["error"].startswith("Training diverged at step")
    assert bridge_call("training_advance", run=run)["error"].startswith("This training run is over")


def test_a_run_from_the_recorded_seed_says_so_and_a_finished_run_its_time():
    started = bridge_call("training_start", config={"batch": 2}, seed=RECORDED_SEED)["result"]
    assert started["outputs"]["run"] == "Training a fresh model (seed 0, the recorded run's): step 0 of 600…"
    trainer = training_runs.RUNS[started["run"]]
    trainer.step = 600  # as if trained: the status a finished run gets
    out = training_runs.run_outputs(started["run"], trainer, done=True)
    assert out["run"] == f"Shown: your run (seed 0, the recorded run's), 600 steps in {out['elapsed']}."
    training_runs.training_stop(started["run"])


def test_a_stopped_run_says_where_it_stopped_for_a_reader_who_left():
    started = training_runs.training_start(seed=7)
    stopped = training_runs.training_stop(started["run"])
    assert stopped["left"] == ("Your run (seed 7) stopped at step 0 when you left this page. Shown: the run trained "
                               "when this page was built (seed 0).")
    assert training_runs.training_stop(started["run"]) == {"stopped": False}


def test_block_lengths_out_of_order_are_refused_in_the_fields_words():
    refused = bridge_call("training_start", config={"min_period": 20, "max_period": 3}, seed=1)
    assert refused == {"ok": False, "refused": True,
                       "error": "The shortest block length (20) must not be larger than the longest (3)."}
