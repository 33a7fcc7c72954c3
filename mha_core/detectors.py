"""What a trained model's heads do: the ideal pattern of each kind of head, how close a head comes to it,
and the model's loss on what can and cannot be predicted.

The detectors are TransformerLens's head detector ("mul" measure), each against an ideal pattern written
from its definition: previous_token, induction, duplicate_token, first_token.
Shapes: B batch, n seq, h n_heads.
"""

from __future__ import annotations

import numpy as np

from .fields import Array, ListOf, arguments
from .model import ABLATE, CONFIG, PARAMS, TOKENS, TrainConfig, fits_model, forward, next_token_losses

DETECTORS = ("previous_token", "induction", "duplicate_token", "first_token")


def seen_before(tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(same [B, n_q, n_k]: key j < query i holds the query's token, repeat [B, n]: the token occurred earlier)."""
    n = tokens.shape[1]
    same = (tokens[:, :, None] == tokens[:, None, :]) & np.tri(n, n, -1, dtype=bool)  # [B, n, n]
    return same, same.any(axis=-1)


def ideal_patterns(tokens: np.ndarray) -> dict[str, np.ndarray]:
    """[B, n_q, n_k] bool per detector: the keys an ideal head of that kind attends to.

    previous_token: key i - 1; duplicate_token: earlier keys holding the query's token; induction:
    the keys right after those (j + 1 for each earlier j with the query's token); first_token: key 0.
    """
    B, n = tokens.shape
    same, _ = seen_before(tokens)
    induction = np.zeros_like(same)
    induction[:, :, 1:] = same[:, :, :-1]  # key j + 1 followed an earlier occurrence j of the query's token
    first = np.zeros_like(same)
    first[:, :, 0] = True
    previous = np.broadcast_to(np.tri(n, n, -1, dtype=bool) & ~np.tri(n, n, -2, dtype=bool), (B, n, n))
    return {"previous_token": previous, "induction": induction, "duplicate_token": same, "first_token": first}


def _patterns_fit(args: dict) -> None:
    B, n = args["tokens"].shape
    for layer, pattern in enumerate(args["patterns"]):
        if pattern.shape[0] != B or pattern.shape[2:] != (n, n):
            raise ValueError(f"patterns[{layer}] must be [B, h, n, n] with B={B} and n={n} as in tokens, got shape "
                             f"{pattern.shape}.")


@arguments(_patterns_fit, patterns=ListOf(Array(ndim=(4,)), max_items=1024), tokens=TOKENS)
def detector_scores(patterns: list[np.ndarray], tokens: np.ndarray) -> dict[str, list[list[float]]]:
    """scores[kind][layer][head]: TransformerLens's head-detector measure ("mul").

    The share of attention a head puts on the keys the ideal pattern marks (ideal_patterns), summed
    and divided by the attention of the queries that count. TransformerLens counts every query; here
    only the queries whose ideal row marks at least one key count (the first token has no previous
    token, a token seen for the first time has no duplicate), so a perfect head scores 1.
    """
    scores = {}
    for kind, ideal in ideal_patterns(tokens).items():
        rows = ideal.any(axis=-1)  # [B, n]: queries that count
        count = max(int(rows.sum()), 1)
        scores[kind] = [((pattern * ideal[:, None]).sum(axis=(0, 2, 3)) / count).tolist()  # [B, h, n, n] -> [h]
                        for pattern in patterns]
    return scores


@arguments(fits_model, params=PARAMS, tokens=TOKENS, config=CONFIG, ablate=ABLATE)
def evaluate(params: dict, tokens: np.ndarray, config: TrainConfig, ablate=()) -> dict:
    """{"loss", "loss_first", "loss_repeat", "scores"} on tokens [B, n], the heads in ablate zeroed.

    loss_repeat averages the predictions made at positions whose token occurred earlier in its
    sequence (an induction head can copy the answer); loss_first averages the others (the block's
    first occurrence, which nothing can predict); scores as detector_scores.
    """
    logits, patterns = forward.fn(params, tokens, config, ablate)  # .fn: the arguments are checked already
    losses, _ = next_token_losses(logits, tokens)  # [B, n-1]
    repeat = seen_before(tokens)[1][:, :-1]  # [B, n-1]

    def mean(mask):
        return float(losses[mask].mean()) if mask.any() else float("nan")

    return {"loss": float(losses.mean()), "loss_first": mean(~repeat), "loss_repeat": mean(repeat),
            "scores": detector_scores.fn(patterns, tokens)}
