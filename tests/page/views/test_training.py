"""views/training.py: a run through the bridge in slices, its stop and its end, the recorded run, the weights'
encoding, a reader's text as tokens, and the refusals that depend on the run or the config."""

import json
import re
from dataclasses import asdict

import numpy as np
import pytest

from mha_page import bridge
from mha_page.views import training as training_views
from mha_page.views.heads import heads_view
from mha_core.detectors import evaluate
from mha_core.params_codec import encode_params
from mha_page.views.training import (WEIGHT_CHARS, decode_params, display_tokens, encode_patterns,
                                            head_roles, recorded_run, text_tokens, training_evaluate)
from mha_core.model import TrainConfig, forward, init_params

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


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


def test_a_config_whose_fields_do_not_fit_is_refused_with_the_rule():
    assert "max_period=40 exceeds vocab=32" in bridge_call("training_start", config={"max_period": 40})["error"]


def test_weights_and_heads_that_do_not_fit_the_config_are_refused():
    params = encode_params(init_params(TrainConfig(), 0), TrainConfig())
    assert "this config has" in bridge_call("training_evaluate", config={"n_heads": 1}, seed=0, params=params)["error"]
    answer = bridge_call("training_evaluate", config={}, seed=0, params=params, ablate=[[0, 5]])
    assert answer["error"] == "ablate holds [layer, head] pairs with layer < 2 and head < 2, got [0, 5]."
    assert "base64" in bridge_call("training_evaluate", config={}, seed=0, params="not base64!")["error"]


def test_a_diverging_run_ends_through_the_bridge():
    run = bridge_call("training_start", config={"lr": 1.0, "batch": 4}, seed=0)["result"]["run"]
    for _ in range(100):
        answer = bridge_call("training_advance", run=run, budget_ms=50)
        if not answer["ok"]:
            break
    assert answer["error"].startswith("Training diverged at step")
    assert bridge_call("training_advance", run=run)["error"].startswith("This training run is over")


def test_the_recorded_run_is_the_same_bytes_every_time():
    def recorded():
        return json.dumps(recorded_run(SMALL, 1), sort_keys=True, allow_nan=False)
    assert recorded() == recorded()


def test_patterns_travel_as_the_text_of_each_drawn_weight():
    """Each cell's weight to 4 decimals, layer by layer, head by head, row by row up to the query: the text the
    heatmap's cells read, and the weights it colours them by."""
    params = init_params(SMALL, 3)
    _, patterns = forward(params, np.array([display_tokens(SMALL)]), SMALL)
    text, n = encode_patterns(patterns), SMALL.seq_len
    cells = [text[i:i + WEIGHT_CHARS] for i in range(0, len(text), WEIGHT_CHARS)]
    assert len(text) == WEIGHT_CHARS * len(cells) and len(cells) == SMALL.n_layers * SMALL.n_heads * n * (n + 1) // 2
    assert all(re.fullmatch(r"[01]\.\d{4}", c) for c in cells)
    drawn = [(l, h, q, k) for l in range(SMALL.n_layers) for h in range(SMALL.n_heads) for q in range(n) for k in range(q + 1)]
    np.testing.assert_allclose([float(c) for c in cells], [patterns[l][0, h, q, k] for l, h, q, k in drawn], atol=5e-5)


def test_a_readers_text_becomes_tokens_in_order_of_first_appearance():
    ids, words = text_tokens("The cat sat. the CAT sat!", TrainConfig())
    assert words == ["The", "cat", "sat", ".", "the", "CAT", "sat", "!"] and ids == [0, 1, 2, 3, 0, 1, 2, 4]
    assert len(text_tokens("a b " * 40, TrainConfig())[0]) == 32
    with pytest.raises(ValueError, match="33 different words in its first 33; the model knows 32 tokens"):
        text_tokens(" ".join(f"w{i}" for i in range(40)), TrainConfig(seq_len=33, vocab=32))
    with pytest.raises(ValueError, match="at least 2 words"):
        text_tokens("one", TrainConfig())


def named(labels: list[str], q: int, k: int, text: str) -> str:
    """Cell (q, k)'s name, computed here from the labels: each cut to 30 characters, the last one "…"."""
    cut = [t if len(t) <= 30 else t[:29] + "…" for t in labels]
    return f"“{cut[q]}” ({q}) → “{cut[k]}” ({k}): {text}"


def test_the_heatmaps_tokens_and_cells_are_named_from_the_labels_as_the_heads_widget_names_them():
    """The built run, a reader's run and a reader's text: one label per token, and the words of each cell's name
    once per token (from[q] + to[k], then the weight's text or the masked word), the heads view's words."""
    run = recorded_run(SMALL, 1)
    symbols = training_views.SYMBOLS
    assert run["labels"] == [symbols[t] for t in run["tokens"]] and len(run["labels"]) == SMALL.seq_len
    long = "a" * 31
    params = encode_params(init_params(SMALL, 0), SMALL)
    text = training_evaluate(asdict(SMALL), 1, params, text=f"the {long} , the {long} .")
    assert text["labels"] == ["the", long, ",", "the", long, "."]
    started = bridge_call("training_start", config=asdict(SMALL), seed=2)["result"]
    bridge_call("training_stop", run=started["run"])
    for shown in (run, started, text):
        names, labels = shown["names"], shown["labels"]
        assert len(names["from"]) == len(names["to"]) == len(labels)
        n = len(labels)
        for q, k in [(0, 0), (n - 1, 1), (n - 1, n - 1)]:
            assert names["from"][q] + names["to"][k] + "0.1234" == named(labels, q, k, "0.1234")
        assert names["from"][0] + names["to"][1] + names["masked"] == named(labels, 0, 1, "masked, a later token")
    assert text["names"] == heads_view(["the", long, ",", "the", long, "."])["names"]


def test_the_display_sequence_repeats_a_block_and_heads_get_their_best_role():
    tokens = display_tokens(TrainConfig())
    period = (5 + 16) // 2
    assert training_views.display_words(TrainConfig()) == f"a test sequence that repeats a block of {period} tokens"
    assert len(tokens) == 32 and len(set(tokens[:period])) == period and tokens[period:2 * period] == tokens[:period]
    scores = {"previous_token": [[0.9, 0.1]], "induction": [[0.2, 0.3]], "duplicate_token": [[0.0, 0.0]],
              "first_token": [[0.0, 0.39]]}
    assert head_roles(scores) == [["previous_token", None]]


@pytest.mark.parametrize("call, message", [
    (lambda: training_views.training_start({"n_heads": 0}), "n_heads must be at least 1, got 0."),
    (lambda: training_views.training_start(seed=-1), "seed must be at least 0, got -1."),
    (lambda: training_views.training_advance(0), "run must be at least 1, got 0."),
    (lambda: training_views.training_advance(1, budget_ms=0), "budget_ms must be a number above 0 and at most 1000"),
    (lambda: training_views.training_stop("1"), "run must be a whole number, got '1'."),
    (lambda: training_views.training_evaluate({}, 0, ""), "params is empty."),
    (lambda: training_views.training_evaluate({}, 0, "AAAA", text=""), "text is empty."),
])
def test_a_python_caller_is_refused_as_the_browser_is(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message)


def test_a_knock_out_says_what_changes_the_losses_and_the_heads_that_read_it():
    """A knocked-out head keeps its own pattern; the readout gives the two losses and, for a head of layer 0,
    the induction scores of layer 1's heads, which read what it wrote; for a head of the last layer, that no
    pattern changes and the other heads' scores. Every number is evaluate's, computed here."""
    params = init_params(SMALL, 3)
    tokens = training_views.eval_batch(SMALL, 3)
    intact = evaluate(params, tokens, SMALL)
    for ablate in ([(0, 1)], [(1, 0)]):
        ablated = evaluate(params, tokens, SMALL, ablate)
        readout = training_evaluate(asdict(SMALL), 3, encode_params(params, SMALL), [list(h) for h in ablate])["readout"]
        assert readout.startswith(f"L{ablate[0][0]} H{ablate[0][1]} knocked out (its output zeroed). ")
        # float16 weights in transit: the numbers shown are evaluate's to the third decimal, give or take one
        shown = [float(x) for x in re.findall(r"(\d+\.\d{3})", readout)]
        losses = [intact["loss_repeat"], ablated["loss_repeat"], intact["loss_first"], ablated["loss_first"]]
        np.testing.assert_allclose(shown[:4], losses, atol=2e-3)
        layer, head = ablate[0]
        if layer == 0:
            assert "Later heads read its output" in readout
            want = [s[1][h] for h in range(2) for s in (intact["scores"]["induction"], ablated["scores"]["induction"])]
            np.testing.assert_allclose(shown[4:], want, atol=2e-3)
        else:
            assert "No later layer reads its output, so no pattern changes" in readout
            assert ablated["scores"] == intact["scores"]  # the claim itself: zeroing a head's output moves no pattern
            np.testing.assert_allclose(shown[4:], [intact["scores"]["induction"][1][1 - head]], atol=2e-3)
    assert training_evaluate(asdict(SMALL), 3, encode_params(params, SMALL))["readout"] == ""


def test_the_charts_axes_reach_the_highest_loss_in_whole_nats_and_clip_a_diverging_run():
    uniform = np.log(32)
    history = [{"loss_first": 3.5, "loss_repeat": 3.4}, {"loss_first": 4.6, "loss_repeat": 0.1}]
    axes = training_views.chart_axes(history, TrainConfig())
    assert [t["text"] for t in axes["loss"]["ticks"]] == ["0", "1", "2", "3", "4", "5"] and axes["loss"]["top"] == 5
    assert axes["loss"]["level"]["value"] == pytest.approx(uniform) and axes["loss"]["level"]["text"] == f"{uniform:.4f}"
    assert axes["loss"]["level"]["label"] == f"uniform guess: ln 32 = {uniform:.2f}"
    diverged = history + [{"loss_first": 80.0, "loss_repeat": float("nan")}]
    assert training_views.chart_axes(diverged, TrainConfig())["loss"]["top"] == int(np.ceil(2 * uniform))
    assert training_views.chart_axes(history[:1], TrainConfig())["loss"]["top"] == 4  # a uniform guess's 3.47 fits
    assert [t["value"] for t in axes["scores"]["ticks"]] == pytest.approx([0, 0.2, 0.4, 0.6, 0.8, 1.0])


def test_the_charts_lines_pass_through_each_logged_value_and_the_reference_run_is_drawn_beside():
    """A point per logged step: x from the box's left (step 0) to its right (the schedule's last step), y from its
    bottom (0) to its top (the axis's top); the ticks past the axis are hidden, the lines past the run empty."""
    box, total = training_views.BOX, training_views.SCHEDULE["steps"]
    scores = {kind: [[0.5, 0.25], [0.75, 1.0]] for kind in ("previous_token", "induction")}
    history = [{"step": s, "loss_first": 3.0, "loss_repeat": r, "scores": scores} for s, r in ((0, 3.2), (300, 1.6))]
    reference = [2.0] * (total // training_views.SCHEDULE["log_every"] + 1)
    slots = training_views.chart_slots(history, TrainConfig(), reference)
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
    shown = [slots[f"loss-tick-{i}"]["text"] for i in range(training_views.MAX_TICKS["loss"])
             if slots[f"loss-tick-{i}"]["attrs"]["display"] != "none"]
    assert shown == ["0", "1", "2", "3", "4"]
    legend = [row["outputs"]["legend-label"] for row in slots["loss-legend"]["rows"]]
    assert legend == ["loss on first occurrences", "loss on repeats", "recorded run (2 layers), loss on repeats",
                      "uniform guess (3.47 nats)"]
    assert training_views.marker(300)["attrs"]["x1"] == at(300, 0, 1)[0]
    refused = bridge_call("training_start", seed=1, reference=[1.0] * (len(reference) + 1))
    assert not refused["ok"] and "reference" in refused["error"]


def test_each_heads_caption_names_it_the_step_the_heads_knocked_out_and_the_sequence():
    config = TrainConfig(n_layers=2, n_heads=2, min_period=8, max_period=8)
    plain = training_views.captions(config, 270)
    assert plain[1][0] == ("Layer 1, head 0 at step 270: each row is a query, each column a key, on a test sequence "
                           "that repeats a block of 8 tokens.")
    knocked = training_views.captions(config, 30, [(1, 1), (0, 1)], "your text")
    assert knocked[0][1] == ("Layer 0, head 1 at step 30 (knocked out: L0 H1, L1 H1): each row is a query, each "
                             "column a key, on your text.")
    params = init_params(SMALL, 1)
    answer = training_evaluate(asdict(SMALL), 3, encode_params(params, SMALL), [[0, 1]], "the cat. the cat.", step=60)
    assert answer["captions"][1][1] == ("Layer 1, head 1 at step 60 (knocked out: L0 H1): each row is a query, "
                                        "each column a key, on your text.")


def test_a_checkpoints_view_names_the_heads_with_a_role_and_the_best_of_the_rest():
    scores = {"previous_token": [[0.312, 0.05], [0.1, 0.2]], "induction": [[0.0, 0.01], [0.91, 0.4]],
              "duplicate_token": [[0.0, 0.0], [0.0, 0.0]], "first_token": [[0.2, 0.0], [0.0, 0.0]]}
    roles = head_roles(scores)
    assert roles == [[None, None], ["induction", "induction"]]
    entry = {"step": 270, "loss": 1.0, "loss_first": 3.9, "loss_repeat": 0.5432, "scores": scores}
    out = training_views.checkpoint_outputs(entry, roles)
    assert out["summary"] == ("At step 270, L1 H0 is an induction head (score 0.910); L1 H1 is an induction head "
                              "(score 0.400). The highest score of the other heads: L0 H0's previous-token score, 0.312.")
    assert out["step"] == {"text": "270", "value": "270"} and out["loss"] == {"text": "0.543", "value": "0.543"}
    grid = out["heads"]["rows"]  # a row per layer, in it a row per head
    assert grid[1]["rows"][0] == {"data": {"layer": 1, "head": 0, "score-previous-token": "0.100", "score-induction": "0.910",
                                           "role": "induction"},
                                  "outputs": {"name": "L1 H0", "prev": "0.100", "induction": "0.910", "role": "induction"}}
    assert grid[0]["rows"][1]["outputs"]["role"] == "no clear role" and grid[0]["rows"][1]["data"]["role"] == ""
    none = [[None, None], [None, None]]
    assert training_views.summary(none, scores, 10) == (
        f"At step 10 no head has a clear role yet: every detector score is below {training_views.ROLE_MIN}. "
        "The highest score of any head: L1 H0's induction score, 0.910.")


def test_a_run_from_the_recorded_seed_says_so_and_a_finished_run_its_time():
    started = bridge_call("training_start", config={"batch": 2}, seed=training_views.RECORDED_SEED)["result"]
    assert started["outputs"]["run"] == "Training a fresh model (seed 0, the recorded run's): step 0 of 600…"
    trainer = training_views.RUNS[started["run"]]
    trainer.step = 600  # as if trained: the status a finished run gets
    out = training_views.run_outputs(started["run"], trainer, done=True)
    assert out["run"] == f"Shown: your run (seed 0, the recorded run's), 600 steps in {out['elapsed']}."
    training_views.training_stop(started["run"])


def test_the_charts_draw_previous_token_scores_before_the_last_layer_and_induction_in_it():
    labels = [line["label"] for line in training_views.chart_axes([], TrainConfig())["scores"]["lines"]]
    assert labels == ["L0 H0 previous-token", "L0 H1 previous-token", "L1 H0 induction", "L1 H1 induction"]
    one = training_views.chart_axes([], TrainConfig(n_layers=1, n_heads=1))["scores"]["lines"]
    assert [line["label"] for line in one] == ["L0 H0 previous-token", "L0 H0 induction"]
    assert training_views.reference_label(TrainConfig(n_layers=1)) == "recorded run (1 layer), loss on repeats"


def test_each_head_is_named_and_the_x_axis_runs_over_the_schedule():
    config = TrainConfig(n_layers=2, n_heads=3)
    titles = training_views.head_titles(config)
    assert [[t["name"] for t in row] for row in titles] == [["L0 H0", "L0 H1", "L0 H2"], ["L1 H0", "L1 H1", "L1 H2"]]
    assert titles[1][2]["title"] == "Layer 1, head 2"
    assert training_views.chart_axes([], config)["steps"] == {"start": "0", "end": "600", "label": "training step"}


def test_a_stopped_run_says_where_it_stopped_for_a_reader_who_left():
    started = training_views.training_start(seed=7)
    stopped = training_views.training_stop(started["run"])
    assert stopped["left"] == ("Your run (seed 7) stopped at step 0 when you left this page. Shown: the run trained "
                               "when this page was built (seed 0).")
    assert training_views.training_stop(started["run"]) == {"stopped": False}


def test_block_lengths_out_of_order_are_refused_in_the_fields_words():
    refused = bridge_call("training_start", config={"min_period": 20, "max_period": 3}, seed=1)
    assert refused == {"ok": False, "refused": True,
                       "error": "The shortest block length (20) must not be larger than the longest (3)."}


def test_the_widget_selects_the_first_induction_head_and_knocks_out_the_best_outside_layer_0():
    run = {"config": {"n_layers": 2}, "checkpoints": [{"roles": [[None, "induction"], ["induction", "induction"]]}],
           "history": [{"scores": {"induction": [[0.9, 0.8], [0.5, 0.7]]}}]}
    assert training_views.shown_heads(run) == {"selected": [0, 1], "knockout": [1, 1]}
    one = {"config": {"n_layers": 1}, "checkpoints": [{"roles": [[None, None]]}],
           "history": [{"scores": {"induction": [[0.1, 0.3]]}}]}
    assert training_views.shown_heads(one) == {"selected": [0, 0], "knockout": [0, 1]}
