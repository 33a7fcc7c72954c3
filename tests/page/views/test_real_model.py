"""The real model's view: each head's four scores as the numbers given (4 decimals; where no query counts, 0,
said as none), its cell's colour, its label; the strongest heads and the note on a cut text, counted here from
the definitions; refusals. (The tokens as the reader reads them, against transformers: llama/test_tokenizer.py.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

from mha_page.views import cell_names
from mha_page.views.real_model import (KIND_NAMES, KINDS, MAX_TOKENS, N_HEADS, N_LAYERS, load_text, progress_text,
                                       real_model_view, weight_texts)

RNG = np.random.default_rng(5)
SCORES = {kind: RNG.uniform(0, 1, (N_LAYERS, N_HEADS)) for kind in KINDS}
SCORES["induction"][:2] = np.nan  # a head with no counted query
TOKENS = ["The", " cat", " sat", "\n", " on"]


def test_each_head_carries_its_four_scores_its_colour_and_its_words():
    out = real_model_view(TOKENS, SCORES, len(TOKENS))["outputs"]
    heads = [name for name in out if name.startswith("head-")]
    assert len(heads) == 270
    for layer in range(N_LAYERS):
        for head in range(N_HEADS):
            slot = out[f"head-{layer}-{head}"]
            for kind in KINDS:
                value = SCORES[kind][layer, head]
                shown = slot["data"][f"score-{KIND_NAMES[kind]}"]
                var = slot["vars"][f"--{KIND_NAMES[kind]}"]
                if math.isnan(value):
                    assert shown == "0.0000" and var == 0 and f"{KIND_NAMES[kind]} none" in slot["label"]
                else:
                    assert float(shown) == pytest.approx(value, abs=5e-5) and var == pytest.approx(value, abs=5e-4)
                    assert f"{KIND_NAMES[kind]} {value:.2f}" in slot["label"]
            assert slot["label"].startswith(f"Layer {layer}, head {head} (key/value group {head // 3}):")


def test_the_strongest_head_of_each_kind_is_named():
    best = real_model_view(TOKENS, SCORES, len(TOKENS))["outputs"]["best"]
    for kind in KINDS:
        values = np.where(np.isnan(SCORES[kind]), -1, SCORES[kind])
        layer, head = np.unravel_index(np.argmax(values), values.shape)
        assert f"{KIND_NAMES[kind]} L{layer} H{head} ({values[layer, head]:.2f})" in best
    none = real_model_view(TOKENS, {**SCORES, "induction": np.full((30, 9), np.nan)}, 5)["outputs"]["best"]
    assert "induction: none (no token of this text repeats)" in none


def test_tokens_and_the_note_on_a_cut_text():
    view = real_model_view(TOKENS, SCORES, 5)
    assert view["outputs"]["tokens"]["rows"] == [{"text": t, "data": {"token-index": i}} for i, t in enumerate(TOKENS)]
    assert view["data"] == {"n-tokens": "5", "cut": "false"} and view["outputs"]["note"]["hidden"] is True
    cut = real_model_view(TOKENS, SCORES, 300)
    assert cut["data"]["cut"] == "true" and cut["outputs"]["note"]["hidden"] is False
    assert "300 tokens" in cut["outputs"]["note"]["text"] and "first 5" in cut["outputs"]["note"]["text"]


def test_a_pattern_s_axes_show_each_token_a_newline_as_its_sign_and_name_its_cells_so():
    pattern = real_model_view(TOKENS, SCORES, len(TOKENS))["pattern"]
    assert pattern["labels"] == ["The", " cat", " sat", "↵", " on"]
    assert pattern["names"] == cell_names(pattern["labels"])
    assert pattern["names"]["from"][3] + pattern["names"]["to"][1] == "“↵” (3) → “ cat” (1): "


def test_a_pattern_s_weights_progress_and_the_model_s_size_in_words():
    weights = weight_texts()  # a byte b is the weight b / 255
    assert len(weights) == 256 and weights[0] == "0.00" and weights[255] == "1.00"
    assert all(abs(float(text) - b / 255) <= 0.005 for b, text in enumerate(weights))
    assert progress_text(0, 1) == "Layer 1 of 30, 1 token\u2026"
    assert progress_text(29, 1234) == "Layer 30 of 30, 1,234 tokens\u2026"
    assert load_text(98_400_000) == "Load the model (98 MB)"


@pytest.mark.parametrize("change, message", [
    ({"scores": {k: v for k, v in SCORES.items() if k != "induction"}}, "scores must hold"),
    ({"scores": {**SCORES, "induction": np.zeros((29, 9))}}, "scores must hold"),
    ({"scores": [1, 2]}, "scores must be a dict"),
    ({"tokens": ["a"] * (MAX_TOKENS + 1), "n_given": 200}, f"tokens must hold at most {MAX_TOKENS} items"),
    ({"tokens": [1]}, r"tokens\[0\] must be a string"),
    ({"n_given": 2}, "n_given must be at least the 5 tokens shown"),
    ({"n_given": 0}, "n_given must be at least 1"),
])
def test_nonsense_is_refused_with_the_argument_named(change, message):
    args = {"tokens": TOKENS, "scores": SCORES, "n_given": 5} | change
    with pytest.raises(ValueError, match=message):
        real_model_view(**args)


# ---------------------------------------------------------------- the laboratory's slots

from mha_core.llama.lab import parse_heads  # noqa: E402
from mha_page.views.real_model import head_sets, knockout_view, position_view  # noqa: E402

LOSSES = [None, 3.25, 0.5, 9.0, 1.75]


def at(position: int, **extra) -> dict:
    heads = RNG.normal(0, 1, (N_LAYERS, N_HEADS))
    return {"position": position, "target": {"id": 7, "text": " mat"},
            "predictions": {"ids": [7, 8, 9, 10, 11], "tokens": [" mat", " rug", " sofa", " floor", "\n"],
                            "probabilities": [0.5, 0.2, 0.1, 0.05, 0.0004]},
            "attribution": {"embed": 0.25, "heads": heads.tolist(), "mlps": [0.1] * N_LAYERS,
                            "logit": 0.25 + heads.sum() + 3.0}, **extra}


def test_each_token_carries_its_loss_and_the_mean_loss_is_their_mean():
    given = at(3)
    view = real_model_view(TOKENS, SCORES, 5, losses=LOSSES, at=given)
    rows = view["outputs"]["tokens"]["rows"]
    assert "loss" not in rows[0]["data"]  # nothing predicts the first token
    assert [float(r["data"]["loss"]) for r in rows[1:]] == LOSSES[1:]
    assert float(view["outputs"]["mean-loss"]["value"]) == pytest.approx(np.mean(LOSSES[1:]))
    assert "3.62 nats per token, over the 4 tokens after the first" in view["outputs"]["mean-loss"]["text"]
    assert view["outputs"]["mean-loss-knocked"]["hidden"] is True and view["data"]["knocked"] == "false"
    slot = view["outputs"]["head-4-2"]  # scores and attribution side by side
    assert float(slot["data"]["score-induction"]) == pytest.approx(SCORES["induction"][4, 2], abs=5e-5)
    assert float(slot["data"]["logit-attribution"]) == pytest.approx(given["attribution"]["heads"][4][2], abs=5e-5)
    assert view["data"]["position"] == "3" and view["data"]["position-max"] == "4"
    assert view["data"]["position-error"] == "Choose a position from 0 to 4: the text's tokens, counted from 0."
    assert len(view["outputs"]["predictions"]["rows"]) == 5


def test_a_position_s_predictions_and_attribution():
    given = at(2)
    out = position_view(TOKENS, given)
    assert out["data"] == {"position": "2"}
    rows = out["outputs"]["predictions"]["rows"]
    assert [(r["data"]["rank"], r["data"]["token-id"], float(r["data"]["probability"])) for r in rows] == [
        (rank, i, p) for rank, (i, p) in enumerate(zip(given["predictions"]["ids"],
                                                       given["predictions"]["probabilities"]), 1)]
    assert [r["text"] for r in rows][:2] == ["“ mat” 50.0%", "“ rug” 20.0%"]
    assert rows[4]["text"] == "“\n” <0.1%"
    heads = np.array(given["attribution"]["heads"])
    cells = out["outputs"]["heads"]["cells"]  # the grid's cells, layer by layer
    shown = np.array([float(v) for v in cells["data"]["logit-attribution"]]).reshape(N_LAYERS, N_HEADS)
    assert float(cells["vars"]["--attribution"][np.argmax(np.abs(heads))]) == pytest.approx(np.sign(heads.flat[
        np.argmax(np.abs(heads))]))
    np.testing.assert_allclose(shown, heads, atol=5e-5)
    largest = np.unravel_index(np.argmax(heads), heads.shape)
    assert f"most L{largest[0]} H{largest[1]} +{heads[largest]:.2f}" in out["outputs"]["attribution"]
    assert out["outputs"]["position-words"] == "After “ sat” (token 2) the model predicts:"
    assert "lens" not in out["outputs"]
    assert out["outputs"]["predictions-knocked"] == {"rows": [], "hidden": True}  # none knocked: none shown
    with pytest.raises(ValueError, match="at's position must be below the 5 tokens, got 5"):
        position_view(TOKENS, at(5))
    with pytest.raises(ValueError, match="at must hold"):
        position_view(TOKENS, {"position": 1})
    for broken, said in [({"attribution": 5}, "at's attribution must be"),
                         ({"predictions": {"ids": [1], "tokens": ["a"], "probabilities": [1.0]}},
                          "at's predictions must hold ids, tokens and probabilities, 5 of each")]:
        with pytest.raises(ValueError, match=said):
            position_view(TOKENS, at(1) | broken)


def test_a_knock_out_s_losses_beside_the_clean_ones():
    knocked = [None, 4.25, 1.5, 9.0, 2.75]
    view = knockout_view(TOKENS, LOSSES, knocked, [(17, 3), (18, 6)], True)
    rows = view["outputs"]["tokens"]["rows"]
    assert [float(r["data"]["loss-knocked"]) for r in rows[1:]] == knocked[1:]
    assert [float(r["data"]["loss"]) for r in rows[1:]] == LOSSES[1:]
    assert float(view["outputs"]["mean-loss-knocked"]["value"]) == pytest.approx(np.mean(knocked[1:]))
    assert view["outputs"]["mean-loss-knocked"]["text"] == (
        "L17 H3 and L18 H6 knocked out, the first token hidden from every later token: mean loss 4.38 nats per "
        "token (+0.75 against 3.62).")
    out = [(l, h) for l in range(N_LAYERS) for h in range(N_HEADS)
           if view["outputs"][f"head-{l}-{h}"]["data"]["knocked"] == "true"]
    assert out == [(17, 3), (18, 6)] and view["data"]["knocked"] == "true"
    with pytest.raises(ValueError, match="must be as long as one another"):
        knockout_view(TOKENS, LOSSES, knocked[:3], [], False)
    with pytest.raises(ValueError, match=r"heads\[0\]'s layer must be at most 29"):
        knockout_view(TOKENS, LOSSES, knocked, [(30, 0)], False)


def test_the_one_click_sets_read_back_as_a_reader_s_heads():
    scores = {kind: np.zeros((N_LAYERS, N_HEADS)) for kind in KINDS}
    scores["induction"][17, 3:6] = scores["induction"][18, 6] = 0.8
    scores["previous_token"][:] = np.nan
    sets = head_sets(scores)
    assert parse_heads(sets["data"]["set-induction"]) == [(17, 3), (17, 4), (17, 5), (18, 6)]
    control = parse_heads(sets["data"]["set-induction-control"])
    assert sorted(l for l, _ in control) == [17, 17, 17, 18] and not set(control) & {(17, 3), (17, 4), (17, 5), (18, 6)}
    assert sets["data"]["set-previous-token"] == sets["data"]["set-previous-token-control"] == ""
    assert "4 induction heads (score at least 0.4): L17 H3, L17 H4, L17 H5, L18 H6" in sets["words"]


def test_how_many_heads_can_go_in_words_and_drawn():
    """The answer's words count the kinds among the last 20 heads of the order and name the last five; the curve's
    points sit at their counts and rises (the chart's box from the view), the limit at +0.1; the chart keeps the
    order (data-order); nonsense refused."""
    from mha_page.views.real_model import PRUNING_CHART as box, pruning_hidden, pruning_progress, pruning_view

    order = [(l, h) for l in range(N_LAYERS) for h in range(N_HEADS)]  # (29, 8) goes last
    scores = {kind: np.zeros((N_LAYERS, N_HEADS)) for kind in KINDS}
    scores["induction"][29, :3] = scores["first_token"][28, 0] = 0.9
    curve = [[0, 4.0], [15, 3.8], [30, 4.05], [45, 4.5], [37, 4.09], [41, 4.2], [38, 4.2]]
    view = pruning_view(sorted(curve), 37, order, scores, button=False)["outputs"]
    assert view["pruning"] == {"text": (
        "37 of the 270 heads can go, the least costly first, before the mean loss rises 0.1 nats: it goes from 4.00 "
        "to 4.09 nats per token. Of the 20 heads that go last (the costliest alone), 0 previous-token, 3 induction, "
        "1 first-token and 0 duplicate-token heads (a score of at least 0.4); the last of all: L29 H8, L29 H7, "
        "L29 H6, L29 H5, L29 H4."), "value": 37, "hidden": False}
    points = [[float(v) for v in p.split(",")] for p in view["pruning-line"]["attrs"]["points"].split()]
    scale = (box["bottom"] - box["top"]) / 0.6  # from −0.3 (the lowest rise, −0.2, and half a step) to +0.3
    xs = [box["left"] + (box["right"] - box["left"]) * k / 270 for k, _ in sorted(curve)]
    ys = [box["bottom"] - scale * (min(v - 4.0, 0.3) + 0.3) for _, v in sorted(curve)]
    np.testing.assert_allclose(points, np.transpose([xs, ys]), atol=0.06)
    assert view["pruning-limit"]["attrs"]["y1"] == pytest.approx(box["bottom"] - scale * 0.4, abs=0.06)
    assert view["pruning-low-label"]["text"] == "\u22120.3" and view["pruning-controls"] == {"hidden": True}
    assert view["pruning-chart"]["data"]["order"].split()[:2] == ["0.0", "0.1"]  # the order the heads went in
    assert len(view["pruning-chart"]["data"]["order"].split()) == 270 and pruning_hidden(True)["pruning-chart"] == {
        "hidden": True, "data": {"order": None}}
    assert pruning_hidden(True)["pruning-controls"] == {"hidden": False} and "at most 22 with many" in (
        pruning_hidden(True)["prune-cost"])
    assert pruning_progress(("together", 45, 4.123)) == (
        "Heads knocked out together, the least costly first: 45 out, mean loss 4.12 nats\u2026")
    with pytest.raises(ValueError, match="curve must start at 0 heads"):
        pruning_view([[15, 3.8], [37, 4.09]], 37, order, scores, button=False)
    with pytest.raises(ValueError, match="hold removable's"):
        pruning_view(sorted(curve), 36, order, scores, button=False)
