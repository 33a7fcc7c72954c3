"""The real model as a laboratory: what it predicts at every token and its loss there, heads knocked out, the
heads that wrote a logit, and the logit lens (TransformerLens's names; n seq, h n_heads, V d_vocab).

A run is recorded layer by layer, so that everything after it reads the record and runs no layer again:

    record = {"tokens": [n],
              "resid":    [resid_pre_0 (the embedding), resid_post_0, …, resid_post_29]  each [n, d_model]
              "z":        each layer's [h, n, d_head]: its heads' weighted sums of values, before W_O
              "mlp_out":  each layer's [n, d_model]
              "W_O":      each layer's [h, d_head, d_model] (1.3 MB a layer: attribution unpacks no layer)
              "patterns": each layer's [h, n, n]}

    for record in recorded_run(gguf, tokens): ...         one layer a step (a caller reports progress between them)
    predictions(gguf, record)                              loss on every token, top-5, mean loss
    recorded_run(gguf, tokens, knocked=[(17, 3)], hide_first=False, clean=record)
                                                           a knock-out, from the first knocked layer of clean on
    logit_attribution(gguf, record, position, token)       the logit split into embedding, heads and MLPs
    logit_lens(gguf, record, position)                     each layer's residual stream's top token
    parse_heads("L17H3 l18 h6")                            the reader's text of heads -> [(17, 3), (18, 6)]
    knockout_effects(gguf, record, weights)                each head's own knock-out effect on the mean loss
    removable_heads(gguf, tokens, order, clean, weights, 0.1, 15)
                                                           how many heads go, in order, before the loss rises 0.1
    pruning_steps(gguf, record, weights, 0.1, 15)         both, a slice at a time (a caller reports progress and
                                                           may stop between two): what the page's button runs

Knock-out: a head is zero-ablated, its z set to 0 at every position (its share of W_O's input), as a forward
pre-hook on transformers' o_proj zeroing the head's 64 columns does. Hide the first token: every query i ≥ 1 may
not attend to key 0 (the test of an attention sink). Direct logit attribution: with the final RMSNorm's scale
of the clean run frozen (TransformerLens's apply_ln_to_stack), the final residual stream is a sum of parts
(embedding, 270 heads' z_h @ W_O[h], 30 MLPs; Llama has no biases), so the logit is a sum of the parts'
logits, each part / scale · w_norm · W_U[:, token].
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from ..fields import Array, Between, Declared, Flag, Invalid, ListOf, Maybe, Number, Pair, Text, Whole, arguments, shown
from ..rng import Random
from .gguf import tensor, tensor_rows
from .model import (LAYER_FILES, GGUFFile, Model, TokenIds, tokens_fit, block_parts, embed, layer_weights,
                    llama_config, rope_angles, unembed)

TOP = 5  # predictions kept at each position
MAX_LAYERS, MAX_HEADS = 1024, 1024  # bounds of the declarations; the model's own are checked against its config
HEADS = ListOf(Pair(Whole(0, MAX_LAYERS - 1), Whole(0, MAX_HEADS - 1), ("layer", "head")), MAX_LAYERS * MAX_HEADS)
MAX_HEADS_TEXT = 10_000  # characters of a reader's list of heads


class Record:
    """A record as recorded_run makes it (a dict with its keys, its lists as long as one another)."""
    KEYS = ("tokens", "resid", "z", "mlp_out", "W_O", "patterns")

    def check(self, name: str, value) -> dict:
        if not isinstance(value, dict) or set(value) != set(self.KEYS):
            raise Invalid(f"{name} must be a record of recorded_run ({', '.join(self.KEYS)}), got "
                          f"{type(value).__name__}.")
        if not len(value["resid"]) == len(value["z"]) + 1 == len(value["mlp_out"]) + 1:
            raise Invalid(f"{name} is not a whole record: its lists differ in length.")
        return value


def _complete(args: dict) -> None:
    """A record that predictions and attribution read has run every layer."""
    if "gguf" in args and "record" in args and len(args["record"]["z"]) != llama_config(args["gguf"]).n_layers:
        raise Invalid(f"record has run {len(args['record']['z'])} of the model's "
                      f"{llama_config(args['gguf']).n_layers} layers.")


def _position_fits(args: dict) -> None:
    n = len(args["record"]["tokens"])
    if "position" in args and args["position"] >= n:
        raise Invalid(f"position must be at most {n - 1} (the text has {n} tokens), got {args['position']}.")
    if args.get("token") is not None and args["token"] >= llama_config(args["gguf"]).d_vocab:
        raise Invalid(f"token must be an id below {llama_config(args['gguf']).d_vocab}, got {args['token']}.")


def _heads_fit(args: dict, name: str = "knocked") -> None:
    """The heads of name within the model; clean (to restart from) a whole run of the same tokens."""
    config = llama_config(args["gguf"])
    for layer, head in args.get(name) or ():
        if layer >= config.n_layers or head >= config.n_heads:
            raise Invalid(f"{name} holds L{layer}H{head}, not a head of this model (layers 0 to "
                          f"{config.n_layers - 1}, heads 0 to {config.n_heads - 1}).")
    _weights_fit(args)
    clean = args.get("clean")
    if clean is not None:
        if len(clean["z"]) != config.n_layers:
            raise Invalid(f"clean has run {len(clean['z'])} of the model's {config.n_layers} layers.")
        if not np.array_equal(clean["tokens"], args["tokens"]):
            raise Invalid("clean is a run of other tokens than tokens.")


def _weights_fit(args: dict) -> None:
    n_layers = llama_config(args["gguf"]).n_layers
    if args.get("weights") is not None and len(args["weights"]) != n_layers:
        raise Invalid(f"weights must hold the model's {n_layers} layers, got {len(args['weights'])}.")


def _layer_numbers_fit(args: dict) -> None:
    n_layers = llama_config(args["gguf"]).n_layers
    if args.get("layers") is not None and any(layer >= n_layers for layer in args["layers"]):
        raise Invalid(f"layers must be layers of the model, 0 to {n_layers - 1}, got {max(args['layers'])}.")


# ---------------------------------------------------------------- runs

def knocked_mask(knocked, n_layers: int, n_heads: int) -> np.ndarray:
    """[(layer, head), ...] -> [n_layers, h] bool, True where a head is knocked out."""
    mask = np.zeros((n_layers, n_heads), bool)
    for layer, head in knocked:
        mask[layer, head] = True
    return mask


def first_changed_layer(knocked, hide_first: bool, n_layers: int) -> int:
    """The first layer whose output a knock-out changes (the layers before it run as in the clean run):
    hiding the first token changes every layer's attention; no change at all, none (n_layers)."""
    return 0 if hide_first else min((layer for layer, _ in knocked), default=n_layers)


def hide_first_mask(n: int) -> np.ndarray:
    """[n, n] bool: every key but key 0 for queries i ≥ 1; query 0 keeps key 0 (its only one)."""
    mask = np.ones((n, n), bool)
    mask[1:, 0] = False
    return mask


def _start(clean, tokens, first: int, gguf) -> dict:
    if clean is None:
        return {"tokens": tokens, "resid": [embed(gguf, tokens)], "z": [], "mlp_out": [], "W_O": [], "patterns": []}
    return {"tokens": tokens, **{key: list(clean[key][:first]) for key in ("z", "mlp_out", "W_O", "patterns")},
            "resid": list(clean["resid"][:first + 1])}


class UnpackedOnUse(Sequence):
    """Every layer's weights as unpacked_layers gives them, each unpacked from read(layer) (a GGUFFile holding that
    layer) when a run asks for it, and not kept: for many runs where unpacked_layers' 425 MB would not fit (the
    browser's Python), at the cost of unpacking a layer each time (about 20 ms in CPython)."""

    def __init__(self, read: Callable[[int], GGUFFile], n_layers: int):
        self.read, self.n_layers = read, n_layers

    def __len__(self) -> int:
        return self.n_layers

    def __getitem__(self, layer: int) -> dict:
        if not 0 <= layer < self.n_layers:
            raise IndexError(layer)
        return layer_weights(self.read(layer), layer)


class Weights:
    """Every layer's weights, unpacked (layer_weights' dict for each layer in order), or UnpackedOnUse."""

    def check(self, name: str, value) -> Sequence:
        if isinstance(value, UnpackedOnUse):
            return value
        if not isinstance(value, (list, tuple)) or not all(isinstance(w, dict) and "W_O" in w for w in value):
            raise Invalid(f"{name} must be a list of layer_weights' dicts, one per layer, got {shown(value)}.")
        return list(value)


@arguments(tokens_fit, _heads_fit, gguf=Model(), tokens=TokenIds(), layers=LAYER_FILES, knocked=HEADS,
           hide_first=Flag(), clean=Maybe(Record()), weights=Maybe(Weights()))
def recorded_run(gguf, tokens, layers=None, knocked=(), hide_first=False, clean=None, weights=None):
    """Yield the record (one dict, growing) after each layer that runs.

    knocked: the (layer, head) pairs zero-ablated; hide_first: no query i ≥ 1 attends to key 0. clean: a whole
    record of the same tokens without either, from which the run restarts at first_changed_layer (its layers
    before are the same); without it every layer runs. layers: one GGUFFile per layer that runs, in order
    (split_model's layer files: a caller reads each as its turn comes); by default gguf itself. weights: every
    layer's weights already unpacked (unpacked_layers'), which a caller running many knock-outs keeps; then
    layers is not read.
    """
    config = llama_config(gguf)
    first = first_changed_layer(knocked, hide_first, config.n_layers) if clean is not None else 0
    record = _start(clean, tokens, first, gguf)
    mask = knocked_mask(knocked, config.n_layers, config.n_heads)  # [n_layers, h]
    cos, sin = rope_angles(len(tokens), config.d_head, config.rope_base)  # [n, d_head/2] each
    sources = iter([gguf] * (config.n_layers - first) if layers is None else layers)
    attend = hide_first_mask(len(tokens)) if hide_first else None  # [n, n]
    for layer in range(first, config.n_layers):
        source = next(sources, None) if weights is None else None
        if weights is None and not isinstance(source, GGUFFile):
            raise ValueError(f"layers must hold a GGUFFile for each of layers {first} to {config.n_layers - 1}")
        w = layer_weights(source, layer) if weights is None else weights[layer]
        parts = block_parts(record["resid"][-1], w, config, cos, sin, mask[layer] if mask[layer].any() else None,
                            attend)
        record["resid"].append(parts["resid_post"])
        record["z"].append(parts["z"])
        record["mlp_out"].append(parts["mlp_out"])
        record["W_O"].append(w["W_O"].reshape(config.n_heads, config.d_head, config.d_model))  # [h·d_head, d_model]
        record["patterns"].append(parts["pattern"])  # -> [h, d_head, d_model] (a copy: W_O is a transposed view)
        yield record


def run(gguf, tokens, layers=None, knocked=(), hide_first=False, clean=None, weights=None) -> dict:
    """recorded_run's record once every layer has run (clean itself when nothing is knocked out)."""
    record = clean
    for record in recorded_run.fn(gguf, tokens, layers, knocked, hide_first, clean, weights):
        pass
    return record


run = Declared(run, recorded_run.args, recorded_run.relations)


# ---------------------------------------------------------------- what the model predicts

def log_normalizer(logits: np.ndarray) -> np.ndarray:
    """[m, V] -> [m]: ln Σ exp(logits) per row (max + ln Σ exp(x − max)), so that ln p(t) = logits[t] − it."""
    top = logits.max(axis=-1)  # [m]
    return top + np.log(np.exp(logits - top[:, None]).sum(axis=-1))


def top_k(logits: np.ndarray, normalizer: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """[m, V] logits and their [m] log_normalizer -> (ids [m, k], probabilities [m, k]), the most likely first."""
    ids = np.argpartition(logits, -k, axis=-1)[:, -k:]  # [m, k], unordered
    order = np.argsort(-np.take_along_axis(logits, ids, axis=-1), axis=-1, kind="stable")
    ids = np.take_along_axis(ids, order, axis=-1)  # [m, k]
    return ids, np.exp(np.take_along_axis(logits, ids, axis=-1) - normalizer[:, None])


def _next_token_losses(logits: np.ndarray, normalizer: np.ndarray, tokens) -> np.ndarray:
    """[..., n − 1, V] logits at positions 0..n−2, their [..., n − 1] log_normalizer, tokens [n] -> [..., n − 1]
    losses in nats: position i's is −ln p(token i + 1 | tokens 0..i)."""
    index = np.broadcast_to(np.asarray(tokens)[1:, None], (*logits.shape[:-1], 1))  # [..., n − 1, 1]
    return normalizer - np.take_along_axis(logits, index, axis=-1)[..., 0]


def token_losses(logits: np.ndarray, normalizer: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """[n, V] logits at each position, their [n] log_normalizer, tokens [n] -> [n] losses in nats: loss[i] =
    −ln p(token i | tokens 0..i−1) for i ≥ 1, NaN at 0 (nothing predicts the first token)."""
    losses = np.full(len(tokens), np.nan)
    losses[1:] = _next_token_losses(logits[:-1], normalizer[:-1], tokens)
    return losses


@arguments(_complete, gguf=Model(), record=Record())
def predictions(gguf, record) -> dict:
    """What the model predicts after each token of a whole record: {losses [n] (NaN at 0), mean_loss (over
    tokens 1..n−1; NaN for one token), top_ids [n, TOP], top_probabilities [n, TOP]}; the logits [n, V] come
    from one pass over the unembedding, UNEMBED_ROWS rows at a time."""
    n = len(record["tokens"])
    logits = unembed(gguf, record["resid"][-1])  # [n, d_model] -> [n, V]
    normalizer = log_normalizer(logits)  # [n]
    losses = token_losses(logits, normalizer, record["tokens"])
    ids, probabilities = top_k(logits, normalizer, TOP)
    return {"losses": losses, "mean_loss": float(np.mean(losses[1:])) if n > 1 else float("nan"),
            "top_ids": ids, "top_probabilities": probabilities}


# ---------------------------------------------------------------- which parts wrote a logit

def final_scale(resid: np.ndarray, eps: float) -> np.ndarray:
    """[..., d_model] -> [...]: the final RMSNorm's divisor, √(mean(x²) + eps)."""
    return np.sqrt(np.mean(resid * resid, axis=-1) + np.float32(eps))


def logit_direction(gguf, resid_final: np.ndarray, token: int) -> np.ndarray:
    """The final residual stream at one position [d_model] -> the direction [d_model] whose dot product with any
    part of it is that part's share of token's logit: w_norm · W_U[:, token] / the clean run's scale."""
    config = llama_config(gguf)
    unembedding = tensor_rows(gguf, "token_embd.weight", np.array([token]))[0]  # [d_model]: W_U[:, token]
    return tensor(gguf, "output_norm.weight") * unembedding / final_scale(resid_final, config.eps)


@arguments(_complete, _position_fits, gguf=Model(), record=Record(), position=Whole(0, 2**31),
           token=Whole(0, 2**31))
def logit_attribution(gguf, record, position: int, token: int) -> dict:
    """token's logit at position, split: {embed, heads [n_layers, h], mlps [n_layers], logit}; embed + every
    head + every MLP = logit (the parts of the final residual stream through the frozen final norm)."""
    direction = logit_direction(gguf, record["resid"][-1][position], token)  # [d_model]
    heads = np.stack([np.einsum("hd,hdm,m->h", z[:, position], W_O, direction)  # [h, d_head] · [h, d_head, d_model]
                      for z, W_O in zip(record["z"], record["W_O"])])  # -> [n_layers, h]
    mlps = np.array([mlp_out[position] @ direction for mlp_out in record["mlp_out"]])  # [n_layers]
    return {"embed": float(record["resid"][0][position] @ direction), "heads": heads, "mlps": mlps,
            "logit": float(record["resid"][-1][position] @ direction)}


@arguments(_complete, _position_fits, gguf=Model(), record=Record(), position=Whole(0, 2**31))
def logit_lens(gguf, record, position: int) -> dict:
    """Each residual stream at position (the embedding, then after each layer: [n_layers + 1, d_model]) through
    the final norm and the unembedding, as if the model ended there: {top_ids [n_layers + 1], top_probabilities
    [n_layers + 1]}; the last is the model's own prediction. One pass over the unembedding for all the rows."""
    rows = np.stack([resid[position] for resid in record["resid"]])  # [n_layers + 1, d_model]
    logits = unembed(gguf, rows)  # [n_layers + 1, V]
    ids, probabilities = top_k(logits, log_normalizer(logits), 1)  # [n_layers + 1, 1] each
    return {"top_ids": ids[:, 0], "top_probabilities": probabilities[:, 0]}


# ---------------------------------------------------------------- many heads are redundant

@arguments(gguf=Model())
def unpacked_layers(gguf) -> list[dict]:
    """Every layer's weights, unpacked once (layer_weights' for each layer; 425 MB of float32): for many runs."""
    return [layer_weights(gguf, layer) for layer in range(llama_config(gguf).n_layers)]


def _but_last(record) -> dict:
    """A whole record cut to every position but the last, as a run of those tokens would record it: the mean
    loss reads no prediction made after the last token, and attention looks only back, so no other position
    depends on it: each run of a measure of many runs one position less."""
    return {"tokens": record["tokens"][:-1], "resid": [resid[:-1] for resid in record["resid"]],
            "z": [z[:, :-1] for z in record["z"]], "mlp_out": [out[:-1] for out in record["mlp_out"]],
            "W_O": record["W_O"], "patterns": [pattern[:, :-1, :-1] for pattern in record["patterns"]]}


def _mean_losses(gguf, tokens, clean, weights, knock_outs) -> list[float]:
    """The mean loss on tokens with each set of knock_outs knocked out (from clean, weights kept; every position
    but the last runs)."""
    head = _but_last(clean)
    return [float(_mean_losses_of(gguf, tokens, run.fn(gguf, head["tokens"], knocked=heads, clean=head,
                                                        weights=weights)["resid"][-1][None])[0])
            for heads in knock_outs]


def _order_fits(args: dict) -> None:
    _heads_fit(args, "order")


@arguments(_complete, _weights_fit, _layer_numbers_fit, gguf=Model(), record=Record(), weights=Weights(),
           layers=Maybe(ListOf(Whole(0, MAX_LAYERS - 1), MAX_LAYERS)))
def knockout_effects(gguf, record, weights, layers=None) -> np.ndarray:
    """[n_layers, h]: each head's own knock-out effect, the mean loss on the record's tokens with that head alone
    knocked out minus the record's (clean) mean loss; only the heads of layers if given (NaN elsewhere). A
    layer's heads run side by side, a batch of h texts each with one of them out, from that layer's residual
    stream on (all 270 heads of 40 tokens: about 20 s in CPython)."""
    config = llama_config(gguf)
    effects = np.full((config.n_layers, config.n_heads), np.nan)
    firsts = sorted(set(range(config.n_layers) if layers is None else layers))
    for first, resid in drained(_knocked_out_alone(record, weights, firsts, config)).items():
        effects[first] = _mean_losses_of(gguf, record["tokens"], resid)
    return effects - predictions.fn(gguf, record)["mean_loss"]


def _knocked_out_alone(record, weights, firsts: list[int], config, step=None):
    """Each head of the layers firsts (sorted) knocked out alone: a batch a layer, its h texts side by side (text
    b with head b out), each batch from its own layer's residual stream on, and each layer's weights read once
    for every batch it runs; every position but the last (_but_last). Yields step after each layer; returns
    {first: [h, n − 1, d_model] final residual streams}."""
    head = _but_last(record)
    cos, sin = rope_angles(len(head["tokens"]), config.d_head, config.rope_base)  # [n − 1, d_head/2] each
    one_out = np.eye(config.n_heads, dtype=bool)  # [batch = h, h]: text b has head b knocked out
    resids = {}
    for layer in range(firsts[0] if firsts else config.n_layers, config.n_layers):
        w = weights[layer]
        if layer in firsts:
            resids[layer] = np.broadcast_to(head["resid"][layer], (config.n_heads, *head["resid"][layer].shape))
        for first, resid in resids.items():  # [h, n − 1, d_model] each
            resids[first] = block_parts(resid, w, config, cos, sin, one_out if first == layer else None)["resid_post"]
        yield step
    return resids


def _mean_losses_of(gguf, tokens, resid) -> np.ndarray:
    """[b, n − 1, d_model] final residual streams of b texts of tokens [n], every position but the last ->
    [b] their mean losses (as predictions' mean_loss: position i predicts token i + 1)."""
    logits = unembed(gguf, resid.reshape(-1, resid.shape[-1]))  # [b·(n − 1), d_model] -> [b·(n − 1), V]
    normalizer = log_normalizer(logits).reshape(len(resid), -1)  # [b, n − 1]
    logits = logits.reshape(len(resid), len(tokens) - 1, -1)  # [b, n − 1, V]
    return _next_token_losses(logits, normalizer, tokens).astype(np.float64).mean(axis=-1)


REMOVAL = dict(gguf=Model(), tokens=TokenIds(), order=HEADS, clean=Record(), weights=Weights(), rise=Number(0, 100),
               step=Whole(1, MAX_LAYERS * MAX_HEADS))


@arguments(tokens_fit, _order_fits, **REMOVAL)
def removal_steps(gguf, tokens, order, clean, weights, rise: float, step: int):
    """removable_heads' work, one run at a time: yields ("together", count, mean loss) after each; returns its
    answer."""
    curve = {0: predictions.fn(gguf, clean)["mean_loss"]}
    below, above = 0, None
    for k in [*range(step, len(order), step), len(order)]:
        curve[k] = _mean_losses(gguf, tokens, clean, weights, [order[:k]])[0]
        yield "together", k, curve[k]
        if curve[k] - curve[0] >= rise:
            above = k
            break
        below = k
    while above is not None and above - below > 1:
        middle = (below + above) // 2
        curve[middle] = _mean_losses(gguf, tokens, clean, weights, [order[:middle]])[0]
        yield "together", middle, curve[middle]
        below, above = (middle, above) if curve[middle] - curve[0] < rise else (below, middle)
    return {"removable": below, "curve": dict(sorted(curve.items()))}


@arguments(tokens_fit, _order_fits, **REMOVAL)
def removable_heads(gguf, tokens, order, clean, weights, rise: float, step: int) -> dict:
    """How many heads of order can go (knocked out together, in order) before the mean loss on tokens rises by
    rise nats: {removable, curve {count: mean loss}}. The loss is looked at every step heads; between the last
    count below and the first at or above, bisection finds the first count that crosses (a loss that crosses,
    comes back and crosses again within one step would hide its first crossing). Runs after the crossing are
    not made: the curve ends there."""
    return drained(removal_steps.fn(gguf, tokens, order, clean, weights, rise, step))


def drained(steps):
    """A generator's return value, once it has yielded all it yields."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            return done.value


@arguments(effects=Array(ndim=(2,), values="any"))
def removal_order(effects) -> list[tuple[int, int]]:
    """[n_layers, h] own knock-out effects -> every head, the smallest effect first (ties in (layer, head) order)."""
    flat = np.argsort(effects, axis=None, kind="stable")
    return [(int(l), int(h)) for l, h in zip(*np.unravel_index(flat, effects.shape))]


ALONE_LAYERS = 6  # layers whose heads run alone side by side in pruning_steps: with weights unpacked on use, 90
# layers unpacked for SmolLM2's 30 rather than 465 one layer at a time; 6 batches of h texts kept (16 MB at 128 tokens)


@arguments(_complete, _weights_fit, gguf=Model(), record=Record(), weights=Weights(), rise=Number(0, 100),
           step=Whole(1, MAX_LAYERS * MAX_HEADS))
def pruning_steps(gguf, record, weights, rise: float, step: int):
    """Many heads are redundant, measured on the record's tokens as the page's build measures it, a slice at a
    time: each head knocked out alone (knockout_effects' work, ALONE_LAYERS layers' heads at a time, a layer's
    pass or a batch's unembedding a slice: yields ("alone", heads measured)), then the heads knocked out together
    in removal_order until the mean loss rises rise nats (removable_heads, a run a slice: yields ("together",
    count, mean loss)). Returns {effects [n_layers, h], order, removable, curve}. Its cost: every head's own
    knock-out (h · n_layers · (n_layers + 1) / 2 layers of the text but its last token, h · n_layers
    unembeddings, each layer's weights read once for ALONE_LAYERS layers' heads), then one run a look at the
    curve (n_heads / step of them at most, and a few more to bisect)."""
    config = llama_config(gguf)
    losses = np.full((config.n_layers, config.n_heads), np.nan)  # with each head alone knocked out
    measured = 0
    for start in range(0, config.n_layers, ALONE_LAYERS):
        firsts = list(range(start, min(start + ALONE_LAYERS, config.n_layers)))
        resids = yield from _knocked_out_alone(record, weights, firsts, config, ("alone", measured))
        for first, resid in resids.items():
            losses[first] = _mean_losses_of(gguf, record["tokens"], resid)
            measured += config.n_heads
            yield "alone", measured
    effects = losses - predictions.fn(gguf, record)["mean_loss"]
    order = removal_order(effects)
    found = yield from removal_steps.fn(gguf, record["tokens"], order, record, weights, rise, step)
    return {"effects": effects, "order": order, **found}


# ---------------------------------------------------------------- heads as a reader writes them

HEAD = re.compile(r"l\s*(\d+)\W*?h\s*(\d+)", re.IGNORECASE)  # "L17H3", "l17 h3", "L17.H3", "L17:H3"
SEPARATORS = re.compile(r"[\s,;/|&+]*")


@arguments(text=Text(MAX_HEADS_TEXT, blank=True), n_layers=Whole(1, MAX_LAYERS), n_heads=Whole(1, MAX_HEADS))
def parse_heads(text: str, n_layers: int = 30, n_heads: int = 9) -> list[tuple[int, int]]:
    """The heads a reader wrote ("L17H3 L18H6", case and separators free) -> [(layer, head), ...], sorted, each
    once; a ValueError names the first entry that is not a head, or not one of the model's."""
    heads, at = set(), 0
    for match in [*HEAD.finditer(text), None]:
        between = text[at:match.start() if match else len(text)]
        if not SEPARATORS.fullmatch(between):
            entry = between.strip(" \t\n,;/|&+").split()[0]
            raise Invalid(f"{entry!r:.40} is not a head: write each as L17H3 (layer 17, head 3).")
        if match is None:
            break
        layer, head = int(match[1]), int(match[2])
        if layer >= n_layers or head >= n_heads:
            raise Invalid(f"{match[0]!r} is not a head of this model: layers go from 0 to {n_layers - 1}, heads "
                          f"from 0 to {n_heads - 1}.")
        heads.add((layer, head))
        at = match.end()
    return sorted(heads)


@arguments(heads=HEADS, n_heads=Whole(1, MAX_HEADS), seed=Whole(0, 2**32 - 1))
def control_heads(heads, n_heads: int, seed: int) -> list[tuple[int, int]]:
    """As many heads as heads, drawn at random (seeded) from the same layers, none of heads: a knock-out's
    control, which tells what knocking out that many heads of those layers does anyway."""
    chosen = set(map(tuple, heads))
    random = Random(seed)
    control = set()
    for layer in sorted({layer for layer, _ in chosen}):
        wanted = sum(1 for l, _ in chosen if l == layer)
        others = [head for head in range(n_heads) if (layer, head) not in chosen]
        if len(others) < wanted:
            raise Invalid(f"heads holds {wanted} heads of layer {layer}: too many for as many others of its "
                          f"{n_heads}.")
        control |= {(layer, others[i]) for i in random.permutation(len(others))[:wanted]}
    return sorted(control)


@arguments(scores=Array(ndim=(2,), values="any"), minimum=Between(0, 1))
def strongest_heads(scores, minimum: float) -> list[tuple[int, int]]:
    """[n_layers, h] scores (NaN: none) -> the heads scoring at least minimum, [(layer, head), ...] in order."""
    with np.errstate(invalid="ignore"):
        return [(int(l), int(h)) for l, h in zip(*np.nonzero(scores >= minimum))]
