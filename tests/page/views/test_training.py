"""views/training.py: the recorded run, a checkpoint's view, a reader's text as tokens, a knock-out measured, and the
refusals that depend on the run or the config."""

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
from mha_page.views.training import display_tokens, recorded_run, text_tokens, training_evaluate
from mha_page.views import training_runs, training_words
from mha_page.views.training_words import head_roles
from mha_core.model import TrainConfig, init_params

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


def bridge_call(fn, **args):
    return json.loads(bridge.call(fn, json.dumps(args)))


def test_a_config_whose_fields_do_not_fit_is_refused_with_the_rule():
    assert "max_period=40 exceeds vocab=32" in bridge_call("training_start", config={"max_period": 40})["error"]


def test_weights_and_heads_that_do_not_fit_the_config_are_refused():
    params = encode_params(init_params(TrainConfig(), 0), TrainConfig())
    assert "this config has" in bridge_call("training_evaluate", config={"n_heads": 1}, seed=0, params=params)["error"]
    answer = bridge_call("training_evaluate", config={}, seed=0, params=params, ablate=[[0, 5]])
    assert answer["error"] == "ablate holds [layer, head] pairs with layer < 2 and head < 2, got [0, 5]."
    assert "base64" in bridge_call("training_evaluate", config={}, seed=0, params="not base64!")["error"]


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
    assert training_words.display_words(TrainConfig()) == f"a test sequence that repeats a block of {period} tokens"
    assert len(tokens) == 32 and len(set(tokens[:period])) == period and tokens[period:2 * period] == tokens[:period]
    scores = {"previous_token": [[0.9, 0.1]], "induction": [[0.2, 0.3]], "duplicate_token": [[0.0, 0.0]],
              "first_token": [[0.0, 0.39]]}
    assert head_roles(scores) == [["previous_token", None]]


@pytest.mark.parametrize("call, message", [
    (lambda: training_runs.training_start({"n_heads": 0}), "n_heads must be at least 1, got 0."),
    (lambda: training_runs.training_start(seed=-1), "seed must be at least 0, got -1."),
    (lambda: training_runs.training_advance(0), "run must be at least 1, got 0."),
    (lambda: training_runs.training_advance(1, budget_ms=0), "budget_ms must be a number above 0 and at most 1000"),
    (lambda: training_runs.training_stop("1"), "run must be a whole number, got '1'."),
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
    assert training_words.summary(none, scores, 10) == (
        f"At step 10 no head has a clear role yet: every detector score is below {training_words.ROLE_MIN}. "
        "The highest score of any head: L1 H0's induction score, 0.910.")


def test_the_widget_selects_the_first_induction_head_and_knocks_out_the_best_outside_layer_0():
    run = {"config": {"n_layers": 2}, "checkpoints": [{"roles": [[None, "induction"], ["induction", "induction"]]}],
           "history": [{"scores": {"induction": [[0.9, 0.8], [0.5, 0.7]]}}]}
    assert training_views.shown_heads(run) == {"selected": [0, 1], "knockout": [1, 1]}
    one = {"config": {"n_layers": 1}, "checkpoints": [{"roles": [[None, None]]}],
           "history": [{"scores": {"induction": [[0.1, 0.3]]}}]}
    assert training_views.shown_heads(one) == {"selected": [0, 0], "knockout": [0, 1]}
