"""The circuits view: on the run the page ships, every number it shows at every step is mha_core.circuits' (the
contract's scores unrounded, each heatmap's pixels the circuit's own levels), every slot the template renders
is filled and named in words; nonsense is refused naming the argument. The reader's own run, asked for through the
bridge as the widget asks, shows mha_core.circuits' numbers too, and a run of another shape is declined in words."""

import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from mha_core import circuits
from mha_page import bridge
from mha_core.training import eval_batch
from mha_page.views.training import decode_params, display_tokens, recorded_run, schedule_trainer
from mha_page.views.training import run_view as training_run_view
from mha_core.detectors import evaluate
from mha_core.model import TrainConfig
from mha_page.views import decimal
from mha_page.views.circuits import circuits_run_view, circuits_view, kinds, png
from tests.helpers import circuits_expected, png_indices
from widgets.training.run import SEED


@pytest.fixture(scope="module")
def shipped():
    """(the run the page ships, its circuits view)."""
    with threadpool_limits(1):
        run = recorded_run(TrainConfig(), SEED)
    prev = run["checkpoints"][-1]["roles"][0].index("previous_token")
    view = circuits_view(run["config"], run["seed"], [c["step"] for c in run["checkpoints"]],
                         [c["params"] for c in run["checkpoints"]], prev)
    return run, view


def test_one_view_per_recorded_step(shipped):
    run, view = shipped
    steps = [c["step"] for c in run["checkpoints"]]
    assert [v["data"]["step"] for v in view["views"]] == [str(s) for s in steps]
    fixed = view["fixed"]
    assert (fixed["first"], fixed["last"], fixed["every"]) == (steps[0], steps[-1], steps[1] - steps[0])
    assert fixed["prev_name"] == "L0 H0" and run["checkpoints"][-1]["roles"][0][0] == "previous_token"


@pytest.mark.parametrize("index", [0, 8, 9, 10, -1])  # before, during and after the phase change
def test_each_number_shown_is_mha_core_s(shipped, index):
    run, view = shipped
    step = run["checkpoints"][index]["step"]
    out = next(v for v in view["views"] if v["data"]["step"] == str(step))["outputs"]
    want = circuits_expected(run, step)
    for (a, b), score in want["k"].items():
        slot = out[f"k-{a}-{b}"]["outputs"]["k-composition"]
        assert float(slot["value"]) == score and slot["text"] == decimal(score)
    for b, score in want["ov"].items():
        ov = out[f"ov-{b}"]["outputs"]
        assert float(ov["ov-copying"]["value"]) == score and ov["ov-copying"]["text"] == decimal(score)
        assert ov["ov-hits"] == f"{round(score * 32)} of 32 tokens"
        assert np.array_equal(png_indices(ov["ov-map"]["vars"]["--map"]), want["ov_levels"][b])
    assert np.array_equal(png_indices(out["qk-map"]["vars"]["--map"]), want["qk_levels"])
    assert [float(r["value"]) for r in out["positions"]["rows"]] == pytest.approx(want["positions"], abs=5e-4)
    config = TrainConfig(**run["config"])
    params = decode_params(run["checkpoints"][index]["params"], config)
    loss = evaluate(params, eval_batch(config, run["seed"]), config)["loss_repeat"]
    assert float(out["loss-repeat"]["value"]) == pytest.approx(loss, rel=1e-12)
    assert out["step"] == {"text": f"Step {step}", "value": str(step)}


def test_every_slot_is_filled_and_every_picture_named_in_words(shipped):
    run, view = shipped
    names = {"step", "marker", "loss-repeat", "qk-map", "positions", "summary",
             *(f"ov-{b}" for b in range(2)), *(f"k-{a}-{b}" for a in range(2) for b in range(2))}
    for v in view["views"]:
        out, step = v["outputs"], v["data"]["step"]
        assert set(out) == names
        for b in range(2):
            label = out[f"ov-{b}"]["outputs"]["ov-map"]["label"]
            assert label.startswith(f"Full OV circuit of L1 H{b} at step {step}, 32 by 32") and "Colours scaled to ±" in label
        assert out["qk-map"]["label"].startswith(f"Positional QK circuit of L0 H0 at step {step}")
        assert out["positions"]["label"].startswith(f"Loss at each position at step {step}: ")
        assert "second copy's first token" in out["positions"]["label"]
        assert len(out["positions"]["rows"]) == run["config"]["seq_len"] - 1
        assert out["summary"].startswith(f"Step {step}: K-composition of L0 H0 into L1 H0 ")
        assert out["loss-repeat"]["text"] in out["summary"]
    fixed = view["fixed"]
    assert [p["name"] for p in fixed["pairs"]] == ["L0 H0 → L1 H0", "L0 H0 → L1 H1", "L0 H1 → L1 H0", "L0 H1 → L1 H1"]
    assert all(len(p["points"].split()) == len(run["checkpoints"]) for p in fixed["pairs"])
    assert fixed["uniform"]["text"] == "3.47" and fixed["baseline"]["mean"] == "0.18"


def test_the_marker_and_the_lines_share_one_x_axis(shipped):
    run, view = shipped
    chart = view["fixed"]["chart"]
    xs = [float(point.split(",")[0]) for point in view["fixed"]["pairs"][0]["points"].split()]
    assert [chart["left"] + v["outputs"]["marker"]["vars"]["--x"] for v in view["views"]] == pytest.approx(xs, abs=0.11)


def test_kinds_mark_the_first_copy_the_second_copys_first_token_and_the_repeats():
    assert kinds(12, 5) == ["first"] * 4 + ["start"] + ["repeat"] * 7
    assert kinds(31, 10).count("start") == 1 and kinds(31, 10).index("start") == 9


def test_a_heatmap_is_a_png_that_fades_to_clear_at_zero():
    indices = np.array([[0, 16, 32], [16, 16, 16]], np.uint8)
    assert np.array_equal(png_indices("data:image/png;base64," + __import__("base64").b64encode(png(indices)).decode()),
                          indices)


@pytest.mark.parametrize("changes, message", [
    ({"prev_head": 2}, "prev_head must be a layer-0 head, 0 to 1"),
    ({"prev_head": True}, "prev_head must be a layer-0 head"),
    ({"config": {"n_layers": 1}}, "config must have 2 layers or more"),
])
def test_nonsense_is_refused_naming_the_argument(changes, message):
    args = {"config": {}, "seed": 0, "steps": [0], "params": ["AAAA"], "prev_head": 0} | changes
    with pytest.raises(ValueError, match=message):
        circuits_view(**args)


# ---------------------------------------------------------------- the reader's run, as the browser asks for it

def ask(fn: str, **args) -> dict:
    """fn's answer through the bridge's door, as the widget's call gets it (raises on an error answer)."""
    answer = json.loads(bridge.call(fn, json.dumps(args)))
    assert answer["ok"], answer.get("error")
    return answer["result"]


def short_run(config: TrainConfig, seed: int, steps: int) -> dict:
    """A run trained here on the widget's schedule for steps steps, as the training widget holds it."""
    with threadpool_limits(1):
        trainer = schedule_trainer(config, seed)
        trainer.run(steps)
        run = training_run_view(trainer)
    return {"config": run["config"], "seed": seed, "steps": [c["step"] for c in run["checkpoints"]],
            "params": [c["params"] for c in run["checkpoints"]]}


@pytest.fixture(scope="module")
def readers():
    """(a short run of the shipped model's shape with another seed, its circuits view through the bridge)."""
    run = short_run(TrainConfig(), 11, 120)
    return run, ask("circuits_run_view", **run)


def test_the_readers_run_shows_mha_core_s_circuits_at_each_of_its_steps(readers):
    run, view = readers
    config = TrainConfig(**run["config"])
    assert [v["data"]["step"] for v in view["views"]] == [str(s) for s in run["steps"]] == ["0", "30", "60", "90", "120"]
    assert view["run"]["data"] == {"first": 0, "last": 120, "every": 30}
    last = decode_params(run["params"][-1], config)
    prev_scores = evaluate(last, eval_batch(config, run["seed"]), config)["scores"]["previous_token"][0]
    prev = int(np.argmax(prev_scores))
    assert view["run"]["outputs"]["prev-name"] == f"L0 H{prev}"
    assert view["run"]["outputs"]["from-%d" % prev].endswith("(previous-token)")
    assert f"{prev_scores[prev]:.3f}" in view["run"]["outputs"]["run-note"]["text"]
    assert view["run"]["outputs"]["run-label"] == "Your run (seed 11), at a checkpoint (every 30 steps)"
    for step, text, v in zip(run["steps"], run["params"], view["views"]):
        params = decode_params(text, config)
        k = circuits.k_composition(params, config)
        copying = circuits.copying_scores(circuits.full_ov_circuits(params, config, 1))
        out = v["outputs"]
        for a in range(2):
            for b in range(2):
                assert float(out[f"k-{a}-{b}"]["outputs"]["k-composition"]["value"]) == k[0, a, 1, b]
        for b in range(2):
            assert float(out[f"ov-{b}"]["outputs"]["ov-copying"]["value"]) == copying[b]
        positions = circuits.position_losses(params, display_tokens(config), config)
        assert [float(r["value"]) for r in out["positions"]["rows"]] == pytest.approx(positions, abs=5e-4)
        assert out["step"]["value"] == str(step)
    lines = {name for name, slot in view["run"]["outputs"].items()
             if isinstance(slot, dict) and "points" in slot.get("attrs", {})}
    assert lines == {"line-0-0", "line-0-1", "line-1-0", "line-1-1", "loss-line-repeat", "loss-line-first"}


def test_the_run_view_of_the_shipped_run_fills_the_slots_its_template_renders(shipped):
    run, _ = shipped
    view = circuits_view(run["config"], run["seed"], [c["step"] for c in run["checkpoints"]],
                         [c["params"] for c in run["checkpoints"]], 0)["run"]
    out = view["outputs"]
    assert out["run-label"] == "The recorded run, at a checkpoint (every 30 steps)" and out["run-note"]["hidden"]
    assert (out["from-0"], out["from-1"], out["prev-name"]) == ("L0 H0 (previous-token)", "L0 H1", "L0 H0")
    assert [out[f"loss-tick-{i}"] for i in range(6)] == ["0", "1", "2", "3", "4", "5"]
    assert [r["data"]["kind"] for r in out["positions"]["rows"]] == kinds(31, int(out["period"]))


@pytest.mark.parametrize("config, words", [
    (TrainConfig(n_layers=1), "Your run has one layer: there is no K-composition"),
    (TrainConfig(n_heads=3), "Your run has 2 layers of 3 heads; this view draws 2 layers of 2"),
])
def test_a_run_of_another_shape_is_declined_in_words(config, words):
    view = ask("circuits_run_view", **short_run(config, 3, 30))
    assert view["views"] == [] and view["fixed"] is None
    assert view["run"]["outputs"]["run-note"]["text"].startswith(words)


@pytest.mark.parametrize("changes, message", [
    (lambda r: {"steps": [0, 30, 90]}, "steps must be 2 or more evenly spaced checkpoints from step 0"),
    (lambda r: {"steps": [0], "params": r["params"][:1]}, "steps must be 2 or more evenly spaced"),
    (lambda r: {"params": r["params"][:2]}, "steps and params must be as long as each other"),
    (lambda r: {"seed": -1}, "seed"),
])
def test_the_readers_run_view_refuses_nonsense_naming_the_argument(readers, changes, message):
    run, _ = readers
    args = {**run, "steps": run["steps"][:3], "params": run["params"][:3]}
    args |= changes(args)
    answer = json.loads(bridge.call("circuits_run_view", json.dumps(args)))
    assert not answer["ok"] and message in answer["error"]
    with pytest.raises(ValueError, match=message):
        circuits_run_view(**args)
