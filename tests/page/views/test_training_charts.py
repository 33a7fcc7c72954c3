"""views/training_charts.py: the charts' axes, lines, legends and marker as slots."""

import json

import numpy as np
import pytest

from mha_page import bridge
from mha_page.views import training_charts, training_words
from mha_page.views.training_schedule import SCHEDULE
from mha_core.model import TrainConfig


def bridge_call(fn, **args):
    return json.loads(bridge.call(fn, json.dumps(args)))


def test_the_charts_axes_reach_the_highest_loss_in_whole_nats_and_clip_a_diverging_run():
    uniform = np.log(32)
    history = [{"loss_first": 3.5, "loss_repeat": 3.4}, {"loss_first": 4.6, "loss_repeat": 0.1}]
    axes = training_charts.chart_axes(history, TrainConfig())
    assert [t["text"] for t in axes["loss"]["ticks"]] == ["0", "1", "2", "3", "4", "5"] and axes["loss"]["top"] == 5
    assert axes["loss"]["level"]["value"] == pytest.approx(uniform) and axes["loss"]["level"]["text"] == f"{uniform:.4f}"
    assert axes["loss"]["level"]["label"] == f"uniform guess: ln 32 = {uniform:.2f}"
    diverged = history + [{"loss_first": 80.0, "loss_repeat": float("nan")}]
    assert training_charts.chart_axes(diverged, TrainConfig())["loss"]["top"] == int(np.ceil(2 * uniform))
    assert training_charts.chart_axes(history[:1], TrainConfig())["loss"]["top"] == 4  # a uniform guess's 3.47 fits
    assert [t["value"] for t in axes["scores"]["ticks"]] == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])


def test_the_charts_lines_pass_through_each_logged_value_and_the_reference_run_is_drawn_beside():
    """A point per logged step: x from the box's left (step 0) to its right (the schedule's last step), y from its
    bottom (0) to its top (the axis's top); the ticks past the axis are hidden, the lines past the run empty."""
    box, total = training_charts.BOX, SCHEDULE["steps"]
    scores = {kind: [[0.5, 0.25], [0.75, 1.0]] for kind in ("previous_token", "induction")}
    history = [{"step": s, "loss_first": 3.0, "loss_repeat": r, "scores": scores} for s, r in ((0, 3.2), (300, 1.6))]
    reference = [2.0] * (total // SCHEDULE["log_every"] + 1)
    slots = training_charts.chart_slots(history, TrainConfig(), reference)
    top = 4  # a uniform guess's 3.47 rounded up

    def points(name):
        return [tuple(map(float, p.split(","))) for p in slots[name]["attrs"]["points"].split()]

    def at(step, value, top):
        return (pytest.approx(box["left"] + (box["right"] - box["left"]) * step / total, abs=0.05),
                pytest.approx(box["bottom"] - (box["bottom"] - box["top"]) * value / top, abs=0.05))

    lines = {slots[f"loss-line-{j}"]["attrs"]["class"]: points(f"loss-line-{j}") for j in range(3)}
    assert lines["repeat"] == [at(0, 3.2, top), at(300, 1.6, top)] and lines["first"][1] == at(300, 3.0, top)
    assert len(lines["reference"]) == len(reference) and lines["reference"][-1] == at(total, 2.0, top)
    assert points("scores-line-3") == [at(0, 1.0, 1), at(300, 1.0, 1)]  # L1 H1's induction score
    assert slots["scores-line-4"]["attrs"]["points"] == ""  # two layers of two heads: four lines
    shown = [slots[f"loss-tick-{i}"]["text"] for i in range(training_charts.MAX_TICKS["loss"])
             if slots[f"loss-tick-{i}"]["attrs"]["display"] != "none"]
    assert shown == ["0", "1", "2", "3", "4"]
    legend = [row["outputs"]["legend-label"] for row in slots["loss-legend"]["rows"]]
    assert legend == ["loss on first occurrences", "loss on repeats", "uniform guess (3.47 nats)",
                      "recorded run (2 layers), loss on repeats"]
    assert [row["data"]["unseen"] for row in slots["loss-legend"]["rows"]] == [None] * 4
    # a run drawn alone keeps the recorded run's row in its legend, unseen: the chart is as tall when it comes
    alone = training_charts.chart_slots(history, TrainConfig())["loss-legend"]["rows"]
    assert [(row["outputs"]["legend-label"], row["data"]["unseen"]) for row in alone] == \
        [(label, None) for label in legend[:3]] + [(legend[3], "")]
    assert training_charts.marker(300)["attrs"]["x1"] == at(300, 0, 1)[0]
    refused = bridge_call("training_start", seed=1, reference=[1.0] * (len(reference) + 1))
    assert not refused["ok"] and "reference" in refused["error"]


def test_the_charts_draw_previous_token_scores_before_the_last_layer_and_induction_in_it():
    labels = [line["label"] for line in training_charts.chart_axes([], TrainConfig())["scores"]["lines"]]
    assert labels == ["L0 H0 previous-token", "L0 H1 previous-token", "L1 H0 induction", "L1 H1 induction"]
    one = training_charts.chart_axes([], TrainConfig(n_layers=1, n_heads=1))["scores"]["lines"]
    assert [line["label"] for line in one] == ["L0 H0 previous-token", "L0 H0 induction"]
    assert training_words.reference_label(TrainConfig(n_layers=1)) == "recorded run (1 layer), loss on repeats"


def test_each_head_is_named_and_the_x_axis_runs_over_the_schedule():
    config = TrainConfig(n_layers=2, n_heads=3)
    titles = training_words.head_titles(config)
    assert [[t["name"] for t in row] for row in titles] == [["L0 H0", "L0 H1", "L0 H2"], ["L1 H0", "L1 H1", "L1 H2"]]
    assert titles[1][2]["title"] == "Layer 1, head 2"
    assert training_charts.chart_axes([], config)["steps"] == {"start": "0", "end": "600", "label": "training step"}
