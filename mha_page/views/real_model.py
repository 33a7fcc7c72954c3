"""The real model's view: every head of SmolLM2-135M on a text, as the atlas shows it (mha_core.llama's numbers).

real_model_view(tokens, scores, n_given) -> {"data", "outputs", "pattern"} (the form mha_page.views describes):
    data     n-tokens, and cut ("true" when the text was longer than MAX_TOKENS and only its start was run)
    outputs  tokens: one row per token (its text as the reader reads it, data-token-index);
             head-L-H for each of the 30 × 9 heads: its four scores as data-score-KIND and as CSS variables
             (--KIND, 0..1, the cell's colour), and its label (every score in words);
             best: the strongest head of each kind, in words; note: what was cut, if anything.
    pattern  pattern_axes(tokens): the words of the table a head's pattern opens in, on this text
weight_texts(), pattern_axes(tokens) -> the words of an opened head's table: each byte's weight, the axes, the cells
messages()      -> the widget's other sentences ({name} marks what the page fills in: a download's bytes, an error)
progress_text(layer, n_tokens) -> "Layer 3 of 30, 12 tokens…", while the reader's text runs
load_text(n_bytes) -> "Load the model (98 MB)"
"""

from __future__ import annotations

import math

import numpy as np

from mha_core.llama.lab import control_heads, strongest_heads
from mha_core.fields import Array, Flag, Invalid, ListOf, Maybe, Number, Pair, Text, Whole, arguments, shown
from . import cell_names, charts, clip, css_number, decimal, head_name, plural

N_LAYERS, N_HEADS, N_KV_HEADS = 30, 9, 3  # SmolLM2-135M: 9 query heads in 3 key/value groups of 3
GROUP = N_HEADS // N_KV_HEADS
MAX_TOKENS = 128  # a text is cut to its first MAX_TOKENS tokens: 30 layers of 128 tokens take seconds in a browser
MAX_TOKEN_CHARS = 256  # one token's text (the longest in the vocabulary is far shorter)
KIND_NAMES = {"previous_token": "previous-token", "induction": "induction", "first_token": "first-token",
              "duplicate_token": "duplicate-token"}
KINDS = tuple(KIND_NAMES)  # the order the page offers them in: mha_core.llama.scores.SCORES, reordered


def score_text(value: float) -> str:
    """A score in words: '0.85', or 'none' where no query counts (a text with no repeated token)."""
    return "none" if math.isnan(value) else decimal(value)


def _scores_fit(args: dict) -> None:
    scores = args.get("scores")
    if scores is not None and (set(scores) != set(KINDS) or any(a.shape != (N_LAYERS, N_HEADS) for a in scores.values())):
        raise Invalid(f"scores must hold {', '.join(KINDS)}, each [{N_LAYERS}, {N_HEADS}]: one score a head.")


class ScoresByKind:
    """{kind: [n_layers, h] scores} (NaN: no query counted), each an Array."""

    def check(self, name: str, value) -> dict:
        if not isinstance(value, dict):
            raise Invalid(f"{name} must be a dict of scores by kind, got {type(value).__name__}.")
        return {kind: Array(ndim=(2,), values="any").check(f"{name}[{kind!r}]", v) for kind, v in value.items()}


WEIGHT_LEVELS = 255  # a pattern travels as bytes: round(255 · weight) (widget.quantized, real_model_pattern)
DRAWN = {"\n": "↵", "\t": "⇥"}  # a token's characters shown as a sign on an opened pattern's axes


def weight_texts() -> list[str]:
    """Each byte's weight as an opened pattern's cell reads it: texts[b] is b / WEIGHT_LEVELS in 2 decimals, so
    that the page formats no number and the table stays 256 short texts whatever the text's length."""
    return [decimal(b / WEIGHT_LEVELS) for b in range(WEIGHT_LEVELS + 1)]


def pattern_axes(tokens: list[str]) -> dict:
    """The words of an opened head's table (widgets/shared/grid.js): labels, each token as its axes show it (DRAWN's
    characters as their sign), and names, the cells' (cell_names of those labels)."""
    labels = ["".join(DRAWN.get(c, c) for c in token) for token in tokens]
    return {"labels": labels, "names": cell_names(labels)}


def messages() -> dict:
    """The widget's sentences that are not a view's: {name} is filled in by the page ({bytes}: the runtime's
    download progress, "4.8 of 98.0 MB"; {error}: a failure's own message)."""
    return {"downloading": "Downloading the model: {bytes}",
            "own": "Load the model to run your own text.",
            "memory": ("This device has not enough free memory to run the model (about 0.5 GB): the heads shown are "
                       "the ones computed when the page was built."),
            "failed": "The model could not run: {error}",
            "text-failed": "This text could not be shown: {error}",
            "pattern-failed": "The pattern could not be shown: {error}",
            "knockout-load": ("Load the model to knock heads out: the page's texts show the clean run, computed "
                              "when the page was built."),
            "knockout-failed": "These heads could not be knocked out",  # the failure's message follows (runtime/live.js)
            "pruning-failed": "How many heads can go could not be measured",  # the failure's message follows (runtime/live.js)
            "position-failed": "This position could not be shown"}  # the failure's message follows (runtime/live.js)


def progress_text(layer: int, n_tokens: int) -> str:
    """What the reader reads while layer (0-based) of their text's n_tokens runs: 'Layer 3 of 30, 12 tokens…'."""
    return f"Layer {layer + 1} of {N_LAYERS}, {plural(n_tokens, 'token')}…"


def load_text(n_bytes: int) -> str:
    """The Load button's words with the model's size on the wire: 'Load the model (98 MB)'."""
    return f"Load the model ({n_bytes / 1e6:.0f} MB)"


def token_texts(tokenizer, ids) -> list[str]:
    """Each token as the reader reads it: its bytes decoded (byte-level BPE's "Ġ" a space, "Ċ" a newline; a
    token that holds part of a character reads as U+FFFD), as transformers' tokenizer decodes it alone."""
    return [tokenizer.decode([int(i)]) for i in ids]


def token_rows(tokens: list[str]) -> dict:
    """The tokens slot: one row per token, its text as read, data-token-index its position."""
    return {"rows": [{"text": t, "data": {"token-index": i}} for i, t in enumerate(tokens)]}


def head_slot(layer: int, head: int, scores: dict) -> dict:
    """One head's cell: data-score-KIND (4 decimals; 0 where no query counts, as TransformerLens's score, which
    divides by every query, would be; the label says "none"), --KIND for its colour, its label in words."""
    values = {kind: float(scores[kind][layer][head]) for kind in KINDS}
    words = ", ".join(f"{KIND_NAMES[k]} {score_text(v)}" for k, v in values.items())
    return {"data": {f"score-{KIND_NAMES[k]}": f"{0.0 if math.isnan(v) else v:.4f}" for k, v in values.items()},
            "vars": {f"--{KIND_NAMES[k]}": 0 if math.isnan(v) else round(min(max(v, 0.0), 1.0), 3)
                     for k, v in values.items()},
            "label": f"Layer {layer}, head {head} (key/value group {head // GROUP}): {words}"}


def best_heads(scores: dict) -> str:
    """'Strongest on this text: previous-token L16 H0 (0.94); induction L18 H6 (0.89); …'."""
    parts = []
    for kind in KINDS:
        values = scores[kind]
        finite = [(float(values[l][h]), l, h) for l in range(N_LAYERS) for h in range(N_HEADS)
                  if not math.isnan(float(values[l][h]))]
        if finite:
            value, layer, head = max(finite)
            parts.append(f"{KIND_NAMES[kind]} {head_name(layer, head)} ({decimal(value)})")
        else:
            parts.append(f"{KIND_NAMES[kind]}: none (no token of this text repeats)")
    return "Strongest on this text: " + "; ".join(parts) + "."


def cut_note(n_shown: int, n_given: int) -> str:
    """What the reader is told when their text was cut, else ''."""
    if n_given <= n_shown:
        return ""
    return (f"Your text has {n_given:,} tokens; the model ran on its first {n_shown} "
            f"(at most {MAX_TOKENS}, so that a browser computes them in seconds).")


# ---------------------------------------------------------------- the laboratory: predictions, losses, knock-outs

TOP = 5  # predictions shown at a position (mha_core.llama.lab.TOP)
LOSS_SCALE = 12.0  # nats at which a token's loss bar (--loss, 0..1) is full: about ln of the vocabulary's size /
#                    0.9 (a uniform guess over 49,152 tokens costs 10.8)
LENS_ROWS = N_LAYERS + 1  # the embedding, then after each layer
SET_MIN = 0.4  # a head belongs to a kind's one-click set when its score on the text reaches this
SET_KINDS = ("induction", "previous_token")
CONTROL_SEED = 1  # the control's random heads (shown to the reader with it)


def default_position(n_tokens: int) -> int:
    """The position picked first: the last whose next token the text gives (so its logit is the text's own)."""
    return max(n_tokens - 2, 0)


def nats(value: float) -> str:
    """A loss in words: '2.31'."""
    return decimal(value)


def percent(probability: float) -> str:
    """'23.4%' ('<0.1%' for less)."""
    return "<0.1%" if probability < 0.0005 else f"{100 * probability:.1f}%"


def quoted(token: str) -> str:
    """A token as the sentences name it: “ cat” (cut if long)."""
    return f"“{clip(token)}”"


def _finite(value) -> bool:
    return value is not None and not math.isnan(value)


def loss_rows(tokens: list[str], losses, knocked=None) -> dict:
    """The tokens slot with each token's loss: data-loss (nats, 4 decimals) and --loss (0..1, of LOSS_SCALE) for
    tokens 1..n−1 (nothing predicts token 0); after a knock-out also data-loss-knocked and --loss-knocked, else
    both None (the binding removes them: a row a new text reuses keeps no loss of an older knock-out)."""
    rows = []
    for i, token in enumerate(tokens):
        row = {"text": token, "data": {"token-index": i, "loss-knocked": None}, "vars": {"--loss-knocked": None}}
        words = []
        for key, values in (("loss", losses), ("loss-knocked", knocked)):
            if values is not None and i > 0 and _finite(values[i]):
                row["data"][key] = f"{values[i]:.4f}"
                row["vars"][f"--{key}"] = css_number(min(max(values[i] / LOSS_SCALE, 0.0), 1.0))
                words.append(f"{'knocked out ' if key == 'loss-knocked' else ''}{nats(values[i])} nats")
        if words:
            row["label"] = f"{quoted(token)} (token {i}): loss {', '.join(words)}"
        rows.append(row)
    return {"rows": rows}


def mean_loss(losses) -> float:
    """The mean of the losses of tokens 1..n−1 (NaN for a text of one token)."""
    shown = [float(v) for v in losses[1:] if _finite(v)]
    return sum(shown) / len(shown) if shown else float("nan")


def mean_loss_slot(losses) -> dict:
    """The mean-loss slot: its words, and data-value the mean of data-loss over tokens 1..n−1."""
    mean = mean_loss(losses)
    if math.isnan(mean):
        return {"text": "One token: nothing to predict, no loss.", "value": ""}
    return {"text": f"Mean loss: {nats(mean)} nats per token, over the {plural(len(losses) - 1, 'token')} after "
                    f"the first (each predicted from those before it).", "value": f"{mean:.4f}"}


def knocked_words(heads: list, hide_first: bool) -> str:
    """'L17 H3 and L18 H6 knocked out, the first token hidden' ('Nothing knocked out' for none)."""
    parts = []
    if heads:
        names = [head_name(l, h) for l, h in heads]
        parts.append((", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]) + " knocked out")
    if hide_first:
        parts.append("the first token hidden from every later token")
    text = ", ".join(parts)
    return text[:1].upper() + text[1:] if parts else "Nothing knocked out"


def mean_loss_knocked_slot(losses, knocked, heads: list, hide_first: bool) -> dict:
    """The mean-loss-knocked slot: the knocked run's mean loss (data-value) against the clean run's, in words."""
    clean, mean = mean_loss(losses), mean_loss(knocked)
    if math.isnan(mean):
        return {"text": "One token: nothing to predict, no loss.", "value": "", "hidden": False}
    change = mean - clean
    sign = "+" if change >= 0.005 else ""
    return {"text": f"{knocked_words(heads, hide_first)}: mean loss {nats(mean)} nats per token ({sign}"
                    f"{decimal(change)} against {nats(clean)}).", "value": f"{mean:.4f}", "hidden": False}


def prediction_rows(ids, tokens: list[str], probabilities) -> dict:
    """A position's predictions, the most likely first: each row's data-rank (1..5), data-token-id,
    data-probability (4 decimals), --p (0..1, its bar), its text '“ cat” 23.4%'."""
    return {"rows": [{"text": f"{quoted(t)} {percent(float(p))}", "vars": {"--p": css_number(float(p))},
                      "data": {"rank": rank, "token-id": int(i), "probability": f"{float(p):.4f}"}}
                     for rank, (i, t, p) in enumerate(zip(ids, tokens, probabilities), start=1)]}


def signed(value: float) -> str:
    """'+1.20', '−0.35'."""
    text = decimal(value)
    return text if text.startswith("\u2212") or text == "0.00" else "+" + text


def attribution_words(target: str, position: int, attribution: dict, most: int = 3) -> str:
    """'The logit of “ cat” after token 12 (12.31), split: embedding +0.52; heads +8.10, most L18 H6 +2.10, …;
    MLPs +3.69, most L29 +1.50, …'."""
    heads = [(float(attribution["heads"][l][h]), l, h) for l in range(N_LAYERS) for h in range(N_HEADS)]
    mlps = [(float(v), l) for l, v in enumerate(attribution["mlps"])]
    top_heads = ", ".join(f"{head_name(l, h)} {signed(v)}" for v, l, h in sorted(heads, reverse=True)[:most])
    top_mlps = ", ".join(f"L{l} {signed(v)}" for v, l in sorted(mlps, reverse=True)[:most])
    return (f"The logit of {quoted(target)} after token {position} ({decimal(attribution['logit'])}), split: "
            f"embedding {signed(attribution['embed'])}; the {N_LAYERS * N_HEADS} heads "
            f"{signed(sum(v for v, _, _ in heads))}, most {top_heads}; the {N_LAYERS} MLPs "
            f"{signed(sum(v for v, _ in mlps))}, most {top_mlps}.")


def attribution_cells(attribution: dict) -> dict:
    """The heads slot: the grid's cells (layer by layer, head by head, as its data-cells selects them), each head's
    data-logit-attribution (4 decimals) and --attribution, its share over the largest share's size (−1..1), for
    colouring the grid by it; as lists, a position's 270 heads in a few kB (a position of a page's text travels
    in its positions asset)."""
    values = [float(v) for row in attribution["heads"] for v in row]  # [n_layers · h]
    largest = max(abs(v) for v in values) or 1.0
    return {"heads": {"cells": {"data": {"logit-attribution": [f"{v:.4f}" for v in values]},
                                "vars": {"--attribution": [css_number(v / largest) for v in values]}}}}


def lens_rows(ids, tokens: list[str], probabilities) -> dict:
    """The logit lens at a position: a row for the embedding, then one after each layer, its top token as if the
    model ended there (data-layer: −1 for the embedding; data-token-id, data-probability)."""
    rows = []
    for layer, (i, t, p) in enumerate(zip(ids, tokens, probabilities), start=-1):
        where = "the embedding" if layer < 0 else f"after layer {layer}"
        rows.append({"text": f"{where}: {quoted(t)} {percent(float(p))}", "vars": {"--p": css_number(float(p))},
                     "data": {"layer": layer, "token-id": int(i), "probability": f"{float(p):.4f}"}})
    return {"rows": rows}


def heads_text(heads) -> str:
    """[(17, 3), (18, 6)] -> 'L17H3 L18H6', as a reader types them (parse_heads reads it back)."""
    return " ".join(f"L{l}H{h}" for l, h in heads)


def head_sets(scores: dict) -> dict:
    """The one-click knock-out sets of a text: {data: {set-KIND, set-KIND-control: heads as text}, words}: the
    heads scoring at least SET_MIN as KIND (induction, previous-token) and as many random heads of the same
    layers (seed CONTROL_SEED), none of them; a set empty when no head scores so."""
    data, words = {}, []
    for kind in SET_KINDS:
        heads = strongest_heads(np.nan_to_num(scores[kind], nan=-1.0), SET_MIN)
        try:
            control = control_heads(heads, N_HEADS, CONTROL_SEED) if heads else []
        except ValueError:  # a layer with more than half its heads in the set: no control of as many
            control = []
        name = KIND_NAMES[kind]
        data |= {f"set-{name}": heads_text(heads), f"set-{name}-control": heads_text(control)}
        words.append(f"{plural(len(heads), name + ' head')} (score at least {SET_MIN:g})"
                     + (f": {', '.join(head_name(l, h) for l, h in heads)}" if heads else ""))
    control = f"A control knocks out as many random heads of the same layers (seed {CONTROL_SEED})."
    return {"data": data, "words": "On this text: " + "; ".join(words) + ". " + control}


def predictions_outputs(tokens: list[str], position: int, predictions: dict) -> dict:
    """position-words and predictions (prediction_rows) at position."""
    return {"position-words": f"After {quoted(tokens[position])} (token {position}) the model predicts:",
            "predictions": prediction_rows(**predictions)}


class Predictions:
    """{ids, tokens, probabilities}: rows top tokens of one position, the most likely first (TOP predictions;
    the lens's LENS_ROWS)."""

    def __init__(self, rows: int = TOP):
        self.rows = rows

    def check(self, name: str, value) -> dict:
        if not isinstance(value, dict) or set(value) != {"ids", "tokens", "probabilities"} or not (
                len(value["ids"]) == len(value["tokens"]) == len(value["probabilities"]) == self.rows):
            raise Invalid(f"{name} must hold ids, tokens and probabilities, {self.rows} of each, got {shown(value)}.")
        return value


@arguments(tokens=ListOf(Text(MAX_TOKEN_CHARS, blank=True), MAX_TOKENS), predictions=ListOf(Predictions(), MAX_TOKENS))
def predictions_views(tokens, predictions) -> list[dict]:
    """For a page's text, read without the model: each position's view of its predictions ({data: {position},
    outputs: {position-words, predictions}}), predictions[i] those after token i."""
    if len(predictions) != len(tokens):
        raise Invalid(f"predictions must hold one entry a token ({len(tokens)}), got {len(predictions)}.")
    return [{"data": {"position": str(p)}, "outputs": predictions_outputs(tokens, p, given)}
            for p, given in enumerate(predictions)]


class LabAt:
    """What the lab shows at one position (position_view's at): {position, predictions {ids, tokens,
    probabilities} (TOP each), target {id, text}, attribution {embed, heads [30][9], mlps [30], logit}, lens
    {ids, tokens, probabilities} (LENS_ROWS each)}; lens and knocked (the knocked run's predictions there) may be
    left out."""
    KEYS = {"position", "predictions", "target", "attribution"}

    def check(self, name: str, value) -> dict:
        if not isinstance(value, dict) or not self.KEYS <= set(value) <= self.KEYS | {"knocked", "lens"}:
            raise Invalid(f"{name} must hold {', '.join(sorted(self.KEYS))} (and lens, knocked), got {shown(value)}.")
        try:
            heads = value["attribution"]["heads"]
            fits = len(heads) == N_LAYERS and all(len(row) == N_HEADS for row in heads) and (
                "lens" not in value or len(value["lens"]["ids"]) == LENS_ROWS)
            for key in ("predictions", *(k for k in ("lens", "knocked") if k in value)):
                Predictions(LENS_ROWS if key == "lens" else TOP).check(f"{name}'s {key}", value[key])
        except (TypeError, KeyError):
            fits = False
        if not fits:
            raise Invalid(f"{name}'s attribution must be [{N_LAYERS}][{N_HEADS}] (with embed, mlps, logit), its "
                          f"predictions {TOP} rows, its lens {LENS_ROWS}.")
        return value


@arguments(tokens=ListOf(Text(MAX_TOKEN_CHARS, blank=True), MAX_TOKENS), at=LabAt())
def position_view(tokens, at: dict) -> dict:
    """The picked position's slots: data-position; predictions (prediction rows, the clean run's), and
    predictions-knocked after a knock-out (else hidden and empty); position-words; attribution (in words) and every head's
    data-logit-attribution (heads: attribution_cells'); lens (its rows), if at holds it."""
    p = at["position"]
    if p >= len(tokens):
        raise Invalid(f"at's position must be below the {len(tokens)} tokens, got {p}.")
    following = "the token that follows in the text" if p + 1 < len(tokens) else "the model's top prediction"
    outputs = {**predictions_outputs(tokens, p, at["predictions"]),
               "attribution": attribution_words(at["target"]["text"], p, at["attribution"]),
               "attribution-target": f"{quoted(at['target']['text'])}, {following}",
               **attribution_cells(at["attribution"])}
    if "lens" in at:
        outputs["lens"] = lens_rows(**at["lens"])
    outputs["predictions-knocked"] = ({**prediction_rows(**at["knocked"]), "hidden": False} if "knocked" in at
                                      else {"rows": [], "hidden": True})  # none, or still running: none shown
    return {"data": {"position": str(p)}, "outputs": outputs}


LOSSES = ListOf(Maybe(Number(-1.0, 1e6)), MAX_TOKENS)  # nats per token; null (or NaN) for token 0


@arguments(tokens=ListOf(Text(MAX_TOKEN_CHARS, blank=True), MAX_TOKENS), losses=LOSSES, knocked=LOSSES,
           heads=ListOf(Pair(Whole(0, N_LAYERS - 1), Whole(0, N_HEADS - 1), ("layer", "head")), N_LAYERS * N_HEADS),
           hide_first=Flag())
def knockout_view(tokens, losses, knocked, heads, hide_first: bool) -> dict:
    """A knock-out's slots beside the clean run: the tokens with data-loss and data-loss-knocked,
    mean-loss-knocked (data-value), knocked (in words) and each head's data-knocked ("true" for those out)."""
    if not len(tokens) == len(losses) == len(knocked):
        raise Invalid(f"tokens, losses and knocked must be as long as one another, got {len(tokens)}, "
                      f"{len(losses)}, {len(knocked)}.")
    out = set(map(tuple, heads))
    outputs = {"tokens": loss_rows(tokens, losses, knocked), "mean-loss": mean_loss_slot(losses),
               "mean-loss-knocked": mean_loss_knocked_slot(losses, knocked, heads, hide_first),
               "knocked": knocked_words(heads, hide_first) + "."}
    outputs |= {f"head-{l}-{h}": {"data": {"knocked": str((l, h) in out).lower()}}
                for l in range(N_LAYERS) for h in range(N_HEADS)}
    return {"data": {"knocked": str(bool(heads) or hide_first).lower()}, "outputs": outputs}


def _lab_fits(args: dict) -> None:
    n = len(args.get("tokens") or ())
    if args.get("losses") is not None and len(args["losses"]) != n:
        raise Invalid(f"losses must hold one loss a token ({n}), got {len(args['losses'])}.")


@arguments(_scores_fit, _lab_fits, tokens=ListOf(Text(MAX_TOKEN_CHARS, blank=True), MAX_TOKENS), scores=ScoresByKind(),
           n_given=Whole(1, 10**9), losses=Maybe(ListOf(Maybe(Number(-1.0, 1e6)), MAX_TOKENS)), at=Maybe(LabAt()))
def real_model_view(tokens, scores, n_given: int, losses=None, at=None) -> dict:
    """The atlas for a text's tokens (as read, at most MAX_TOKENS) and every head's scores {kind: [30, 9]};
    n_given is how many tokens the whole text had (more than len(tokens) when it was cut). With losses (one a
    token, None at 0) and at (position_view's: a position's predictions, attribution and lens), also what the
    model predicts: each token's data-loss, mean-loss, and the position's slots (data-position, and
    data-position-max and data-position-error, its refusal in words, for the position's input); no head knocked
    out; the one-click sets (head_sets: data-set-KIND, data-set-KIND-control, and sets in words)."""
    if not tokens or n_given < len(tokens):
        raise Invalid(f"n_given must be at least the {len(tokens)} tokens shown, and tokens not empty.")
    outputs = {"tokens": token_rows(tokens), "best": best_heads(scores),
               "note": {"text": cut_note(len(tokens), n_given), "hidden": n_given <= len(tokens)}}
    for layer in range(N_LAYERS):
        for head in range(N_HEADS):
            outputs[f"head-{layer}-{head}"] = head_slot(layer, head, scores)
    data = {"n-tokens": str(len(tokens)), "cut": str(n_given > len(tokens)).lower()}
    if losses is not None:
        sets = head_sets(scores)
        outputs |= {"tokens": loss_rows(tokens, losses), "mean-loss": mean_loss_slot(losses),
                    "mean-loss-knocked": {"text": "", "value": "", "hidden": True}, "knocked": "",
                    "predictions-knocked": {"rows": [], "hidden": True},
                    "sets": sets["words"]}
        data |= {"knocked": "false", "position-max": str(len(tokens) - 1), **sets["data"],
                 "position-error": f"Choose a position from 0 to {len(tokens) - 1}: the text's tokens, counted from 0."}
        if at is not None:
            outputs |= position_view.fn(tokens, at)["outputs"]
            cells = outputs.pop("heads")["cells"]  # into each head's own slot, beside its scores (the template's)
            for i, name in enumerate(f"head-{l}-{h}" for l in range(N_LAYERS) for h in range(N_HEADS)):
                outputs[name]["data"] |= {"logit-attribution": cells["data"]["logit-attribution"][i], "knocked": "false"}
                outputs[name]["vars"]["--attribution"] = cells["vars"]["--attribution"][i]
        data["position"] = str(at["position"]) if at is not None else ""
    return {"data": data, "outputs": outputs, "pattern": pattern_axes(tokens)}


# ---------------------------------------------------------------- many heads are redundant: how many go

PRUNING_RISE, PRUNING_STEP = 0.1, 15  # nats the mean loss may rise; heads between two looks at the loss
LAST_HEADS = 20  # the heads that go last, whose kinds the words count
PRUNING_CHART = {"width": 320, "height": 150, "left": 44, "right": 310, "top": 10, "bottom": 130}
N_ALL = N_LAYERS * N_HEADS


def pruning_runs() -> int:
    """The runs of the model the measure takes at most: one a head (from its layer on), then one a look at the
    curve (every PRUNING_STEP heads) and those that bisect the last step."""
    return N_ALL + math.ceil(N_ALL / PRUNING_STEP) + math.ceil(math.log2(PRUNING_STEP))


def pruning_cost() -> str:
    """The button's words: what it measures and what that costs."""
    return (f"Measure how many heads can go on this text: {N_ALL} runs with one head knocked out, then at most "
            f"{pruning_runs() - N_ALL} with many (minutes)")


def pruning_progress(step: tuple) -> str:
    """Words for the slice of the measure that has just run (mha_core.llama.lab.pruning_steps' yields):
    ("alone", heads measured) or ("together", heads knocked out, mean loss), and for none yet, ("alone", 0)."""
    if step[0] == "alone":
        return f"Each head knocked out alone: {step[1]} of {N_ALL} heads measured…"
    return f"Heads knocked out together, the least costly first: {step[1]} out, mean loss {nats(step[2])} nats…"


def kinds_last(order, scores: dict, minimum: float, last: int = LAST_HEADS) -> dict:
    """How many of the last heads of order score at least minimum as each kind: {kind: count}."""
    return {kind: sum(1 for l, h in order[-last:] if scores[kind][l][h] >= minimum) for kind in KINDS}


def pruning_words(curve: dict, removable: int, order, scores: dict) -> str:
    """The answer in words: how many heads go before the mean loss rises PRUNING_RISE, the loss there, the kinds
    of the LAST_HEADS that go last (scoring at least SET_MIN) and the last of all."""
    counts = kinds_last(order, scores, SET_MIN)
    kinds = [f"{counts[kind]} {KIND_NAMES[kind]}" for kind in KINDS]
    last = ", ".join(head_name(l, h) for l, h in order[::-1][:5])
    return (f"{removable} of the {N_ALL} heads can go, the least costly first, before the mean loss rises "
            f"{PRUNING_RISE:g} nats: it goes from {nats(curve[0])} to {nats(curve[removable])} nats per token. Of "
            f"the {LAST_HEADS} heads that go last (the costliest alone), {', '.join(kinds[:-1])} and {kinds[-1]} "
            f"heads (a score of at least {SET_MIN:g}); the last of all: {last}.")


def pruning_chart(curve: dict, removable: int) -> dict:
    """The chart's slots: the mean loss against the clean run's (its rise, nats) over the heads knocked out
    (0 to N_ALL), the rise's limit and the count that stays below it; values past the chart run along its edge."""
    clean = curve[0]
    lowest = min(v - clean for v in curve.values())  # the chart's bottom: half a PRUNING_RISE or more below it
    low = min(-PRUNING_RISE, math.floor(lowest / PRUNING_RISE - 0.5) * PRUNING_RISE)
    high = 3 * PRUNING_RISE
    top = high - low
    box = PRUNING_CHART
    y = lambda rise: round(charts.y_of(rise - low, top, box), 1)  # noqa: E731
    x = round(charts.x_of(removable, N_ALL, box), 1)
    steps = sorted(curve)
    points = charts.polyline(steps, [curve[k] - clean - low for k in steps], N_ALL, top, box)
    return {"pruning-line": {"attrs": {"points": points}},
            "pruning-zero": {"attrs": {"y1": y(0), "y2": y(0)}},
            "pruning-zero-label": {"text": "0", "attrs": {"y": y(0) + 4}},
            "pruning-limit": {"attrs": {"y1": y(PRUNING_RISE), "y2": y(PRUNING_RISE)}},
            "pruning-limit-label": {"text": f"+{PRUNING_RISE:g}", "attrs": {"y": y(PRUNING_RISE) + 4}},
            "pruning-low-label": {"text": decimal(low, 1).replace("-", "\u2212"), "attrs": {"y": y(low) + 4}},
            "pruning-removable": {"attrs": {"x1": x, "x2": x}},
            "pruning-removable-label": {"text": str(removable), "attrs": {"x": x}}}


CURVE = ListOf(Pair(Whole(0, N_ALL), Number(-1.0, 1e6), ("count", "mean loss")), N_ALL + 1)


def _curve_fits(args: dict) -> None:
    counts = [k for k, _ in args["curve"]]
    if not counts or counts[0] != 0 or counts != sorted(set(counts)) or args["removable"] not in counts:
        raise Invalid("curve must start at 0 heads, its counts rising, and hold removable's.")


@arguments(_curve_fits, curve=CURVE, removable=Whole(0, N_ALL),
           order=ListOf(Pair(Whole(0, N_LAYERS - 1), Whole(0, N_HEADS - 1), ("layer", "head")), N_ALL),
           scores=ScoresByKind(), button=Flag())
def pruning_view(curve, removable: int, order, scores, button: bool) -> dict:
    """How many heads can go on a text (mha_core.llama.lab.pruning_steps' answer: curve as [[count, mean loss],
    ...], removable, order; scores the text's {kind: [30, 9]}): the chart and its words (data-value: removable),
    shown; the button
    shown if button (the reader's own text, which can run it again), else hidden."""
    losses = {int(k): float(v) for k, v in curve}
    # data-order: the heads in the order they went (layer.head each), which heads of near-equal effect (within
    # float32's rounding) may take either way round from one NumPy build to another
    order_data = " ".join(f"{layer}.{head}" for layer, head in order)
    return {"outputs": {**pruning_hidden(button), "pruning-chart": {"hidden": False, "data": {"order": order_data}},
                        **pruning_chart(losses, removable),
                        "pruning": {"text": pruning_words(losses, removable, order, scores), "value": removable,
                                    "hidden": False}}}


def pruning_hidden(button: bool) -> dict:
    """No curve for this text (yet): the chart and its words hidden; the button shown when it can run (the
    reader's own text, run), else hidden."""
    return {"pruning-chart": {"hidden": True, "data": {"order": None}}, "pruning": {"text": "", "value": "", "hidden": True},
            "prune-cost": pruning_cost(), "pruning-controls": {"hidden": not button}}
