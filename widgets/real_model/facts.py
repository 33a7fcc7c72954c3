"""The numbers the explainer quotes about the real model's heads, computed from the heads the build recorded
(widget.py's heads(): every head's scores on each of the page's texts, by mha_core.llama).

facts() gives {name: text} for the page's `<!-- fact: NAME -->` markers (sitebuild/facts.py); what the page
says in words about them (where each kind sits in depth, the sinks, one key/value group) is computed by
tests/site/test_real_model.py from the same scores.
"""
from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np

from mha_core.llama import head_scores, layer_weights, llama_config, run_layers
from mha_page.views import head_name
from mha_page.views.real_model import CONTROL_SEED, LAST_HEADS, MAX_TOKENS, PRUNING_RISE, SET_MIN, kinds_last
from sitebuild import CACHE, ROOT, kept
from sitebuild.sources import sources_key

ROLE_MIN = 0.4  # a head "is" a kind on a text when its score reaches this (the training widget's threshold too)
SINK_MIN = 0.5  # a head rests on the first token when more than half its attention goes there
GROUP_HEADS = (17, (3, 4, 5))  # one key/value group: layer 17's heads 3 to 5


def widget():
    spec = importlib.util.spec_from_file_location("widget_real_model_facts", Path(__file__).with_name("widget.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def f2(x: float) -> str:
    return f"{x:.2f}"


def best(scores: np.ndarray) -> tuple[str, float]:
    """('L18 H6', 0.93): the head with the highest score."""
    layer, head = np.unravel_index(np.nanargmax(scores), scores.shape)
    return head_name(layer, head), float(scores[layer, head])


def layers_of(mask: np.ndarray) -> tuple[int, int]:
    """The first and last layer holding a head where mask is true."""
    layers = np.flatnonzero(mask.any(axis=1))
    return int(layers[0]), int(layers[-1])


def depth_facts(kind: str, key: str, scores: np.ndarray) -> dict[str, str]:
    head, value = best(scores)
    mask = scores >= ROLE_MIN
    low, high = layers_of(mask)
    return {f"rm_{key}_best": head, f"rm_{key}_best_score": f2(value), f"rm_{key}_count": str(int(mask.sum())),
            f"rm_{key}_first_layer": str(low), f"rm_{key}_last_layer": str(high)}


def mean(values) -> float:
    return float(np.mean([v for v in values if v is not None]))


def heads_named(heads) -> str:
    """[[17, 3], [18, 6]] -> 'L17 H3 and L18 H6'."""
    names = [head_name(l, h) for l, h in heads]
    return ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)


def lab_facts(w) -> dict[str, str]:
    """What the model predicts on the page's texts and what knock-outs do (widget.compute's): the repeated words'
    loss per token in the first copy (tokens 1..N−1: token 0 has none) and the second (N+1..2N−1: token N, the
    first word again, follows the last word, which nothing in the text predicts), with the induction set and its
    control knocked out; the prose's mean loss, and with the first token hidden."""
    repeated, prose = w.heads()["repeated"], w.heads()["prose"]
    n = w.N_RANDOM
    first, second = slice(1, n), slice(n + 1, 2 * n)
    knocked = repeated["knocked"]
    return {
        "rm_first_copy_loss": f2(mean(repeated["losses"][first])),
        "rm_second_copy_loss": f2(mean(repeated["losses"][second])),
        "rm_set_min": f"{SET_MIN:g}", "rm_control_seed": str(CONTROL_SEED),
        "rm_induction_set": heads_named(knocked["induction"]["heads"]),
        "rm_induction_set_count": str(len(knocked["induction"]["heads"])),
        "rm_induction_knocked_loss": f2(mean(knocked["induction"]["losses"][second])),
        "rm_control_set": heads_named(knocked["control"]["heads"]),
        "rm_control_knocked_loss": f2(mean(knocked["control"]["losses"][second])),
        "rm_prose_loss": f2(mean(prose["losses"][1:])),
        "rm_prose_hidden_loss": f2(mean(prose["knocked"]["hide_first"]["losses"][1:])),
    }


ATTRIBUTION_TOP = 3  # the heads the lesson names as having written the answer


def signed2(x: float) -> str:
    """'+2.10', '−0.35' (as the widget writes a part of a logit)."""
    return f"{x:+.2f}".replace("-", "\u2212")


def attribution_facts(w, scores: np.ndarray) -> dict[str, str]:
    """Which heads wrote the repeated words' last token (direct logit attribution at the position before it, the
    widget's default position, widget.compute's positions): the logit and its parts (embedding, heads, MLPs), the
    ATTRIBUTION_TOP heads that added most and how many of them are induction heads (scores: [30, 9]); and the first
    layer after which the logit lens's top token is that token and stays so to the last."""
    entry = w.heads()["repeated"]
    position = len(entry["ids"]) - 2
    at = entry["positions"][position]
    parts = at["attribution"]
    heads = np.array(parts["heads"])  # [30, 9]
    top = [np.unravel_index(i, heads.shape) for i in np.argsort(heads, axis=None)[::-1][:ATTRIBUTION_TOP]]
    lens = at["lens"]["top_ids"]  # [31]: the top token of the embedding, then after each layer
    from_row = next(r for r in range(len(lens)) if all(top == at["target"] for top in lens[r:]))
    return {"rm_attr_position": str(position), "rm_attr_logit": f2(parts["logit"]),
            "rm_attr_embed": signed2(parts["embed"]), "rm_attr_heads": signed2(float(heads.sum())),
            "rm_attr_mlps": signed2(float(np.sum(parts["mlps"]))),
            "rm_attr_top": ", ".join(f"{head_name(l, h)} ({signed2(float(heads[l, h]))})" for l, h in top[:-1])
            + f" and {head_name(*top[-1])} ({signed2(float(heads[top[-1]]))})",
            "rm_attr_top_induction": str(sum(1 for l, h in top if scores[l, h] >= ROLE_MIN)),
            "rm_attr_top_count": str(ATTRIBUTION_TOP), "rm_lens_layer": str(from_row - 1)}


def pruning_facts(w, scores: dict) -> dict[str, str]:
    """How many heads go (each head's own knock-out effect the order, the smallest first) before the mean loss on
    the repeated words rises PRUNING_RISE nats; which go last: LAST_HEADS heads, counted by kind (score >= ROLE_MIN)."""
    pruned = w.pruning()
    last = pruned["order"][-LAST_HEADS:]
    curve = {int(k): v for k, v in pruned["curve"].items()}
    counts = kinds_last(pruned["order"], scores, ROLE_MIN)
    lowest = min(curve, key=curve.get)
    return {"rm_removable": str(pruned["removable"]), "rm_removable_rise": f"{PRUNING_RISE:g}",
            "rm_removable_lowest_count": str(lowest), "rm_removable_lowest_loss": f2(curve[lowest]),
            "rm_removable_loss": f2(curve[pruned["removable"]]), "rm_removable_clean_loss": f2(curve[0]),
            "rm_last_count": str(LAST_HEADS), "rm_last_heads": heads_named(last[::-1][:8]),
            "rm_last_induction": str(counts["induction"]), "rm_last_prev": str(counts["previous_token"]),
            "rm_last_first": str(counts["first_token"])}


def facts() -> dict[str, str]:
    w = widget()
    repeated, prose = w.scores_of("repeated"), w.scores_of("prose")
    layer, group = GROUP_HEADS
    sinks = prose["first_token"] >= SINK_MIN
    config = llama_config(w.model())
    out = {
        "rm_layers": str(config.n_layers), "rm_heads": str(config.n_heads), "rm_kv_heads": str(config.n_kv_heads),
        "rm_group": str(config.n_heads // config.n_kv_heads), "rm_d_head": str(config.d_head),
        "rm_all_heads": str(config.n_layers * config.n_heads), "rm_max_tokens": str(MAX_TOKENS),
        "rm_model_mb": f"{sum(len(d) for d in w.model_files().values()) / 1e6:.0f}",
        "rm_repeated_tokens": str(len(w.heads()["repeated"]["ids"])),
        "rm_words": str(w.N_RANDOM),
        "rm_role_min": f"{ROLE_MIN:g}",
        "rm_sink_min": f"{SINK_MIN:g}",
        "rm_group_induction": ", ".join(f2(repeated["induction"][layer, h]) for h in group[:-1])
        + f" and {f2(repeated['induction'][layer, group[-1]])}",
        "rm_group_prose_induction": ", ".join(f2(prose["induction"][layer, h]) for h in group[:-1])
        + f" and {f2(prose['induction'][layer, group[-1]])}",
        "rm_sinks": str(int(sinks.sum())),
        "rm_sink_mean": f2(float(np.mean(prose["first_token"]))),
        "rm_sink_layers_0_1": f2(float(np.mean(prose["first_token"][:2]))),
        "rm_sink_layers_rest": f2(float(np.mean(prose["first_token"][2:]))),
        "rm_prose_tokens": str(len(w.heads()["prose"]["ids"])),
        "rm_prose_induction_best": best(prose["induction"])[0],
        "rm_prose_induction_best_score": f2(best(prose["induction"])[1]),
        "rm_prose_induction_count": str(int((prose["induction"] >= ROLE_MIN).sum())),
    }
    out |= lab_facts(w)
    out |= pruning_facts(w, repeated)
    out |= attribution_facts(w, repeated["induction"])
    out |= depth_facts("previous_token", "prev", repeated["previous_token"])
    out |= depth_facts("induction", "ind", repeated["induction"])
    out |= depth_facts("duplicate_token", "dup", repeated["duplicate_token"])
    out |= group_ov_facts(w.model())
    out |= spread_facts(w, repeated["induction"])
    return out


# ---------------------------------------------------------------- one key/value group, three things written

def signed(x: float) -> str:
    """-0.04 as the page prints it, with a minus sign."""
    return f2(x).replace("-", "\u2212")


def group_ov_cosines(gguf, layer: int, heads) -> list[float]:
    """The cosine between the OV circuits W_V W_O ([d_model, d_model]) of each pair of query heads (in
    itertools.combinations' order): heads of one key/value group share W_V, and each keeps its own rows of W_O."""
    config, w = llama_config(gguf), layer_weights(gguf, layer)
    d_head, group = config.d_head, config.n_heads // config.n_kv_heads

    def ov(h: int) -> np.ndarray:
        kv = h // group  # the key/value head query head h reads
        W_V = w["W_V"][:, kv * d_head:(kv + 1) * d_head]  # [d_model, d_head]
        W_O = w["W_O"][h * d_head:(h + 1) * d_head]  # [d_head, d_model]
        return (W_V @ W_O).ravel()  # [d_model, d_head] @ [d_head, d_model] -> [d_model²]

    circuits = {h: ov(h) for h in heads}
    return [float(circuits[a] @ circuits[b] / (np.linalg.norm(circuits[a]) * np.linalg.norm(circuits[b])))
            for a, b in itertools.combinations(heads, 2)]


def group_ov_facts(gguf) -> dict[str, str]:
    layer, heads = GROUP_HEADS
    cosines = [signed(c) for c in group_ov_cosines(gguf, layer, heads)]
    return {"rm_group_ov_cosines": ", ".join(cosines[:-1]) + f" and {cosines[-1]}",
            "rm_d_model": str(llama_config(gguf).d_model)}


# ---------------------------------------------------------------- induction heads on other random words

SPREAD_SEEDS = (1, 2, 3, 4)  # other random-word texts, made as the page's (widget.py's repeated_text)


def spread_key(w) -> str:
    digest = hashlib.sha256(f"{w.MODEL_SHA256} seeds={SPREAD_SEEDS} n={w.N_RANDOM}".encode())
    digest.update(Path(w.__file__).read_bytes() + Path(__file__).read_bytes())  # repeated_text's and this code
    digest.update(sources_key(ROOT, ROOT / "mha_core" / "llama" / "__init__.py").encode())
    return digest.hexdigest()[:20]


def spread_scores(w) -> list[np.ndarray]:
    """Every head's induction score [n_layers, h] on each text of SPREAD_SEEDS, kept in .cache/ (a 40-token
    forward is about a second)."""
    def make() -> bytes:
        out = []
        for seed in SPREAD_SEEDS:
            ids = w.tokenizer().encode(w.repeated_text(seed))[:MAX_TOKENS]
            patterns = np.stack([pattern for _, _, pattern in run_layers(w.model(), ids)])  # [n_layers, h, n, n]
            out.append(head_scores(patterns, ids)["induction"].tolist())
        return json.dumps(out).encode()
    return [np.array(s) for s in json.loads(kept(CACHE / f"real-model-spread-{spread_key(w)}.json", make))]


def head_names(mask: np.ndarray) -> list[str]:
    return [head_name(layer, head) for layer, head in zip(*np.nonzero(mask))]


def spread_facts(w, induction: np.ndarray) -> dict[str, str]:
    """How many heads score as induction heads on other random words, and which do on every text."""
    others = spread_scores(w)
    counts = sorted(int((s >= ROLE_MIN).sum()) for s in others)
    stable = np.logical_and.reduce([s >= ROLE_MIN for s in [induction, *others]])
    names = head_names(stable)
    return {"rm_spread_texts": str(len(others)),
            "rm_spread_counts": ", ".join(map(str, counts[:-1])) + f" and {counts[-1]}",
            "rm_spread_stable_count": str(len(names)),
            "rm_spread_stable": ", ".join(names[:-1]) + f" and {names[-1]}"}
