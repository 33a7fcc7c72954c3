"""What the training widget reads of a run: the run as plain JSON (histories rounded to what is shown, each
checkpoint with its patterns, weights and view's slots), the run the page ships (recorded_run), and a checkpoint
measured with heads knocked out or on the reader's text (training_evaluate, which the browser calls).

The numbers come from mha_core.model, .detectors and .training; the module beside each job: the schedule
(training_schedule), how patterns travel (training_codec), the words (training_words), the charts
(training_charts) and the reader's runs in progress (training_runs).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from mha_core.detectors import evaluate
from mha_core.fields import Maybe, Text, Whole, arguments
from mha_core.model import ABLATE, SEED, TRAIN_CONFIG, TrainConfig, forward
from mha_core.params_codec import MAX_PARAMS_CHARS, decode_params, encode_params
from mha_core.rng import Random
from mha_core.tokens import MAX_TEXT_CHARS, first_tokens, token_key
from mha_core.training import Trainer, eval_batch

from . import cell_names, decimal, head_name
from .training_charts import chart_slots, marker
from .training_codec import encode_patterns
from .training_schedule import SCHEDULE, schedule_trainer
from .training_words import ROLE_NAMES, YOUR_TEXT, captions, display_words, head_roles, knockout_readout, summary

SYMBOLS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"  # token t is shown as SYMBOLS[t]


def display_tokens(config: TrainConfig) -> list[int]:
    """The test sequence the patterns are shown on (display_words says it): a block of distinct tokens, period
    halfway between min_period and max_period, repeated to fill seq_len."""
    period = (config.min_period + config.max_period) // 2
    block = Random(2024).permutation(config.vocab)[:period]  # [period]
    return block[np.arange(config.seq_len) % period].tolist()  # [n]


def display_labels(config: TrainConfig) -> list[str]:
    """display_tokens as the heatmap's axes show them: token t as SYMBOLS[t]."""
    return [SYMBOLS[t] for t in display_tokens(config)]


def text_tokens(text: str, config: TrainConfig) -> tuple[list[int], list[str]]:
    """(token ids, the words) of a reader's text: words and punctuation marks (mha_core.tokens), ids given in
    order of first appearance (case-insensitive), so repeats stay repeats; at most seq_len of them."""
    words, _ = first_tokens(text, config.seq_len)
    ids: dict[str, int] = {}
    for word in words:
        ids.setdefault(token_key(word), len(ids))
    if len(ids) > config.vocab:
        raise ValueError(f"the text has {len(ids)} different words in its first {len(words)}; "
                         f"the model knows {config.vocab} tokens.")
    if len(words) < 2:
        raise ValueError("the text needs at least 2 words or punctuation marks.")
    return [ids[token_key(word)] for word in words], words


def rounded(entry: dict) -> dict:
    """A history entry with losses to 4 decimals and scores to 3, the precision the widget shows."""
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in entry.items() if k != "scores"}
    out["scores"] = {kind: [[round(s, 3) for s in layer] for layer in value] for kind, value in entry["scores"].items()}
    return out


def score_outputs(evaluated: dict, roles: list[list[str | None]] | None = None) -> dict:
    """The slots (mha_page.views' form) of evaluate's numbers: the loss on the repeats and the grid of heads
    ("heads": a row per layer, in it a row per head: its name, layer and head, and its scores; with roles, its
    role too), which the template renders and the binding fills for any number of layers and heads."""
    loss = decimal(evaluated["loss_repeat"], 3)
    prev, induction = evaluated["scores"]["previous_token"], evaluated["scores"]["induction"]

    def cell(layer: int, head: int) -> dict:
        p, i = decimal(prev[layer][head], 3), decimal(induction[layer][head], 3)
        out = {"data": {"layer": layer, "head": head, "score-previous-token": p, "score-induction": i},
               "outputs": {"name": head_name(layer, head), "prev": p, "induction": i}}
        if roles is not None:
            out["data"]["role"] = roles[layer][head] or ""
            out["outputs"]["role"] = ROLE_NAMES[roles[layer][head]]
        return out
    heads = {"rows": [{"rows": [cell(layer, head) for head in range(len(row))]} for layer, row in enumerate(prev)]}
    return {"loss": {"text": loss, "value": loss}, "heads": heads}


def checkpoint_outputs(entry: dict, roles: list[list[str | None]]) -> dict:
    """Every number and word shown for a checkpoint (entry: its history entry, rounded): the step, the loss on the
    repeats, each head's scores and role, and the sentence under the slider."""
    step = str(entry["step"])
    return {"step": {"text": step, "value": step}, "marker": marker(entry["step"]), **score_outputs(entry, roles),
            "summary": summary(roles, entry["scores"], entry["step"])}


def checkpoint_view(params: dict, config: TrainConfig, entry: dict) -> dict:
    """One checkpoint for the widget: patterns on display_tokens, the heads' roles, the weights, each head's
    caption, and what is shown for it ("outputs": checkpoint_outputs). entry: the history entry of its step."""
    _, patterns = forward(params, np.array([display_tokens(config)]), config)
    roles = head_roles(entry["scores"])
    return {"step": entry["step"], "patterns": encode_patterns(patterns), "roles": roles,
            "captions": captions(config, entry["step"]),
            "params": encode_params(params, config), "outputs": checkpoint_outputs(rounded(entry), roles)}


def checkpoint_views(trainer: Trainer, checkpoints: list[dict]) -> list[dict]:
    entries = {h["step"]: h for h in trainer.history}
    return [checkpoint_view(c["params"], trainer.config, entries[c["step"]]) for c in checkpoints]


def shown_as(labels: list[str]) -> dict:
    """What the heatmap writes of a sequence: "labels", its axes' (one a token), and "names", its cells'
    (cell_names: the same words as the heads widget's, once per token)."""
    return {"labels": labels, "names": cell_names(labels)}


def shown_heads(run: dict) -> dict:
    """The heads the widget selects in the run the page ships ([layer, head]): "selected", the first named
    induction at its last checkpoint (else the last layer's first head); "knockout", the one its "Knock out an
    induction head" knocks out: the highest induction score at the last step outside layer 0 (in it, for one layer)."""
    config, roles = run["config"], run["checkpoints"][-1]["roles"]
    named = [[layer, head] for layer, row in enumerate(roles) for head, role in enumerate(row) if role == "induction"]
    induction = run["history"][-1]["scores"]["induction"]
    heads = [[layer, head] for layer, row in enumerate(induction) for head in range(len(row))
             if layer > 0 or config["n_layers"] == 1]
    return {"selected": named[0] if named else [config["n_layers"] - 1, 0],
            "knockout": max(heads, key=lambda lh: induction[lh[0]][lh[1]])}


def run_view(trainer: Trainer, reference: list[float] | None = None) -> dict:
    """The run so far as the widget reads it (history rounded, checkpoints as checkpoint_view, both charts as
    chart_slots draws them with reference)."""
    config = trainer.config
    return {"config": asdict(config), "seed": trainer.seed, **SCHEDULE, "step": trainer.step,
            "tokens": display_tokens(config), "sequence": display_words(config), **shown_as(display_labels(config)),
            "history": [rounded(h) for h in trainer.history], "charts": chart_slots(trainer.history, config, reference),
            "checkpoints": checkpoint_views(trainer, trainer.checkpoints)}


def recorded_run(config: TrainConfig | None = None, seed: int = 0) -> dict:
    """A whole run of SCHEDULE["steps"] steps, as run_view gives it (what the page ships)."""
    trainer = schedule_trainer(TrainConfig() if config is None else config, seed)
    trainer.run(SCHEDULE["steps"])
    return run_view(trainer)


def fitting_ablate(ablate: list, config: TrainConfig) -> list[tuple[int, int]]:
    """ablate's [layer, head] pairs as tuples, or a ValueError if one names a head this config does not have."""
    for layer, head in ablate:
        if layer >= config.n_layers or head >= config.n_heads:
            raise ValueError(f"ablate holds [layer, head] pairs with layer < {config.n_layers} and "
                             f"head < {config.n_heads}, got {[layer, head]}.")
    return [(layer, head) for layer, head in ablate]


@arguments(config=TRAIN_CONFIG, seed=SEED, params=Text(MAX_PARAMS_CHARS), ablate=ABLATE,
           text=Maybe(Text(MAX_TEXT_CHARS)), step=Whole(0, 2**31))
def training_evaluate(config: dict, seed: int, params: str, ablate=(), text: str | None = None, step: int = 0) -> dict:
    """A checkpoint's weights (params, encode_params' form) with and without the heads in ablate zeroed.

    Returns {"intact": evaluate(...), "ablated": evaluate(..., ablate)} on the evaluation batch of the
    run with this seed, "readout" (knockout_readout's words, empty without a knock-out), "outputs" (the
    ablated loss and scores as score_outputs' slots), and "patterns" (ablated, encoded as in checkpoint_view)
    with shown_as' "labels" and "names" of display_tokens, or of the reader's text (text_tokens) when text is given,
    and each head's caption ("captions", as captions says it; step: the checkpoint's).
    """
    config = TrainConfig(**config)
    weights = decode_params(params, config)
    tokens = eval_batch(config, seed)
    ablate = fitting_ablate(ablate, config)
    if text is None:
        shown, labels = display_tokens(config), display_labels(config)
    else:
        shown, labels = text_tokens(text, config)
    _, patterns = forward(weights, np.array([shown]), config, ablate)
    intact, ablated = rounded(evaluate(weights, tokens, config)), rounded(evaluate(weights, tokens, config, ablate))
    return {"intact": intact, "ablated": ablated, "readout": knockout_readout(intact, ablated, ablate),
            "outputs": score_outputs(ablated),
            "patterns": encode_patterns(patterns), **shown_as(labels),
            "captions": captions(config, step, ablate, None if text is None else YOUR_TEXT)}
