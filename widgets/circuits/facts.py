"""The numbers the explainer quotes about the trained model's circuits, computed from the run the page ships.

facts() gives {name: text} for the page's `<!-- fact: NAME -->` markers (sitebuild/facts.py), from the same
checkpoints the circuits widget shows (mha_page.bridge.circuits). claims() checks what the text says in words
against them, and the build stops if one fails, naming it.
"""
from __future__ import annotations

import functools

import numpy as np

from mha_page.bridge.circuits import circuits_at, circuits_over_training
from mha_core.circuits import logit_attribution
from mha_core.model import TrainConfig
from mha_page.views import decimal, head_name
from mha_page.views.circuits import BASELINE_SPREAD, kinds
from mha_core.params_codec import decode_params
from sitebuild import BuildError
from widgets.training import facts as training
from widgets.training import run as recorded


def f2(x: float) -> str:
    return f"{x:.2f}"


@functools.cache
def circuits_run() -> dict:
    """{"run": the shipped run, "over": circuits_over_training of its checkpoints, "prev", "other": layer-0 heads,
    "first", "last": circuits_at of its first and last checkpoints}."""
    run = recorded.run()
    steps, params = [c["step"] for c in run["checkpoints"]], [c["params"] for c in run["checkpoints"]]
    prev, other = training.layer0_heads(run)
    return {"run": run, "over": circuits_over_training(run["config"], run["seed"], steps, params), "prev": prev,
            "other": other, "first": circuits_at(run["config"], params[0]), "last": circuits_at(run["config"], params[-1])}


def k_series(c: dict, source: int, target: int) -> list[float]:
    return [float(e["k_composition"][0][source][1][target]) for e in c["over"]["checkpoints"]]


def steps(c: dict) -> list[int]:
    return [e["step"] for e in c["over"]["checkpoints"]]


def position_means(losses) -> dict[str, float]:
    """The mean loss on the first copy, the second copy's first token and the other repeats of display_tokens."""
    losses = np.asarray(losses)
    tokens = circuits_run()["run"]["tokens"]
    kind = np.array(kinds(len(losses), tokens[1:].index(tokens[0]) + 1))
    return {k: float(losses[kind == k].mean()) for k in ("first", "start", "repeat")}


def copying_full_step(c: dict) -> int:
    """The first checkpoint from which every layer-1 head's copying score is 1."""
    entries = c["over"]["checkpoints"]
    return next(e["step"] for i, e in enumerate(entries)
                if all(np.all(np.asarray(f["copying"][1]) == 1) for f in entries[i:]))


def causal_offdiagonal(qk: np.ndarray) -> tuple[float, float]:
    """(the mean score one position back, the mean over the other visible keys) of a positional QK circuit [n, n]."""
    n = len(qk)
    return float(np.mean(np.diagonal(qk, -1))), float(qk[np.tri(n, dtype=bool) & ~np.eye(n, k=-1, dtype=bool)].mean())


def facts() -> dict[str, str]:
    c = circuits_run()
    failed = [claim for claim, holds in claims(c).items() if not holds]
    if failed:
        raise BuildError(f"docs/what-heads-learn.md claims what the recorded run's circuits do not show: {'; '.join(failed)}")
    run, prev, other = c["run"], c["prev"], c["other"]
    base = c["over"]["k_baseline"]
    start, end = training.drop(run)
    s = steps(c)
    into = [k_series(c, prev, b) for b in range(run["config"]["n_heads"])]
    peak = max(range(len(s)), key=lambda i: min(k[i] for k in into))
    below, rest = causal_offdiagonal(np.asarray(c["last"]["positional_qk"][0][prev]))
    full_ov = np.asarray(c["last"]["full_ov"][1])  # [h, V, V]
    diagonal = float(np.mean(np.diagonal(full_ov, axis1=-2, axis2=-1)))
    off = float((full_ov.sum() - np.trace(full_ov, axis1=-2, axis2=-1).sum()) / (full_ov.size - full_ov.shape[0] * full_ov.shape[1]))
    at_start, at_end = position_means(c["over"]["checkpoints"][0]["position_losses"]), position_means(
        c["over"]["checkpoints"][-1]["position_losses"])
    both = lambda values: " and ".join(f2(v) for v in values)
    return {
        "k_baseline_mean": f2(base["mean"]),
        "k_baseline_std": f"{base['std']:.3f}",
        "k_prev_start": both(k[0] for k in into),
        "k_prev_drop_start": both(k[s.index(start)] for k in into) if start in s else both(k[0] for k in into),
        "k_prev_peak": both(k[peak] for k in into),
        "k_prev_peak_step": str(s[peak]),
        "k_prev_end": both(k[-1] for k in into),
        "k_other_end": both(k_series(c, other, b)[-1] for b in range(run["config"]["n_heads"])),
        "copying_start": both(c["over"]["checkpoints"][0]["copying"][1]),
        "copying_full_step": str(copying_full_step(c)),
        "copying_chance": f2(1 / run["config"]["vocab"]),
        "ov_diagonal_end": f2(diagonal),
        "ov_off_end": decimal(off),
        "qk_prev_below_end": f"{below:.1f}",
        "qk_prev_rest_end": f"{rest:.1f}",
        "last_step": str(s[-1]),
        "positions_first_end": f2(at_end["first"]),
        "positions_start_end": f2(at_end["start"]),
        "positions_repeat_end": f2(at_end["repeat"]),
        "positions_repeat_start": f2(at_start["repeat"]),
        "period": str(run["tokens"][1:].index(run["tokens"][0]) + 1),
    } | attribution_facts(c)


def attribution(c: dict) -> dict:
    """logit_attribution at the last checkpoint, for the last token of the widget's sequence, predicted from the
    token before it (a repeat, so an induction head's to write)."""
    config = TrainConfig(**c["run"]["config"])
    tokens = np.asarray(c["last"]["tokens"])
    return logit_attribution(decode_params(c["run"]["checkpoints"][-1]["params"], config), tokens, config,
                             len(tokens) - 2)


def attribution_facts(c: dict) -> dict[str, str]:
    a = attribution(c)
    signed = lambda x: f"{round(x, 2) + 0.0:.2f}".replace("-", "\u2212")  # + 0.0: no "−0.00"
    heads = [f"{head_name(layer, head)} {signed(v)}" for (layer, head), v in np.ndenumerate(a["heads"])]
    return {"dla_logit": f2(a["logit"]), "dla_direct": signed(a["direct"]),
            "dla_heads": ", ".join(heads[:-1]) + f" and {heads[-1]}"}


def claims(c: dict) -> dict[str, bool]:
    run, prev, other = c["run"], c["prev"], c["other"]
    base = c["over"]["k_baseline"]
    h = range(run["config"]["n_heads"])
    start, end = training.drop(run)
    s = steps(c)
    near = lambda i: min(range(len(s)), key=lambda j: abs(s[j] - i))
    high = base["mean"] + 5 * base["std"]
    at_end = position_means(c["over"]["checkpoints"][-1]["position_losses"])
    return {
        "at step 0 every K-composition score lies within 2 standard deviations of random heads'": all(
            abs(k_series(c, a, b)[0] - base["mean"]) < 2 * base["std"] for a in h for b in h),
        "the previous-token head's K-composition into each layer-1 head rises across the drop": all(
            k_series(c, prev, b)[near(end)] > k_series(c, prev, b)[near(start)] + 0.05 for b in h),
        "it ends far above random heads'": all(k_series(c, prev, b)[-1] > high for b in h),
        "the other layer-0 head's ends below the previous-token head's": all(
            k_series(c, other, b)[-1] < k_series(c, prev, b)[-1] for b in h),
        "the other layer-0 head's ends within the band, BASELINE_SPREAD standard deviations of random heads'": all(
            abs(k_series(c, other, b)[-1] - base["mean"]) < BASELINE_SPREAD * base["std"] for b in h),
        "every layer-1 head's copying score ends at 1": all(np.asarray(c["over"]["checkpoints"][-1]["copying"][1]) == 1),
        "they reach 1 by the end of the drop": copying_full_step(c) <= s[near(end)] + s[1] - s[0],
        "the previous-token head's positional QK circuit is highest one position back": np.all(np.diagonal(
            np.asarray(c["last"]["positional_qk"][0][prev]), -1)[:5] > 0) and causal_offdiagonal(
            np.asarray(c["last"]["positional_qk"][0][prev]))[0] > 5 * abs(causal_offdiagonal(
            np.asarray(c["last"]["positional_qk"][0][prev]))[1]),
        "the second copy's first token stays above 1 nat, the repeats end below 0.5": at_end["start"] > 1
        and at_end["repeat"] < 0.5 and at_end["first"] > 3,
        "the layer-1 heads write the predicted logit, the previous-token head's direct term is near 0": (
            attribution(c)["heads"][1].min() > 0.25 * attribution(c)["logit"]
            and abs(attribution(c)["heads"][0, prev]) < 0.05 * attribution(c)["logit"]),
    }
