"""The real model's view: each head's four scores as the numbers given (4 decimals; where no query counts, 0,
said as none), its cell's colour, its label; the strongest heads and the note on a cut text, counted here from
the definitions; refusals. (The tokens as the reader reads them, against transformers: llama/test_tokenizer.py.)"""
from __future__ import annotations

import math

import numpy as np
import pytest

from mha_core.views.real_model import (KIND_NAMES, KINDS, MAX_TOKENS, N_HEADS, N_LAYERS, load_text, pattern_words,
                                       progress_text, real_model_view)

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


def test_a_pattern_s_weights_progress_and_the_model_s_size_in_words():
    weights = pattern_words()["weights"]  # a byte b is the weight b / 255
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
