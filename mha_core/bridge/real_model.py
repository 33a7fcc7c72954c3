"""The real model live in the browser: the reader's text through SmolLM2-135M's 30 layers, one call a layer, so
that the page shows progress between layers and a newer text stops an older one (its run is simply not advanced).

The page's worker first writes the model's files (mha_core.llama.split_model's: model.gguf, embedding.gguf,
layer-00.gguf …) into MODEL_FOLDER; each layer's file is read and unpacked only when its turn comes, so about one
layer's weights are unpacked at a time.

    real_model_start(text)                -> {run, n_tokens, n_given, n_layers, progress}: tokenized, cut, embedded
    real_model_advance(run)               -> {layers_done, view, progress}: one more layer; view
                                             (mha_core.views.real_model) once all are done, else progress: the
                                             words of the layer that runs next
    real_model_pattern(run, layer, head)  -> {rows}: that head's weights, row i its query i's n_k = i + 1 weights,
                                             each a byte (round(255 · w)), as the page's built patterns travel
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from ..fields import Text, Whole, arguments
from ..llama.gguf import read_gguf
from ..llama.model import run_layers
from ..llama.scores import head_scores
from ..llama.tokenizer import tokenizer_from_gguf
from ..views.real_model import (MAX_TOKENS, N_HEADS, N_LAYERS, WEIGHT_LEVELS, progress_text, real_model_view,
                                token_texts)

MODEL_FOLDER = "/tmp/real-model"  # in the browser's Python: the worker writes the files here
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


def _model() -> dict:
    if not LOADED:
        LOADED["tokenizer"] = tokenizer_from_gguf(_read("model.gguf"))
        LOADED["embedding"] = _read("embedding.gguf")
    return LOADED


def _run(run: int) -> dict:
    if run not in RUNS:
        raise ValueError(f"run {run} is not the text in progress (a newer text replaced it)")
    return RUNS[run]


@arguments(text=Text(MAX_TEXT_CHARS))
def real_model_start(text: str) -> dict:
    """Tokenize text (nothing added), cut it to MAX_TOKENS tokens and set its run up; no layer runs yet."""
    model = _model()
    ids = model["tokenizer"].encode(text)
    if not ids:
        raise ValueError("text has no token the model knows")
    shown = ids[:MAX_TOKENS]
    layers = (_read(f"layer-{layer:02d}.gguf") for layer in range(N_LAYERS))  # each read as its turn comes
    RUNS.clear()
    run = next(RUN_IDS)
    RUNS[run] = {"ids": shown, "n_given": len(ids), "steps": run_layers(model["embedding"], shown, layers),
                 "patterns": []}
    return {"run": run, "n_tokens": len(shown), "n_given": len(ids), "n_layers": N_LAYERS,
            "progress": progress_text(0, len(shown))}


@arguments(run=RUN)
def real_model_advance(run: int) -> dict:
    """Run the next layer of run's text; after the last, its view (every head's scores)."""
    state = _run(run)
    if len(state["patterns"]) == N_LAYERS:
        raise ValueError(f"run {run} has run all {N_LAYERS} layers")
    _, _, pattern = next(state["steps"])  # [h, n, n]
    state["patterns"].append(pattern)
    done = len(state["patterns"])
    if done < N_LAYERS:
        return {"layers_done": done, "view": None, "progress": progress_text(done, len(state["ids"]))}
    scores = head_scores(np.stack(state["patterns"]), state["ids"])  # {kind: [n_layers, h]}
    view = real_model_view(token_texts(_model()["tokenizer"], state["ids"]), scores, state["n_given"])
    return {"layers_done": done, "view": view, "progress": ""}


@arguments(run=RUN, layer=Whole(0, N_LAYERS - 1), head=Whole(0, N_HEADS - 1))
def real_model_pattern(run: int, layer: int, head: int) -> dict:
    """Head (layer, head)'s weights on run's text: rows[i] its query i's weights on keys 0..i (causal)."""
    state = _run(run)
    if layer >= len(state["patterns"]):
        raise ValueError(f"layer {layer} has not run yet")
    levels = np.round(state["patterns"][layer][head] * WEIGHT_LEVELS).astype(np.uint8)  # [n, n]
    return {"rows": [row[:i + 1].tolist() for i, row in enumerate(levels)]}
