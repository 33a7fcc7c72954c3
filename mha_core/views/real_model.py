"""The real model's view: every head of SmolLM2-135M on a text, as the atlas shows it (mha_core.llama's numbers).

real_model_view(tokens, scores, n_given) -> {"data", "outputs"} (the form mha_core.views describes):
    data     n-tokens, and cut ("true" when the text was longer than MAX_TOKENS and only its start was run)
    outputs  tokens: one row per token (its text as the reader reads it, data-token-index);
             head-L-H for each of the 30 × 9 heads: its four scores as data-score-KIND and as CSS variables
             (--KIND, 0..1, the cell's colour), and its label (every score in words);
             best: the strongest head of each kind, in words; note: what was cut, if anything.
pattern_words() -> the words of an opened head's description, for widgets/real_model/pattern.js to fill in
messages()      -> the widget's other sentences ({name} marks what the page fills in: a download's bytes, an error)
progress_text(layer, n_tokens) -> "Layer 3 of 30, 12 tokens…", while the reader's text runs
load_text(n_bytes) -> "Load the model (98 MB)"
"""

from __future__ import annotations

import math

from ..fields import Array, Invalid, ListOf, Text, Whole, arguments
from . import decimal, plural

N_LAYERS, N_HEADS, N_KV_HEADS = 30, 9, 3  # SmolLM2-135M: 9 query heads in 3 key/value groups of 3
GROUP = N_HEADS // N_KV_HEADS
MAX_TOKENS = 128  # a text is cut to its first MAX_TOKENS tokens: 30 layers of 128 tokens take seconds in a browser
MAX_TOKEN_CHARS = 256  # one token's text (the longest in the vocabulary is far shorter)
KIND_NAMES = {"previous_token": "previous-token", "induction": "induction", "first_token": "first-token",
              "duplicate_token": "duplicate-token"}
KINDS = tuple(KIND_NAMES)  # the order the page offers them in: mha_core.llama.scores.SCORES, reordered


def head_name(layer: int, head: int) -> str:
    """'L17 H3'."""
    return f"L{layer} H{head}"


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
DRAWN = {"\n": "↵", "\t": "⇥"}  # a token's characters drawn as a sign on the pattern's edges


def pattern_words() -> dict:
    """The description of an opened head's pattern (its canvas's label) as templates the page fills: each query's
    strongest key as a pair, joined; a weight's text by its byte (weights[b] is b / 255 in 2 decimals), so that
    the page formats no number and the table stays 256 short texts whatever the text's length; drawn, the
    characters the pattern's edges draw as a sign (a newline as ↵)."""
    return {"sentence": "Each query token's strongest key: {pairs}.", "pair": "“{query}” → “{key}” {weight}",
            "separator": "; ", "weights": [decimal(b / WEIGHT_LEVELS) for b in range(WEIGHT_LEVELS + 1)],
            "drawn": DRAWN}


def messages() -> dict:
    """The widget's sentences that are not a view's: {name} is filled in by the page ({bytes}: the runtime's
    download progress, "4.8 of 98.0 MB"; {error}: a failure's own message)."""
    return {"downloading": "Downloading the model: {bytes}",
            "own": "Load the model to run your own text.",
            "memory": ("This device has not enough free memory to run the model (about 0.5 GB): the heads shown are "
                       "the ones computed when the page was built."),
            "failed": "The model could not run: {error}",
            "text-failed": "This text could not be shown: {error}",
            "pattern-failed": "The pattern could not be shown: {error}"}


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


@arguments(_scores_fit, tokens=ListOf(Text(MAX_TOKEN_CHARS, blank=True), MAX_TOKENS), scores=ScoresByKind(),
           n_given=Whole(1, 10**9))
def real_model_view(tokens, scores, n_given: int) -> dict:
    """The atlas for a text's tokens (as read, at most MAX_TOKENS) and every head's scores {kind: [30, 9]};
    n_given is how many tokens the whole text had (more than len(tokens) when it was cut)."""
    if not tokens or n_given < len(tokens):
        raise Invalid(f"n_given must be at least the {len(tokens)} tokens shown, and tokens not empty.")
    outputs = {"tokens": token_rows(tokens), "best": best_heads(scores),
               "note": {"text": cut_note(len(tokens), n_given), "hidden": n_given <= len(tokens)}}
    for layer in range(N_LAYERS):
        for head in range(N_HEADS):
            outputs[f"head-{layer}-{head}"] = head_slot(layer, head, scores)
    return {"data": {"n-tokens": str(len(tokens)), "cut": str(n_given > len(tokens)).lower()}, "outputs": outputs}
