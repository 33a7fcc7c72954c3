"""The real model's atlas as built: every head's scores and token in the page are mha_core.llama's on the text shown
(run here again; tests/core/llama compares mha_core's with transformers', an independent implementation of the
same GGUF, on these very texts); nothing is added to the tokens; the patterns' asset holds the same weights; the
heads are kept in .cache/ so that a rebuild does not run the model; each claim the page makes in words holds in
the scores; the model's files as the page lists them (sizes, sha256) are split_model's, which run as the whole
model."""
from __future__ import annotations

import hashlib
import html
import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mha_core.llama import head_scores, lab, read_gguf, run_layers, tokenizer_from_gguf
from mha_page.views.real_model import KIND_NAMES, KINDS
from sitebuild.assets import fetch_model

ROOT = Path(__file__).resolve().parents[2]
PAGE = "heads-of-a-real-model/index.html"
HEAD = re.compile(r'<button type="button" class="mha-rm__head" ([^>]*)>')
ATTR = re.compile(r'data-([a-z-]+)="([^"]*)"')


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"real_model_{name}", ROOT / f"widgets/real_model/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def page(plain_site) -> str:
    return (plain_site / PAGE).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def gguf():
    return read_gguf(fetch_model())


@pytest.fixture(scope="module")
def shown(page) -> dict:
    """{kind: [30, 9]} of the built page's head elements, and its tokens and text."""
    heads = [dict(ATTR.findall(attrs)) for attrs in HEAD.findall(page)]
    assert len(heads) == 270 and {(int(h["layer"]), int(h["head"])) for h in heads} == {(l, h) for l in range(30) for h in range(9)}
    scores = {kind: np.zeros((30, 9)) for kind in KINDS}
    for h in heads:
        for kind in KINDS:
            scores[kind][int(h["layer"]), int(h["head"])] = float(h[f"score-{KIND_NAMES[kind]}"])
    rows = re.findall(r'<li ([^>]*data-token-index="\d+"[^>]*)>([^<]*)</li>', page)
    tokens = [html.unescape(t) for _, t in rows]
    losses = [float(dict(ATTR.findall(attrs)).get("loss", "nan")) for attrs, _ in rows]
    text = html.unescape(re.search(r'<textarea [^>]*name="text"[^>]*>([^<]*)</textarea>', page).group(1))
    return {"scores": scores, "tokens": tokens, "text": text, "losses": np.array(losses)}


@pytest.fixture(scope="module")
def ours(shown, gguf) -> dict:
    ids = tokenizer_from_gguf(gguf).encode(shown["text"])
    patterns = np.stack([p for _, _, p in run_layers(gguf, ids)])
    return {"ids": ids, "patterns": patterns, "scores": head_scores(patterns, ids)}


def test_the_page_s_scores_are_mha_core_s_on_the_text_it_shows(shown, ours):
    for kind in KINDS:
        np.testing.assert_allclose(shown["scores"][kind], ours["scores"][kind], rtol=0, atol=5e-5, err_msg=kind)


def test_the_page_s_tokens_are_mha_core_s(shown, ours, gguf):
    """mha_core's tokenizer and heads are transformers' on the page's texts (tests/core/llama)."""
    tokenizer = tokenizer_from_gguf(gguf)
    assert shown["tokens"] == [tokenizer.decode([i]) for i in ours["ids"]]  # nothing added, each as read


def test_the_page_s_losses_predictions_and_attribution_are_mha_core_s(page, shown, ours, gguf):
    """Each token's data-loss, mean-loss's data-value, the picked position's predictions and every head's
    data-logit-attribution are mha_core.llama.lab's on the text the page shows."""
    record = lab.run(gguf, ours["ids"])
    expected = lab.predictions(gguf, record)
    np.testing.assert_allclose(shown["losses"], expected["losses"], rtol=0, atol=1e-4)  # NaN at 0 on both
    mean = float(re.search(r'data-output="mean-loss" data-value="([^"]+)"', page).group(1))
    assert mean == pytest.approx(np.mean(shown["losses"][1:]), abs=1e-4)
    position = int(re.search(r'data-mha-widget="real-model"[^>]* data-position="(\d+)"', page).group(1))
    predictions = [dict(ATTR.findall(a)) for a in re.findall(r'<li data-output="prediction" ([^>]*)>', page)]
    assert [int(p["rank"]) for p in predictions] == [1, 2, 3, 4, 5]
    assert [int(p["token-id"]) for p in predictions] == expected["top_ids"][position].tolist()
    np.testing.assert_allclose([float(p["probability"]) for p in predictions], expected["top_probabilities"][position],
                               atol=1e-4)
    heads = [dict(ATTR.findall(attrs)) for attrs in HEAD.findall(page)]
    shown_heads = np.zeros((30, 9))
    for h in heads:
        shown_heads[int(h["layer"]), int(h["head"])] = float(h["logit-attribution"])
    attribution = lab.logit_attribution(gguf, record, position, ours["ids"][position + 1])
    np.testing.assert_allclose(shown_heads, attribution["heads"], rtol=0, atol=1e-4)


def test_the_patterns_asset_holds_each_head_s_weights(plain_site, ours):
    data = np.frombuffer((plain_site / "assets/widgets/real_model/patterns-repeated.bin").read_bytes(), np.uint8)
    n = len(ours["ids"])
    heads = data.reshape(30, 9, n * (n + 1) // 2) / 255
    rows, cols = np.tril_indices(n)
    np.testing.assert_allclose(heads, ours["patterns"][..., rows, cols], atol=0.5 / 255 + 1e-6)


def test_the_heads_are_kept_in_the_cache_keyed_on_the_model_and_the_sources():
    widget = load("widget")
    key = widget.cache_key()
    kept = widget.CACHE / f"real-model-heads-{key}.json"
    assert kept.exists()  # the build above made it
    assert json.loads(kept.read_bytes()) == widget.heads()
    assert load("widget").cache_key() == key  # the same sources, the same key


def test_the_model_s_files_are_listed_with_their_sha256_and_run_as_the_whole(plain_site, gguf, ours):
    page_data = json.loads(html.unescape(re.search(r"<template[^>]*\bdata-real-model-data\b[^>]*>(.*?)</template>",
                                                   (plain_site / PAGE).read_text(encoding="utf-8"), re.S).group(1)))
    folder = plain_site / "assets/widgets/real_model" / page_data["dir"]
    names = ["model.gguf", "embedding.gguf", *(f"layer-{i:02d}.gguf" for i in range(30))]
    assert sorted(page_data["files"]) == sorted(names)
    for name, f in page_data["files"].items():
        data = (folder / name).read_bytes()
        assert f == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    layers = (read_gguf((folder / f"layer-{i:02d}.gguf").read_bytes()) for i in range(30))
    ids = tokenizer_from_gguf(read_gguf((folder / "model.gguf").read_bytes())).encode("A few words.")
    split = [p for _, _, p in run_layers(read_gguf((folder / "embedding.gguf").read_bytes()), ids, layers)]
    np.testing.assert_array_equal(np.stack(split), np.stack([p for _, _, p in run_layers(gguf, ids)]))


def test_each_claim_the_page_makes_in_words_holds():
    facts, widget = load("facts"), load("widget")
    repeated, prose = widget.scores_of("repeated"), widget.scores_of("prose")
    role = facts.ROLE_MIN

    def first_layer(scores):
        return int(np.flatnonzero((scores >= role).any(axis=1))[0])

    # Where each kind sits: previous-token heads come long before induction heads; duplicate-token heads end before.
    assert first_layer(repeated["previous_token"]) < first_layer(repeated["induction"]) - 5
    assert facts.layers_of(repeated["duplicate_token"] >= role)[1] < first_layer(repeated["induction"])
    # One key/value group alike: L17 H3-H5 are induction heads, the other heads of layer 17 are not.
    assert (repeated["induction"][17, 3:6] >= role).all() and (repeated["induction"][17, [0, 1, 2, 6, 7, 8]] < role).all()
    # Attention sinks: many heads rest on the first token on prose, few in layers 0 and 1.
    assert int((prose["first_token"] >= facts.SINK_MIN).sum()) > 270 / 4
    assert prose["first_token"][:2].mean() < 0.05 < 0.3 < prose["first_token"][2:].mean()
    # What a score cannot say: on prose no head reaches the threshold for induction.
    assert np.nanmax(prose["induction"]) < role < np.nanmax(repeated["induction"])
    # The repeated text is its words twice, and the toy comparison names the stronger real head.
    text = widget.texts()["repeated"]
    words = text.split()
    assert len(words) == 2 * widget.N_RANDOM and words[:widget.N_RANDOM] == words[widget.N_RANDOM:]


def number(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def test_one_group_s_heads_write_different_things():
    """The OV circuits' cosines, from the GGUF as gguf-py reads it (an independent reader): the group shares
    attn_v, each query head has its own 64 columns of attn_output ([out, in] as stored)."""
    import gguf as reference
    from gguf.quants import dequantize as reference_dequantize
    from sitebuild.assets import fetch_model as path

    facts = load("facts").facts()
    stored = {t.name: reference_dequantize(t.data, t.tensor_type) for t in reference.GGUFReader(path()).tensors
              if t.name in ("blk.17.attn_v.weight", "blk.17.attn_output.weight")}
    v, o = stored["blk.17.attn_v.weight"], stored["blk.17.attn_output.weight"]  # [192, 576], [576, 576]
    circuit = {h: (v[64:128].T @ o[:, 64 * h:64 * (h + 1)].T).ravel() for h in (3, 4, 5)}  # kv head 1 for heads 3-5
    expected = [circuit[a] @ circuit[b] / np.linalg.norm(circuit[a]) / np.linalg.norm(circuit[b])
                for a, b in ((3, 4), (3, 5), (4, 5))]
    shown = [number(x) for x in re.split(r", | and ", facts["rm_group_ov_cosines"])]
    np.testing.assert_allclose(shown, expected, atol=0.005 + 1e-9)
    assert max(expected) < 0.5  # three heads that attend alike write far from alike
    assert facts["rm_d_model"] == str(v.shape[1])


def test_the_induction_heads_found_depend_on_the_text(gguf):
    """The spread the page states: the other random-word texts, run again here; each count and the heads
    that score as induction heads on every text, the page's own included."""
    facts, widget = load("facts"), load("widget")
    tokenizer = tokenizer_from_gguf(gguf)
    masks = [widget.scores_of("repeated")["induction"] >= facts.ROLE_MIN]
    for seed in facts.SPREAD_SEEDS:
        ids = tokenizer.encode(widget.repeated_text(seed))
        assert len(ids) == 2 * widget.N_RANDOM and seed != widget.SEED
        patterns = np.stack([p for _, _, p in run_layers(gguf, ids)])
        masks.append(head_scores(patterns, ids)["induction"] >= facts.ROLE_MIN)
    f = facts.facts()
    assert (facts.CACHE / f"real-model-spread-{facts.spread_key(widget)}.json").exists()  # kept: a rebuild reruns nothing
    counts = sorted(int(m.sum()) for m in masks[1:])
    assert [int(x) for x in re.split(r", | and ", f["rm_spread_counts"])] == counts
    assert f["rm_spread_texts"] == str(len(facts.SPREAD_SEEDS))
    stable = {f"L{l} H{h}" for l, h in zip(*np.nonzero(np.logical_and.reduce(masks)))}
    assert set(re.split(r", | and ", f["rm_spread_stable"])) == stable
    assert f["rm_spread_stable_count"] == str(len(stable)) and len(set(counts)) > 1  # a spread, not one count


def test_the_storage_the_page_describes(gguf):
    """Layers in Q4_1 blocks of 32 four-bit numbers with a float16 scale and minimum (2 + 2 + 16 bytes), the
    embedding in Q8_0 blocks of 32 bytes with a float16 scale (tests/core/llama checks the values with gguf-py's)."""
    from mha_core.llama.gguf import GGML_TYPES, Q4_1, Q8_0
    assert GGML_TYPES[Q4_1][1:] == (32, 2 + 2 + 32 * 4 // 8) and GGML_TYPES[Q8_0][1:] == (32, 2 + 32 * 8 // 8)
    kinds = {name: info.ggml_type for name, info in gguf.tensors.items()}
    assert kinds["token_embd.weight"] == Q8_0
    assert all(kinds[n] == Q4_1 for n in kinds if n.startswith("blk.") and not n.endswith("norm.weight"))


def test_what_the_page_states_about_predictions_and_knock_outs_is_computed(gguf):
    """The lesson's facts on the repeated words and the prose are mha_core.llama.lab's, recomputed here from the
    texts: the loss per token in each copy, the induction set and its control knocked out, the first token hidden;
    and they say what the page says of them (in-context learning; the induction heads matter, a control far less;
    hiding the first token raises the loss)."""
    facts, widget = load("facts"), load("widget")
    stated = facts.facts()
    tokenizer = tokenizer_from_gguf(gguf)
    n = widget.N_RANDOM
    ids = tokenizer.encode(widget.texts()["repeated"])
    clean = lab.run(gguf, ids)

    def second_copy(record):
        return float(np.mean(lab.predictions(gguf, record)["losses"][n + 1:]))

    induction = lab.parse_heads(stated["rm_induction_set"].replace(" and ", ", ").replace(", ", " "))
    control = lab.parse_heads(stated["rm_control_set"].replace(" and ", ", ").replace(", ", " "))
    assert sorted(l for l, _ in control) == sorted(l for l, _ in induction) and not set(control) & set(induction)
    first = float(np.mean(lab.predictions(gguf, clean)["losses"][1:n]))
    numbers = {"rm_first_copy_loss": first, "rm_second_copy_loss": second_copy(clean),
               "rm_induction_knocked_loss": second_copy(lab.run(gguf, ids, knocked=induction, clean=clean)),
               "rm_control_knocked_loss": second_copy(lab.run(gguf, ids, knocked=control, clean=clean))}
    prose_ids = tokenizer.encode(widget.TEXTS["prose"])
    prose = lab.run(gguf, prose_ids)
    numbers["rm_prose_loss"] = lab.predictions(gguf, prose)["mean_loss"]
    hidden = lab.run(gguf, prose_ids, hide_first=True, clean=prose)
    numbers["rm_prose_hidden_loss"] = lab.predictions(gguf, hidden)["mean_loss"]
    for name, value in numbers.items():
        assert float(stated[name]) == pytest.approx(value, abs=0.006), name
    assert numbers["rm_first_copy_loss"] > 2 * numbers["rm_second_copy_loss"] + 5
    knocked, controlled = (numbers[k] - numbers["rm_second_copy_loss"] for k in ("rm_induction_knocked_loss",
                                                                                   "rm_control_knocked_loss"))
    assert knocked > 3 and knocked > 3 * controlled
    assert numbers["rm_prose_hidden_loss"] > numbers["rm_prose_loss"]


def test_how_many_heads_can_go_is_what_the_page_states(gguf):
    """The order is each head's own knock-out effect (three heads of it rerun alone here), smallest first; knocking
    out the first rm_removable heads of it together keeps the mean loss on the repeated words within 0.1 nats,
    one more crosses it; the kinds of the heads that go last are counted from the scores."""
    facts, widget = load("facts"), load("widget")
    stated, pruned = facts.facts(), widget.pruning()
    ids = tokenizer_from_gguf(gguf).encode(widget.texts()[widget.PRUNED_TEXT])
    clean = lab.run(gguf, ids)
    base = lab.predictions(gguf, clean)["mean_loss"]
    order = [tuple(head) for head in pruned["order"]]
    assert sorted(order) == [(l, h) for l in range(30) for h in range(9)]
    effects = np.array(pruned["effects"])
    assert all(effects[a] <= effects[b] for a, b in zip(order, order[1:]))
    for head in (order[0], order[135], order[-1]):
        alone = lab.predictions(gguf, lab.run(gguf, ids, knocked=[head], clean=clean))["mean_loss"]
        assert effects[head] == pytest.approx(alone - base, abs=1e-4)
    k = int(stated["rm_removable"])
    rise = float(stated["rm_removable_rise"])
    losses = [lab.predictions(gguf, lab.run(gguf, ids, knocked=order[:count], clean=clean))["mean_loss"]
              for count in (k, k + 1)]
    assert losses[0] - base < rise <= losses[1] - base
    assert float(stated["rm_removable_loss"]) == pytest.approx(losses[0], abs=0.006)
    scores = widget.scores_of(widget.PRUNED_TEXT)
    last = order[-int(stated["rm_last_count"]):]
    assert int(stated["rm_last_induction"]) == sum(scores["induction"][head] >= facts.ROLE_MIN for head in last)


def test_which_heads_wrote_the_repeated_words_last_token_is_what_the_page_states(gguf):
    """At the repeated words' last position but one, the logit of the text's last token, split by direct logit
    attribution (recomputed here from a run of the text's ids): the logit, its embedding, heads' and MLPs' parts,
    the heads that added most and how many of them score as induction heads; the logit lens's first layer from
    which the top token is that token to the end."""
    facts, widget = load("facts"), load("widget")
    stated = facts.facts()
    ids = widget.heads()["repeated"]["ids"]
    position = len(ids) - 2
    assert stated["rm_attr_position"] == str(position)
    clean = lab.run(gguf, ids)
    parts = lab.logit_attribution(gguf, clean, position, ids[-1])
    signed = lambda text: float(text.replace("\u2212", "-"))  # noqa: E731
    assert float(stated["rm_attr_logit"]) == pytest.approx(parts["logit"], abs=0.006)
    assert signed(stated["rm_attr_embed"]) == pytest.approx(parts["embed"], abs=0.006)
    assert signed(stated["rm_attr_heads"]) == pytest.approx(parts["heads"].sum(), abs=0.006)
    assert signed(stated["rm_attr_mlps"]) == pytest.approx(np.sum(parts["mlps"]), abs=0.006)
    top = [np.unravel_index(i, parts["heads"].shape) for i in np.argsort(parts["heads"], axis=None)[::-1][:3]]
    named = re.findall(r"L(\d+) H(\d+) \(([^)]+)\)", stated["rm_attr_top"])
    assert [(int(l), int(h)) for l, h, _ in named] == [(int(l), int(h)) for l, h in top]
    assert [signed(v) for _, _, v in named] == pytest.approx([parts["heads"][l, h] for l, h in top], abs=0.006)
    induction = widget.scores_of("repeated")["induction"]
    assert int(stated["rm_attr_top_induction"]) == sum(induction[l, h] >= facts.ROLE_MIN for l, h in top)
    assert abs(parts["heads"].sum()) < 0.1 * parts["logit"] < 0.8 * np.sum(parts["mlps"])  # "hardly, directly"
    lens = lab.logit_lens(gguf, clean, position)["top_ids"]  # [31]: the embedding, then after each layer
    layer = int(stated["rm_lens_layer"])
    assert all(t == ids[-1] for t in lens[layer + 1:]) and lens[layer] != ids[-1]
    assert layer >= 25  # "made late, in the last layers"


def test_the_words_around_the_lab_s_numbers_hold():
    """What the lesson says of its numbers: the first copy costs more than a uniform guess over the vocabulary;
    the induction set's knock-out takes the second copy most of the way back; removing heads in order first
    lowers the loss."""
    stated, gguf = load("facts").facts(), read_gguf(fetch_model())
    first, second = float(stated["rm_first_copy_loss"]), float(stated["rm_second_copy_loss"])
    assert first > np.log(len(tokenizer_from_gguf(gguf).tokens))
    assert float(stated["rm_induction_knocked_loss"]) - second > 0.5 * (first - second)
    assert float(stated["rm_removable_lowest_loss"]) < float(stated["rm_removable_clean_loss"])
