"""The numbers the explainer quotes about the trained models, computed from the runs the build records.

facts() gives {name: text} for the page's `<!-- fact: NAME -->` markers (sitebuild/facts.py). The two-layer
run is the one the page ships (run.json, the training widget's asset). Two variants of it are trained from
the same seed by the same schedule, as the widget's experiments train them: the one-layer model (Olsson et
al.'s control) and blocks of one fixed length; they are kept in .cache/, keyed on the modules recorded_run imports.

The text also makes claims in words ("after the steep drop", "both layer-1 heads"); claims() checks each
against the runs, and the build stops if one fails, naming it.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np

from mha_core import model, training
from mha_core.params_codec import decode_params
from mha_page.views import head_name
from mha_page.views import training as views
from mha_page.views.training_schedule import SCHEDULE_DTYPE
from mha_page.views.training_words import ROLE_MIN
from sitebuild import CACHE, ROOT, BuildError, kept
from sitebuild.sources import sources_key
from widgets.training import run as recorded

DIVERGING_LR = model.EXPERIMENTS["diverge"]["lr"]  # what the widget's "A learning rate that diverges" sets
FIXED_PERIOD = model.EXPERIMENTS["fixed-block"]["min_period"]  # the widget's "Blocks of fixed length"
DROP_STEPS = 50  # the steep drop: the DROP_STEPS-step window in which the loss on the repeats falls most


def recorded_run() -> dict:
    """The two-layer run the page ships, as the browser reads it."""
    return recorded.run()


def one_layer_run(run: dict) -> dict:
    return variant(run, **model.EXPERIMENTS["one-layer"])


def fixed_block_run(run: dict) -> dict:
    return variant(run, **model.EXPERIMENTS["fixed-block"])


def variant(run: dict, **changes) -> dict:
    """run's model and task with changes to its config, trained from run's seed by the same schedule (cached)."""
    config = {**run["config"], **changes}
    h = hashlib.sha256(json.dumps([config, run["seed"]], sort_keys=True).encode())
    h.update(sources_key(ROOT, ROOT / "mha_page" / "views" / "training.py").encode())  # what recorded_run imports
    make = lambda: json.dumps(views.recorded_run(model.TrainConfig(**config), run["seed"]), sort_keys=True,
                              allow_nan=False).encode()
    return json.loads(kept(CACHE / f"training-run-variant-{h.hexdigest()[:20]}.json", make))


# ---------------------------------------------------------------- reading a run

def steps(run: dict) -> list[int]:
    return [h["step"] for h in run["history"]]


def series(run: dict, key: str) -> list[float]:
    """A loss ("loss_first", "loss_repeat") or a score ("induction:1:0": kind, layer, head) at every logged step."""
    if ":" not in key:
        return [h[key] for h in run["history"]]
    kind, layer, head = key.split(":")
    return [h["scores"][kind][int(layer)][int(head)] for h in run["history"]]


def drop(run: dict) -> tuple[int, int]:
    """(first step, last step) of the DROP_STEPS-step window in which the loss on the repeats falls most."""
    at = dict(zip(steps(run), series(run, "loss_repeat")))
    start = max((s for s in at if s + DROP_STEPS in at), key=lambda s: at[s] - at[s + DROP_STEPS])
    return start, start + DROP_STEPS


def named_from(run: dict, key: str) -> int | None:
    """The first logged step from which the score key stays at or above ROLE_MIN to the end (None if it ends below)."""
    first = None
    for step, value in zip(steps(run), series(run, key)):
        first = (first if first is not None else step) if value >= ROLE_MIN else None
    return first


def value_at(run: dict, key: str, step: int) -> float:
    return series(run, key)[steps(run).index(step)]


def checkpoint_near(run: dict, step: int) -> dict:
    return min(run["checkpoints"], key=lambda c: abs(c["step"] - step))


def heads_named(run: dict, layer: int, role: str) -> list[int]:
    """The heads of layer whose role at the last checkpoint is role."""
    return [h for h, r in enumerate(run["checkpoints"][-1]["roles"][layer]) if r == role]


def induction_heads(run: dict) -> list[int]:
    """The layer-1 heads named induction at the last checkpoint, the highest-scoring first (the head the
    widget's "Knock out an induction head" knocks out)."""
    final = run["history"][-1]["scores"]["induction"][1]
    return sorted(heads_named(run, 1, "induction"), key=lambda h: -final[h])


def layer0_heads(run: dict) -> tuple[int, int]:
    """(the layer-0 head named previous-token at the last checkpoint, the other one); the text speaks of two."""
    prev = heads_named(run, 0, "previous_token")
    if run["config"]["n_heads"] != 2 or len(prev) != 1:
        raise BuildError(f"the text speaks of one previous-token head among two in layer 0; the run's roles: "
                         f"{run['checkpoints'][-1]['roles'][0]}")
    return prev[0], 1 - prev[0]


def self_share(run: dict, checkpoint: dict, layer: int, head: int) -> tuple[float, float]:
    """(the mean weight a head gives each query's own position on the evaluation batch, that of an even spread)."""
    config = model.TrainConfig(**run["config"])
    _, patterns = model.forward(decode_params(checkpoint["params"], config),
                                   training.eval_batch(config, run["seed"]), config)
    own = np.diagonal(patterns[layer][:, head], axis1=-2, axis2=-1)  # [B, n]
    return float(own.mean()), float(np.mean(1 / np.arange(1, own.shape[-1] + 1)))


def share_on_seen(run: dict, checkpoint: dict) -> tuple[float, float]:
    """(the probability the model gives tokens already in the sequence when it predicts a first occurrence,
    the share a uniform guess would give them), on the evaluation batch."""
    config = model.TrainConfig(**run["config"])
    tokens = training.eval_batch(config, run["seed"])  # [B, n]
    logits, _ = model.forward(decode_params(checkpoint["params"], config), tokens, config)
    z = logits[:, :-1] - logits[:, :-1].max(axis=-1, keepdims=True)  # [B, n-1, V]: position t predicts t + 1
    probs = np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)
    n = tokens.shape[1]
    seen = np.zeros(probs.shape, bool)  # [B, n-1, V]: token v occurred at or before position t
    for t in range(n - 1):
        np.put_along_axis(seen[:, t], tokens[:, :t + 1], True, axis=-1)
    earlier = (tokens[:, :, None] == tokens[:, None, :]) & np.tri(n, n, -1, dtype=bool)  # [B, n_q, n_k]
    first = ~earlier.any(axis=-1)[:, :-1]  # [B, n-1]: the token at t is new (as evaluate counts first occurrences)
    return float((probs * seen).sum(-1)[first].mean()), float(seen.sum(-1)[first].mean() / config.vocab)


def knocked_out(run: dict, heads: list[list[int]]) -> dict:
    """What the widget's knock-out shows at the last checkpoint: training_evaluate's "ablated" entry."""
    return views.training_evaluate(run["config"], run["seed"], run["checkpoints"][-1]["params"], heads)["ablated"]


def diverged(run: dict) -> tuple[int, str, float]:
    """(the step, the message) at which run's model and seed, trained at DIVERGING_LR, stop, and the
    weights' standard deviation at the start."""
    trainer = training.Trainer(model.TrainConfig(**{**run["config"], "lr": DIVERGING_LR}), run["seed"], dtype=SCHEDULE_DTYPE)
    try:
        trainer.run(run["steps"])
    except training.TrainingDiverged as e:
        return trainer.step, str(e), float(np.std(np.concatenate([p.ravel() for p in
                                                                  model.init_params(trainer.config, run["seed"]).values()])))
    raise BuildError(f"the text says lr={DIVERGING_LR} diverges, but run {run['seed']} trained to the end")


# ---------------------------------------------------------------- the facts

def f2(x: float) -> str:
    return f"{x:.2f}"


def two_layer_facts(run: dict) -> dict[str, str]:
    first = series(run, "loss_first")
    peak = steps(run)[first.index(max(first))]
    start, end = drop(run)
    prev, other = layer0_heads(run)
    induction = induction_heads(run)
    prev_key = f"previous_token:0:{prev}"
    own, even = self_share(run, run["checkpoints"][-1], 0, other)
    bet, bet_even = share_on_seen(run, checkpoint_near(run, peak))
    diverge_step, _, init_std = diverged(run)
    return {
        "diverging_lr": f"{DIVERGING_LR:g}",
        "diverge_step": str(diverge_step),
        "init_std": f2(init_std),
        "uniform_loss": f2(math.log(run["config"]["vocab"])),
        "best_first_loss": f2(training.best_first_loss(model.TrainConfig(**run["config"]))),
        "vocab": str(run["config"]["vocab"]),
        "min_period": str(run["config"]["min_period"]),
        "max_period": str(run["config"]["max_period"]),
        "role_min": f"{ROLE_MIN:g}",
        "first_loss_start": f2(first[0]),
        "first_loss_peak": f2(max(first)),
        "first_loss_peak_step": str(peak),
        "first_loss_end": f2(first[-1]),
        "bet_step": str(checkpoint_near(run, peak)["step"]),
        "bet_share": f2(bet),
        "bet_uniform": f2(bet_even),
        "drop_steps": str(DROP_STEPS),
        "drop_start": str(start),
        "drop_end": str(end),
        "repeat_loss_start": f2(series(run, "loss_repeat")[0]),
        "repeat_loss_drop_start": f2(value_at(run, "loss_repeat", start)),
        "repeat_loss_drop_end": f2(value_at(run, "loss_repeat", end)),
        "repeat_loss_end": f2(series(run, "loss_repeat")[-1]),
        "induction_heads": " and ".join(head_name(1, h) for h in sorted(induction)),
        "induction_step": str(max(named_from(run, f"induction:1:{h}") for h in induction)),
        "induction_first_step": str(min(named_from(run, f"induction:1:{h}") for h in induction)),
        "induction_first_head": head_name(1, min(induction, key=lambda h: named_from(run, f"induction:1:{h}"))),
        "induction_end": " and ".join(f2(series(run, f"induction:1:{h}")[-1]) for h in sorted(induction)),
        "prev_head": head_name(0, prev),
        "prev_start": f2(series(run, prev_key)[0]),
        "prev_drop_start": f2(value_at(run, prev_key, start)),
        "prev_drop_end": f2(value_at(run, prev_key, end)),
        "prev_named_step": str(named_from(run, prev_key)),
        "prev_end": f2(series(run, prev_key)[-1]),
        "other_head": head_name(0, other),
        "other_self_share": f2(own),
        "even_self_share": f2(even),
        "ko_other_repeat": f"{knocked_out(run, [[0, other]])['loss_repeat']:.3f}",
        "repeat_loss_end_3": f"{series(run, 'loss_repeat')[-1]:.3f}",
        "ko_prev_repeat": f2(knocked_out(run, [[0, prev]])["loss_repeat"]),
        "ko_induction_head": head_name(1, induction[0]),
        "ko_induction_repeat": f2(knocked_out(run, [[1, induction[0]]])["loss_repeat"]),
        "ko_induction_other_head": head_name(1, induction[-1]),
        "ko_induction_other_repeat": f2(knocked_out(run, [[1, induction[-1]]])["loss_repeat"]),
        "ko_both_induction_repeat": f2(knocked_out(run, [[1, h] for h in induction])["loss_repeat"]),
    }


def one_layer_facts(run: dict) -> dict[str, str]:
    induction = [s for h in run["history"] for row in h["scores"]["induction"] for s in row]
    return {
        "one_layer_induction_max": f2(max(induction)),
        "one_layer_repeat_min": f2(min(series(run, "loss_repeat"))),
    }


def below_one_nat(run: dict) -> int:
    """The first logged step at which the loss on the repeats is below 1 nat."""
    return next(h["step"] for h in run["history"] if h["loss_repeat"] < 1)


def fixed_block_facts(run: dict, fixed: dict) -> dict[str, str]:
    prev = [s for h in fixed["history"] for row in h["scores"]["previous_token"] for s in row]
    return {
        "fixed_period": str(FIXED_PERIOD),
        "fixed_below_one_step": str(below_one_nat(fixed)),
        "below_one_step": str(below_one_nat(run)),
        "fixed_prev_max": f2(max(prev)),
        "fixed_layer0_induction": head_name(0, fixed["checkpoints"][-1]["roles"][0].index("induction")),
    }


def claims(run: dict, one: dict, fixed: dict) -> dict[str, bool]:
    """What the text says in words about the runs, each checked against them."""
    start, end = drop(run)
    prev, other = layer0_heads(run)
    induction = heads_named(run, 1, "induction")
    induction_from = [named_from(run, f"induction:1:{h}") for h in induction]
    uniform = math.log(run["config"]["vocab"])
    best = training.best_first_loss(model.TrainConfig(**run["config"]))
    return {
        "the best possible loss on first occurrences is below a uniform guess's": best < uniform - 0.1,
        "both layer-1 heads end as induction heads": len(induction) == run["config"]["n_heads"],
        "the induction heads are named during the steep drop": all(start <= s <= end for s in induction_from),
        "the previous-token head is named only after the steep drop": named_from(run, f"previous_token:0:{prev}") > end,
        "its score rises during the drop": value_at(run, f"previous_token:0:{prev}", end)
        > value_at(run, f"previous_token:0:{prev}", start) + 0.1,
        "the loss on first occurrences starts near a uniform guess's": abs(series(run, "loss_first")[0] - uniform) < 0.1,
        "it rises well above it and ends above it": max(series(run, "loss_first")) > uniform + 0.5
        and series(run, "loss_first")[-1] > uniform,
        "the model's loss there ends above the best possible": series(run, "loss_first")[-1] > best + 0.5,
        "it peaks during or after the drop": steps(run)[series(run, "loss_first").index(max(series(run, "loss_first")))]
        >= start,
        "the other layer-0 head attends to itself more than twice an even spread":
            (lambda own, even: own > 2 * even)(*self_share(run, run["checkpoints"][-1], 0, other)),
        "one knocked-out induction head leaves most of the job to the other": all(
            knocked_out(run, [[1, h]])["loss_repeat"] < knocked_out(run, [[1, g] for g in induction])["loss_repeat"] / 2
            for h in induction),
        "the one-layer model forms no induction head": all(
            s < ROLE_MIN for h in one["history"] for row in h["scores"]["induction"] for s in row),
        "its loss on the repeats never drops below 2 nats": min(series(one, "loss_repeat")) > 2,
        "blocks of fixed length: the drop comes sooner": below_one_nat(fixed) < below_one_nat(run),
        "no previous-token head forms": all(
            s < ROLE_MIN for h in fixed["history"] for row in h["scores"]["previous_token"] for s in row),
        "a layer-0 head is named an induction head": "induction" in fixed["checkpoints"][-1]["roles"][0],
    }


def facts() -> dict[str, str]:
    run = recorded_run()
    one, fixed = one_layer_run(run), fixed_block_run(run)
    failed = [claim for claim, holds in claims(run, one, fixed).items() if not holds]
    if failed:
        raise BuildError(f"docs/what-heads-learn.md claims what the recorded training runs do not show: {'; '.join(failed)}")
    return two_layer_facts(run) | one_layer_facts(one) | fixed_block_facts(run, fixed)
