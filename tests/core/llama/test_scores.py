"""scores.py: the ideal keys against rules written here from the definitions, an ideal head's score, a hand-counted
score, and refusals. (The real model's heads scored from transformers' weights and from ours: test_model.py.)"""
from __future__ import annotations

import numpy as np
import pytest

from mha_core.llama.scores import SCORES, head_scores, ideal_keys

TOKENS = [5, 6, 7, 5, 6, 5, 5, 9]


def marked(kind: str, i: int) -> set[int]:
    """The keys query i's ideal head of kind attends to, from the definitions."""
    if i == 0:
        return set()
    if kind == "previous_token":
        return {i - 1}
    if kind == "first_token":
        return {0}
    if kind == "duplicate_token":
        return {j for j in range(i) if TOKENS[j] == TOKENS[i]}
    return {j + 1 for j in range(i - 1) if TOKENS[j] == TOKENS[i]}  # induction: j < i − 1


@pytest.mark.parametrize("kind", SCORES)
def test_ideal_keys_follow_their_definitions(kind):
    ideal = ideal_keys(TOKENS)[kind]
    for i in range(len(TOKENS)):
        assert set(np.flatnonzero(ideal[i])) == marked(kind, i), (kind, i)


@pytest.mark.parametrize("kind", SCORES)
def test_a_head_that_attends_as_the_ideal_scores_one(kind):
    ideal = ideal_keys(TOKENS)[kind].astype(np.float32)
    rows = ideal.sum(-1, keepdims=True)
    pattern = np.where(rows > 0, ideal / np.maximum(rows, 1), np.eye(len(TOKENS), dtype=np.float32))
    scores = head_scores(pattern[None, None], TOKENS)  # one layer, one head
    assert scores[kind].shape == (1, 1) and scores[kind][0, 0] == pytest.approx(1.0)


def test_a_uniform_causal_head_scores_as_counted_by_hand():
    n = len(TOKENS)
    uniform = np.tril(np.ones((n, n), np.float32)) / np.arange(1, n + 1, dtype=np.float32)[:, None]
    scores = head_scores(uniform, TOKENS)
    by_hand = np.mean([1 / (i + 1) for i in range(1, n)])  # one key of i + 1, for queries 1..n−1
    assert scores["previous_token"] == pytest.approx(by_hand)
    assert scores["first_token"] == pytest.approx(by_hand)
    # induction counts queries 3 (5: key 1), 4 (6: key 2), 5 (5: keys 1, 4), 6 (5: keys 1, 4); 7 (9) is new
    assert scores["induction"] == pytest.approx(np.mean([1 / 4, 1 / 5, 2 / 6, 2 / 7]))
    assert scores["duplicate_token"] == pytest.approx(np.mean([1 / 4, 1 / 5, 2 / 6, 3 / 7]))
    assert np.isnan(head_scores(uniform[:3, :3], TOKENS[:3])["induction"])  # no repeat: no query counts


def test_nonsense_is_refused_with_the_argument_named():
    for patterns, tokens, said in [(np.ones((2, 3)), [1, 2], "patterns must be"),
                                   ([[1, 0], [0, 1]], [1, 2], "patterns must be floating"),
                                   (np.eye(2), [1.5, 2], "tokens must be"), (np.eye(2), [], "tokens must be"),
                                   (np.eye(3), [1, 2], "tokens holds 2 ids but patterns are over 3")]:
        with pytest.raises(ValueError, match=said):
            head_scores(patterns, tokens)
