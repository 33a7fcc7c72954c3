"""detectors.py: the ideal patterns against rules written here, a perfect head's score, and the loss split into
what can and cannot be predicted."""

import numpy as np
import pytest

from mha_core.detectors import DETECTORS, detector_scores, evaluate, ideal_patterns
from mha_core.model import TrainConfig, init_params, next_token_losses, forward
from mha_core.training import sample_batch

TOKENS = np.array([[5, 6, 7, 5, 6, 7, 5]])  # a block of 3, repeated


def marked(kind: str, q: int) -> set[int]:
    """The keys an ideal head of kind attends to from query q of TOKENS, from the definitions."""
    row = TOKENS[0].tolist()
    if kind == "previous_token":
        return {q - 1} if q else set()
    if kind == "first_token":
        return {0}
    if kind == "duplicate_token":
        return {j for j in range(q) if row[j] == row[q]}
    return {j + 1 for j in range(q) if row[j] == row[q]}  # induction


@pytest.mark.parametrize("kind", DETECTORS)
def test_ideal_patterns_follow_their_definitions(kind):
    ideal = ideal_patterns(TOKENS)[kind][0]
    for q in range(TOKENS.shape[1]):
        assert set(np.flatnonzero(ideal[q])) == marked(kind, q), (kind, q)


@pytest.mark.parametrize("kind", DETECTORS)
def test_a_head_that_attends_as_the_ideal_scores_one(kind):
    ideal = ideal_patterns(TOKENS)[kind].astype(float)  # [1, n, n]
    rows = ideal.sum(-1, keepdims=True)
    pattern = np.where(rows > 0, ideal / np.maximum(rows, 1), np.eye(TOKENS.shape[1]))  # rows with no key: itself
    scores = detector_scores([pattern[:, None]], TOKENS)  # one layer, one head
    assert scores[kind] == [[pytest.approx(1.0)]]


def test_evaluate_splits_the_loss_into_first_occurrences_and_repeats():
    config = TrainConfig()
    params = init_params(config, 0)
    tokens = sample_batch(config, np.random.default_rng(0))
    result = evaluate(params, tokens, config)
    logits, patterns = forward(params, tokens, config)
    losses, _ = next_token_losses(logits, tokens)
    repeat = np.array([[tokens[b, t] in tokens[b, :t] for t in range(tokens.shape[1] - 1)] for b in range(len(tokens))])
    assert result["loss"] == pytest.approx(losses.mean())
    assert result["loss_repeat"] == pytest.approx(losses[repeat].mean())
    assert result["loss_first"] == pytest.approx(losses[~repeat].mean())
    assert result["scores"] == detector_scores(patterns, tokens)


# ---------------------------------------------------------------- the public door

def test_detector_scores_refuses_patterns_that_do_not_fit_the_tokens():
    tokens = np.array([[0, 1, 0, 1]])
    with pytest.raises(ValueError, match=r"^patterns\[0\] must be \[B, h, n, n\] with B=1 and n=4 as in tokens"):
        detector_scores([np.zeros((1, 2, 3, 3))], tokens)
    with pytest.raises(ValueError, match=r"^patterns\[1\] must have 4 dimensions"):
        detector_scores([np.zeros((1, 2, 4, 4)), np.zeros((4, 4))], tokens)
    with pytest.raises(ValueError, match=r"^tokens must hold integers"):
        detector_scores([np.zeros((1, 2, 4, 4))], tokens.astype(float))
    patterns = [np.full((1, 2, 4, 4), 0.25)]
    assert detector_scores(patterns, tokens) == detector_scores.fn(patterns, tokens)


def test_evaluate_refuses_what_does_not_fit_the_config():
    config = TrainConfig(vocab=8, d_model=8, n_heads=2, d_head=4, seq_len=8, batch=2, min_period=2, max_period=6)
    params = init_params(config, 0)
    with pytest.raises(ValueError, match=r"^tokens must be ids from 0 to vocab - 1 = 7, got 0 to 9\.$"):
        evaluate(params, np.array([[0, 9]]), config)
    with pytest.raises(ValueError, match=r"^ablate holds \(layer, head\) pairs with layer < 2"):
        evaluate(params, np.array([[0, 1]]), config, [(3, 0)])
