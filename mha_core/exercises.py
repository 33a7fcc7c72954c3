"""The exercises the reader writes on the page: each one's task, skeleton, solution and checks, in one place.

run_exercise(name, code) runs the reader's code, a string given to compile() as data (never pasted into
source), in a namespace of its own, then calls the functions it defines on random inputs and on the edge
cases the pages discuss (and, for the detectors, on the patterns of the trained model whose weights params
holds), and compares what they do with mha_core: the shape, the dtype, the values (within a tolerance) and,
where the lesson is about memory, whether the result is a view of its input. The answer says pass, or names
the first case that failed and how. In the browser this runs in a Python of its own, never the widgets'
(the page ends it when it runs too long).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import numbers
import sys
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .attention import merge_heads, scaled_dot_product_attention, softmax, split_heads
from .params_codec import MAX_PARAMS_CHARS, decode_params
from .detectors import detector_scores, ideal_patterns
from .fields import Choice, Labelled, Maybe, Text, arguments
from .flash import online_softmax_update
from .model import RECORDED_SEED, TrainConfig, forward
from .presets import PRESETS
from .rng import Random
from .shapes import shape_report
from .training import eval_batch

FILENAME = "<your code>"  # how the reader's code is named in its errors
PRINT_LIMIT = 4000  # characters of print output kept; the rest is counted, not kept
SEED = 2024
MAX_CODE_CHARS = 100_000  # far more than any answer needs; bounds what compile() is handed
TIME_LIMIT_S = 5  # the page ends the Python of a run still going after this long (a loop cannot be interrupted)


class Failed(Exception):
    """A case whose result is not what mha_core gives; the message says how."""


@dataclass(frozen=True)
class Case:
    label: str  # the edge case it stands for, as the pages name it
    args: dict  # the reader's function's arguments, in order (passed by position), named for the messages
    causal: bool | None = None  # attention's keyword, when the case passes it
    function: str = ""  # the reader's function it calls, where the exercise asks for more than one


@dataclass(frozen=True)
class Exercise:
    name: str
    signature: str
    task: str
    skeleton: str
    solution: str
    cases: Callable[[Random], list[Case]]
    expect: Callable[[Case], object]  # mha_core's answer, computed before the reader's function sees the inputs
    check: Callable[[Case, object, object], None]  # (case, expected, received); raises Failed
    trained_cases: Callable[[dict], list[Case]] | None = None  # cases on a trained model, given its weights

    @property
    def functions(self) -> dict[str, str]:
        """Each function the reader writes, by name: its signature (signature lists them, "; " between)."""
        return {s.split("(")[0]: s for s in self.signature.split("; ")}


# ---------------------------------------------------------------- describing inputs and results

def describe(value) -> str:
    """An argument as a message shows it: an array by its shape and dtype (and layout if not contiguous)."""
    if isinstance(value, np.ndarray):
        layout = "" if value.flags.c_contiguous else ", not contiguous"
        return f"[{', '.join(map(str, value.shape))}] {value.dtype}{layout}"
    return repr(value)


def case_name(case: Case) -> str:
    args = ", ".join(f"{k}: {describe(v)}" for k, v in case.args.items())
    causal = "" if case.causal is None else f", causal={case.causal}"
    if case.function:
        return f'Case "{case.label}" ({case.function}({args}))'
    return f'Case "{case.label}" ({args}{causal})'


def tolerance(dtype) -> dict:
    return {"rtol": 1e-4, "atol": 1e-6} if dtype == np.float32 else {"rtol": 1e-7, "atol": 1e-10}


def check_array(expected: np.ndarray, received) -> None:
    """received is an ndarray of expected's shape, dtype and values (within the dtype's tolerance)."""
    if not isinstance(received, np.ndarray):
        what = "None (is a `return` missing?)" if received is None else f"a {type(received).__name__}"
        raise Failed(f"expected a NumPy array of shape {list(expected.shape)}, received {what}.")
    if received.shape != expected.shape:
        raise Failed(f"expected shape {list(expected.shape)}, received {list(received.shape)}.")
    if received.dtype != expected.dtype:
        raise Failed(f"expected dtype {expected.dtype}, received {received.dtype} "
                     f"(NumPy keeps float32 unless an operand is float64, such as np.sqrt of an int).")
    with np.errstate(invalid="ignore"):
        close = np.isclose(received, expected, **tolerance(expected.dtype))
    if not close.all():
        where = tuple(int(i) for i in np.argwhere(~close)[0])
        raise Failed(f"values differ: at index {list(where)} expected {expected[where]:.6g}, received "
                     f"{received[where]:.6g} ({int((~close).sum())} of {close.size} values differ).")


def random_array(rng: Random, shape, dtype=np.float64) -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


# ---------------------------------------------------------------- split_heads

def split_cases(rng) -> list[Case]:
    strided = random_array(rng, (2, 8, 12))[:, ::2, :]  # every other token: a view with gaps
    return [
        Case("random input", {"x": random_array(rng, (2, 5, 12)), "n_heads": 3}),
        Case("h = 1", {"x": random_array(rng, (1, 4, 6)), "n_heads": 1}),
        Case("n = 1", {"x": random_array(rng, (1, 1, 8)), "n_heads": 4}),
        Case("B > 1", {"x": random_array(rng, (3, 4, 16)), "n_heads": 4}),
        Case("non-contiguous input", {"x": strided, "n_heads": 3}),
        Case("float32", {"x": random_array(rng, (2, 3, 8), np.float32), "n_heads": 2}),
    ]


def split_expect(case: Case) -> np.ndarray:
    return split_heads(case.args["x"].copy(), case.args["n_heads"])


def split_check(case: Case, expected: np.ndarray, received) -> None:
    check_array(expected, received)
    if not np.shares_memory(received, case.args["x"]):
        raise Failed("the values are right but your result is a copy: it shares no memory with x "
                     "(np.shares_memory(result, x) is False). Ask for a view: reshape, then transpose.")


# ---------------------------------------------------------------- merge_heads

def merge_cases(rng) -> list[Case]:
    def heads(B, n, h, d_k, dtype=np.float64):  # [B, h, n, d_k] as split_heads gives it: not contiguous
        return split_heads(random_array(rng, (B, n, h * d_k), dtype), h)
    return [
        Case("random input", {"z": random_array(rng, (2, 3, 5, 4))}),
        Case("h = 1", {"z": random_array(rng, (1, 1, 4, 6))}),
        Case("n = 1", {"z": random_array(rng, (1, 4, 1, 2))}),
        Case("B > 1", {"z": random_array(rng, (3, 2, 4, 3))}),
        Case("non-contiguous input (split_heads' view)", {"z": heads(2, 5, 3, 4)}),
        Case("float32", {"z": random_array(rng, (2, 2, 3, 4), np.float32)}),
    ]


def merge_expect(case: Case) -> np.ndarray:
    return merge_heads(case.args["z"].copy())


# ---------------------------------------------------------------- attention

def attention_cases(rng) -> list[Case]:
    def qkv(lead, n_q, n_k, d_k, d_v=None, dtype=np.float64, scale=1.0):
        return {"q": random_array(rng, (*lead, n_q, d_k), dtype) * dtype(scale),
                "k": random_array(rng, (*lead, n_k, d_k), dtype) * dtype(scale),
                "v": random_array(rng, (*lead, n_k, d_v or d_k), dtype)}
    tokens_first = random_array(rng, (2, 5, 3, 4))  # [B, n, h, d_k]: swapped into [B, h, n, d_k], a view
    strided = {name: np.swapaxes(tokens_first * (i + 1), 1, 2) for i, name in enumerate("qkv")}
    return [
        Case("random input, no leading axis", qkv((), 4, 4, 8)),
        Case("more keys than queries, d_v ≠ d_k", qkv((), 3, 5, 8, 6)),
        Case("B > 1 and h heads (two leading axes)", qkv((2, 3), 5, 5, 4)),
        Case("causal", qkv((2, 3), 5, 5, 4), causal=True),
        Case("h = 1, n = 1, causal", qkv((1, 1), 1, 1, 4), causal=True),
        Case("non-contiguous input", strided, causal=True),
        Case("float32", qkv((2,), 6, 6, 8, dtype=np.float32), causal=True),
        Case("large scores (a softmax that does not subtract the maximum overflows)",
             qkv((2,), 4, 4, 8, scale=30.0)),
    ]


def attention_expect(case: Case) -> np.ndarray:
    q, k, v = (case.args[name].copy() for name in "qkv")
    out, _weights = scaled_dot_product_attention(q, k, v, causal=bool(case.causal))
    return out


def array_check(case: Case, expected: np.ndarray, received) -> None:
    check_array(expected, received)


# ---------------------------------------------------------------- the KV cache

def kv_cases(rng) -> list[Case]:
    def preset(key, batch, seq_len, bytes_per_number, label):
        p = PRESETS[key]
        return Case(label, {"n_layers": p.n_layers, "batch": batch, "seq_len": seq_len, "n_heads": p.n_heads,
                            "n_kv_heads": p.n_kv_heads, "d_head": p.d_head, "bytes_per_number": bytes_per_number})
    return [
        preset("gpt2-small", 1, 1024, 4, "GPT-2 small, every head its own keys and values, float32"),
        preset("llama3-8b", 1, 8192, 2, "Llama 3 8B, 32 query heads sharing 8 key/value heads, 16-bit"),
        preset("falcon-7b", 4, 2048, 2, "Falcon 7B, one key/value head (multi-query), B > 1"),
        Case("one layer, one token", {"n_layers": 1, "batch": 1, "seq_len": 1, "n_heads": 4, "n_kv_heads": 2,
                                      "d_head": 8, "bytes_per_number": 4}),
    ]


def kv_expect(case: Case) -> int:
    a = case.args
    report = shape_report(d_model=a["n_heads"] * a["d_head"], n_heads=a["n_heads"], n_kv_heads=a["n_kv_heads"],
                          d_head=a["d_head"], seq_len=a["seq_len"], batch=a["batch"],
                          dtype_bytes=a["bytes_per_number"], n_layers=a["n_layers"])
    return report["kv_cache_model_bytes"]


def kv_check(case: Case, expected: int, received) -> None:
    a = case.args
    if isinstance(received, bool) or not isinstance(received, numbers.Real):
        raise Failed(f"expected a number of bytes, {expected:,}; received {received!r:.60}.")
    if received == expected:
        return
    hint = ""
    if a["n_kv_heads"] != a["n_heads"] and received == expected * a["n_heads"] // a["n_kv_heads"]:
        hint = " You counted every query head: keys and values are kept for the n_kv_heads heads only."
    elif received * 2 == expected:
        hint = " Both keys and values are kept: two tensors per layer."
    raise Failed(f"expected {expected:,} bytes ({expected / 2**30:.3g} GiB), received {received:,}.{hint}")


# ---------------------------------------------------------------- the detectors

SCORED = {"previous_token_score": "previous_token", "induction_score": "induction"}  # function -> detector


def causal_pattern(scores: np.ndarray) -> np.ndarray:
    """[B, h, n, n] attention weights from scores: softmax over the keys at or before each query."""
    n = scores.shape[-1]
    return softmax(np.where(np.tri(n, dtype=bool), scores, -np.inf))


def random_pattern(rng, B: int, h: int, n: int) -> np.ndarray:
    return causal_pattern(2 * random_array(rng, (B, h, n, n)))


def even_pattern(B: int, h: int, n: int) -> np.ndarray:
    """Every query's weight spread evenly over its keys: each row's largest weights tie."""
    return causal_pattern(np.zeros((B, h, n, n)))


def ideal_pattern(kind: str, tokens: np.ndarray, h: int) -> np.ndarray:
    """[B, h, n, n]: a perfect head of kind, its weight spread over the targets; a query with none reads itself."""
    targets = ideal_patterns(tokens)[kind]  # [B, n, n]
    ideal = targets | (np.eye(tokens.shape[1], dtype=bool) & ~targets.any(-1, keepdims=True))
    return np.repeat((ideal / ideal.sum(-1, keepdims=True))[:, None], h, axis=1)


def repeated(block: list[int], n: int) -> list[int]:
    return [block[t % len(block)] for t in range(n)]


def detector_cases(rng) -> list[Case]:
    def previous(label, pattern):
        return Case(label, {"pattern": pattern}, function="previous_token_score")

    def induction(label, pattern, tokens):
        return Case(label, {"pattern": pattern, "tokens": np.array(tokens, dtype=np.int64)}, function="induction_score")

    block = repeated([3, 1, 4, 0], 8)  # A B C D A B C D: queries 4 to 7 have a target each
    three = repeated([5, 2, 7], 9)  # A B C three times: queries 6 to 8 have two targets each
    return [
        previous("a perfect previous-token head (the first token has no previous token)",
                 ideal_pattern("previous_token", np.zeros((2, 5), dtype=np.int64), 2)),
        previous("ties: each query's weight spread evenly", even_pattern(1, 2, 6)),
        previous("random patterns", random_pattern(rng, 2, 3, 6)),
        previous("one token: no query has a target", random_pattern(rng, 1, 2, 1)),
        induction("a perfect induction head", ideal_pattern("induction", np.array([block]), 2), [block]),
        induction("ties on a repeated block: each query's weight spread evenly", even_pattern(1, 2, 8), [block]),
        induction("random patterns on a repeated block", random_pattern(rng, 1, 2, 8), [block]),
        induction("a block seen three times: two targets for a query", random_pattern(rng, 1, 2, 9), [three]),
        induction("B = 2, blocks of different lengths", random_pattern(rng, 2, 2, 8),
                  [repeated([1, 2, 3, 4, 5, 6], 8), repeated([6, 0, 2], 8)]),
        induction("no repeat: no query has a target", random_pattern(rng, 2, 2, 6), [[0, 1, 2, 3, 4, 5]] * 2),
    ]


def detector_trained_cases(params: dict) -> list[Case]:
    """The trained model's patterns (its weights as the page ships them) on the sequences its scores are
    measured on: blocks of varied lengths, repeated."""
    config = TrainConfig()
    tokens = eval_batch(config, RECORDED_SEED).astype(np.int64)  # [B, n]: what the chart's scores measure
    patterns = forward(params, tokens, config)[1]  # [L] × [B, h, n, n]
    return [
        Case("the trained model's layer 0 on its evaluation sequences", {"pattern": patterns[0]},
             function="previous_token_score"),
        Case("the trained model's layer 1 on its evaluation sequences", {"pattern": patterns[1], "tokens": tokens},
             function="induction_score"),
    ]


def case_targets(case: Case) -> tuple[str, np.ndarray, np.ndarray]:
    """(detector, tokens [B, n], targets [B, n_q, n_k]) of a case; previous-token targets need no tokens."""
    kind = SCORED[case.function]
    pattern = case.args["pattern"]
    tokens = case.args.get("tokens", np.zeros(pattern.shape[:1] + pattern.shape[-1:], dtype=np.int64))
    return kind, tokens, ideal_patterns(tokens)[kind]


def detector_expect(case: Case) -> np.ndarray:
    kind, tokens, _ = case_targets(case)
    return np.array(detector_scores.fn([case.args["pattern"].copy()], tokens)[kind][0])  # [h]


def detector_mistakes(case: Case) -> list[tuple[np.ndarray, str]]:
    """(the scores [h] a mistake gives, what the message says of it), for the mistakes the task warns of."""
    kind, tokens, targets = case_targets(case)
    pattern = case.args["pattern"]  # [B, h, n, n]
    has = targets.any(-1)  # [B, n]: the queries with a target
    count = max(int(has.sum()), 1)
    on = (pattern * targets[:, None]).sum(-1)  # [B, h, n]: each query's attention on its targets
    top = np.take_along_axis(targets[:, None], pattern.argmax(-1)[..., None], -1)[..., 0]  # [B, h, n]
    own = (on.sum(-1) / np.maximum(has.sum(-1), 1)[:, None]).mean(0)  # [h]: each sequence's score, averaged
    found = [(on.sum((0, 2)) / has.size, f"You divided by every query, as TransformerLens does; divide by the "
                                         f"queries that have a target ({int(has.sum())} of {has.size} here)."),
             (own, "You averaged each sequence's own score; pool the queries with a target of every sequence, "
                   "each counting once."),
             ((top & has[:, None]).sum((0, 2)) / count, "The score is the attention on the targets, not whether "
                                                        "a query's largest weight is on one.")]
    if kind == "induction":
        duplicate = ideal_patterns(tokens)["duplicate_token"]  # [B, n, n]: the earlier occurrences themselves
        last = np.cumsum(duplicate[..., ::-1], -1)[..., ::-1] == 1  # [B, n, n]: at or before the latest one
        latest = np.zeros_like(duplicate)
        latest[..., 1:] = (duplicate & last)[..., :-1]  # the key after the latest earlier occurrence only
        found += [((pattern * duplicate[:, None]).sum((0, 2, 3)) / count,
                   "You scored the earlier occurrence itself; the target is the key right after it."),
                  ((pattern * latest[:, None]).sum((0, 2, 3)) / count,
                   "A token seen more than once before has a target after each of its earlier occurrences.")]
    return found


def detector_check(case: Case, expected: np.ndarray, received) -> None:
    h = expected.shape[0]
    try:
        got = None if received is None else np.asarray(received, dtype=np.float64)
    except (TypeError, ValueError):
        got = None
    if got is None:
        what = "None (is a `return` missing?)" if received is None else f"a {type(received).__name__}"
        raise Failed(f"expected {h} scores, one per head, received {what}.")
    if got.shape != (h,):
        pooled = " Pool the queries of every sequence: the batch axis goes too." if got.shape[-1:] == (h,) else ""
        raise Failed(f"expected shape [{h}], one score per head, received {list(got.shape)}.{pooled}")
    close = np.isclose(got, expected, rtol=1e-7, atol=1e-10)
    if close.all():
        return
    head = int(np.argmin(close))
    hint = next((f" {words}" for scores, words in detector_mistakes(case)
                 if np.allclose(got, scores) and not np.allclose(scores, expected)), "")
    if not case_targets(case)[2].any():
        hint = " No query here has a target, and then the score is 0 (not a division by zero)."
    raise Failed(f"head {head}: expected {expected[head]:.6g}, received {got[head]:.6g}.{hint}")


# ---------------------------------------------------------------- the online softmax

def running(rng: Random, scores_seen: np.ndarray, d_v: int, dtype=np.float64) -> dict:
    """m, l, o [b_q], [b_q], [b_q, d_v] after the keys whose scores are scores_seen [b_q, seen] (none: the start)."""
    b_q, seen = scores_seen.shape
    if not seen:
        return {"m": np.full(b_q, -np.inf, dtype), "l": np.zeros(b_q, dtype), "o": np.zeros((b_q, d_v), dtype)}
    m = scores_seen.max(axis=1)
    p = np.exp(scores_seen - m[:, None])
    return {"m": m, "l": p.sum(axis=1), "o": p @ random_array(rng, (seen, d_v), dtype)}


def online_cases(rng) -> list[Case]:
    def block(b_q, b_k, d_v, seen, shift=0.0, dtype=np.float64, masked=None):
        """A new block after seen keys: its scores drawn 3 times wider than a unit normal, plus shift."""
        before = (random_array(rng, (b_q, seen)) * 3).astype(dtype)
        scores = (random_array(rng, (b_q, b_k)) * 3 + shift).astype(dtype)
        if masked is not None:
            scores[masked] = -np.inf
        return running(rng, before, d_v, dtype) | {"scores": scores, "v": random_array(rng, (b_k, d_v), dtype)}
    rows = np.zeros((4, 3), dtype=bool)
    rows[1] = True  # a query with every key of the block masked
    rows[2, 1:] = True
    return [
        Case("the first block (m = −inf, ℓ = 0, O = 0)", block(4, 3, 2, 0)),
        Case("the maximum rises for some queries", block(4, 5, 3, 6)),
        Case("the maximum rises for every query", block(3, 4, 2, 5, shift=20.0)),
        Case("no maximum rises", block(3, 4, 2, 5, shift=-20.0)),
        Case("masked keys (−inf scores), one query's whole block", block(4, 3, 2, 4, masked=rows)),
        Case("one query, one key", block(1, 1, 1, 1)),
        Case("float32", block(4, 4, 3, 4, dtype=np.float32)),
    ]


def online_expect(case: Case) -> tuple:
    return online_softmax_update(*(case.args[name].copy() for name in ("m", "l", "o", "scores", "v")))


def online_mistakes(case: Case) -> dict[str, list[tuple[np.ndarray, str]]]:
    """{"m" | "l" | "o": [(what a mistake gives for it, what the message says of it)]}, the mistakes the task warns of."""
    m, l, o, s, v = (case.args[name] for name in ("m", "l", "o", "scores", "v"))
    block_max = s.max(axis=1)  # [b_q]
    m_new = np.maximum(m, block_max)
    shift = np.where(m_new == -np.inf, 0, m_new)
    with np.errstate(invalid="ignore", over="ignore"):
        p = np.exp(s - shift[:, None])  # [b_q, b_k]
        wrong = {
            "m": [(m, "The maximum was not updated: m' is the larger of m and the block's largest score."),
                  (block_max, "m' forgot the old maximum: it is the larger of m and the block's largest score.")],
            "l": [(l + p.sum(axis=1), "The old sum was not rescaled: multiply ℓ by exp(m − m') before adding the "
                                      "block's terms, so that every term is taken against the new maximum.")],
            "o": [(factor[:, None] * o + p @ v, f"The output so far was rescaled by {words}; its factor is "
                                                 "exp(m − m'), the same as the sum's.")
                  for factor, words in ((np.ones_like(m), "nothing (a factor of 1)"), (np.exp(m_new - m), "exp(m' − m)"),
                                        (np.exp(m - block_max), "exp(m − the block's maximum)"))],
        }
    return wrong


def online_check(case: Case, expected: tuple, received) -> None:
    if not isinstance(received, (tuple, list)) or len(received) != 3:
        what = "None (is a `return` missing?)" if received is None else f"{type(received).__name__} {received!r:.40}"
        raise Failed(f"expected three arrays (m, l, o), received {what}.")
    for name, want, got in zip("mlo", expected, received):
        try:
            check_array(want, got)
        except Failed as failure:
            hint = next((f" {words}" for values, words in online_mistakes(case)[name]
                         if isinstance(got, np.ndarray) and got.shape == want.shape
                         and np.allclose(got, values, equal_nan=True) and not np.allclose(values, want)), "")
            raise Failed(f"{name}: {failure}{hint}") from None


# ---------------------------------------------------------------- the exercises

EXERCISES = {e.name: e for e in [
    Exercise(
        name="split_heads", signature="split_heads(x, n_heads)",
        task="Write split_heads(x, n_heads): x is [B, n, d_model]; return [B, h, n, d_k] with d_k = d_model / h, "
             "as a view of x (no number copied).",
        skeleton="import numpy as np\n\n\ndef split_heads(x, n_heads):\n"
                 "    # x: [B, n, d_model] -> [B, n_heads, n, d_k], a view of x\n    ...\n",
        solution="import numpy as np\n\n\ndef split_heads(x, n_heads):\n    B, n, d_model = x.shape\n"
                 "    d_k = d_model // n_heads\n    x = x.reshape(B, n, n_heads, d_k)  # [B, n, h, d_k]: a view\n"
                 "    return x.transpose(0, 2, 1, 3)  # [B, h, n, d_k]: a view\n",
        cases=split_cases, expect=split_expect, check=split_check),
    Exercise(
        name="merge_heads", signature="merge_heads(z)",
        task="Write merge_heads(z): z is [B, h, n, d_k]; return [B, n, h·d_k], each token's heads side by side.",
        skeleton="import numpy as np\n\n\ndef merge_heads(z):\n    # z: [B, h, n, d_k] -> [B, n, h * d_k]\n    ...\n",
        solution="import numpy as np\n\n\ndef merge_heads(z):\n    B, h, n, d_k = z.shape\n"
                 "    z = z.transpose(0, 2, 1, 3)  # [B, n, h, d_k]\n"
                 "    return z.reshape(B, n, h * d_k)  # a copy when z is stored head by head\n",
        cases=merge_cases, expect=merge_expect, check=array_check),
    Exercise(
        name="attention", signature="attention(q, k, v, causal=False)",
        task="Write attention(q, k, v, causal=False): softmax(q kᵀ / √d_k) v over the last two axes, with any "
             "leading axes; with causal=True (a causal mask: no token reads a later one), query i sees keys 0 to i "
             "only. float32 in gives float32 out.",
        skeleton="import numpy as np\n\n\ndef attention(q, k, v, causal=False):\n"
                 "    # q: [..., n_q, d_k], k: [..., n_k, d_k], v: [..., n_k, d_v] -> [..., n_q, d_v]\n    ...\n",
        solution="import numpy as np\n\n\ndef attention(q, k, v, causal=False):\n    d_k = q.shape[-1]\n"
                 "    scores = q @ np.swapaxes(k, -1, -2) / d_k ** 0.5  # [..., n_q, n_k]\n    if causal:\n"
                 "        n_q, n_k = scores.shape[-2:]\n"
                 "        later = np.triu(np.ones((n_q, n_k), dtype=bool), k=1)  # key j > query i\n"
                 "        scores = np.where(later, -np.inf, scores)\n"
                 "    scores = scores - scores.max(axis=-1, keepdims=True)  # exp cannot overflow\n"
                 "    weights = np.exp(scores)\n    weights /= weights.sum(axis=-1, keepdims=True)\n"
                 "    return weights @ v  # [..., n_q, d_v]\n",
        cases=attention_cases, expect=attention_expect, check=array_check),
    Exercise(
        name="kv_cache", signature="kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number)",
        task="Write kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number): the "
             "bytes a model keeps for its keys and values when it has read seq_len tokens of each of batch "
             "sequences, with n_kv_heads key/value heads shared by its n_heads query heads.",
        skeleton="def kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number):\n"
                 "    ...\n",
        solution="def kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number):\n"
                 "    per_token = 2 * n_kv_heads * d_head  # a key and a value for each key/value head\n"
                 "    return n_layers * batch * seq_len * per_token * bytes_per_number\n",
        cases=kv_cases, expect=kv_expect, check=kv_check),
    Exercise(
        name="detectors", signature="previous_token_score(pattern); induction_score(pattern, tokens)",
        task="Write previous_token_score(pattern) and induction_score(pattern, tokens): pattern is one layer's "
             "attention, [B, h, n, n] (a row per query, a column per key), tokens [B, n]. Each returns h scores, "
             "one per head: the attention its queries put on their targets, summed, divided by the number of "
             "queries, in all B sequences, that have a target. Query i's previous-token target is key i − 1 (the "
             "first token has none); its induction targets are the keys right after each earlier occurrence of "
             "its token. Divide by those queries only, not by every query as TransformerLens does; with none, "
             "the score is 0.",
        skeleton="import numpy as np\n\n\ndef previous_token_score(pattern):\n"
                 "    # pattern: [B, h, n, n] -> [h]: attention on key i - 1, per query that has one\n    ...\n\n\n"
                 "def induction_score(pattern, tokens):\n"
                 "    # pattern: [B, h, n, n], tokens: [B, n] -> [h]: attention on the keys right after\n"
                 "    # earlier occurrences of the query's token, per query that has such a key\n    ...\n",
        solution="import numpy as np\n\n\ndef previous_token_score(pattern):\n    B, h, n, _ = pattern.shape\n"
                 "    on_target = np.diagonal(pattern, offset=-1, axis1=-2, axis2=-1)  # [B, h, n - 1]: key i - 1\n"
                 "    return on_target.sum(axis=(0, 2)) / max(B * (n - 1), 1)  # queries 1 to n - 1 have one\n\n\n"
                 "def induction_score(pattern, tokens):\n"
                 "    same = tokens[:, :, None] == tokens[:, None, :]  # [B, n, n]: query i's token at key j\n"
                 "    earlier = np.tril(same, k=-1)  # keys j < i only\n"
                 "    targets = np.zeros_like(earlier)\n"
                 "    targets[:, :, 1:] = earlier[:, :, :-1]  # key j + 1 follows an earlier occurrence j\n"
                 "    on_target = (pattern * targets[:, None]).sum(axis=(0, 2, 3))  # [B, h, n, n] -> [h]\n"
                 "    return on_target / max(targets.any(axis=-1).sum(), 1)  # queries with a target\n",
        cases=detector_cases, expect=detector_expect, check=detector_check, trained_cases=detector_trained_cases),
    Exercise(
        name="online_softmax", signature="online_softmax_update(m, l, o, scores, v)",
        task="Write online_softmax_update(m, l, o, scores, v): one new block of keys for a block of queries. m and l "
             "are each query's running maximum and running sum of exp(score − m) over the keys seen so far, [b_q] each "
             "(−inf and 0 before any key); o [b_q, d_v] is their output so far, not yet divided by l; scores [b_q, b_k] "
             "are the new block's scores (already divided by √d_k, −inf where masked) and v [b_k, d_v] its values. "
             "Return (m', l', o') after the block, so that o' / l' is the attention over every key seen. Keep the "
             "dtype.",
        skeleton="import numpy as np\n\n\ndef online_softmax_update(m, l, o, scores, v):\n"
                 "    # m, l: [b_q]; o: [b_q, d_v]; scores: [b_q, b_k]; v: [b_k, d_v] -> (m', l', o')\n    ...\n",
        solution="import numpy as np\n\n\ndef online_softmax_update(m, l, o, scores, v):\n"
                 "    m_new = np.maximum(m, scores.max(axis=1))  # [b_q]: the largest score so far\n"
                 "    safe = np.where(m_new == -np.inf, 0, m_new)  # a query with every key masked so far stays at 0\n"
                 "    rescale = np.exp(m - safe)  # [b_q]: 1 where the maximum did not move\n"
                 "    p = np.exp(scores - safe[:, None])  # [b_q, b_k]\n"
                 "    l_new = rescale * l + p.sum(axis=1)\n"
                 "    o_new = rescale[:, None] * o + p @ v  # [b_q, d_v]\n"
                 "    return m_new, l_new, o_new\n",
        cases=online_cases, expect=online_expect, check=online_check),
]}


# ---------------------------------------------------------------- running the reader's code

# In the browser, the reader's prints are also written to the exercises' Python's own stdout as they happen, which its
# worker sends to the page (widgets/runtime/worker.js): a run the page ends (Stop, the time limit) keeps what it
# printed. Elsewhere they are only answered.
ECHO = sys.__stdout__ if sys.platform == "emscripten" else None


class BoundedText(io.TextIOBase):
    """Print output, of which the first PRINT_LIMIT characters are kept and the rest only counted; echo (a stream
    or None) is also given what is kept, as it is written."""

    def __init__(self, echo: io.TextIOBase | None = None):
        self.parts, self.kept, self.dropped, self.echo = [], 0, 0, echo

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = PRINT_LIMIT - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
            if self.echo is not None:
                self.echo.write(text[:room])
                self.echo.flush()  # now: the code may never return
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        more = f"\n… ({self.dropped:,} more characters not shown)" if self.dropped else ""
        return "".join(self.parts) + more


def reader_lines(error: BaseException, code: str) -> str:
    """The traceback's frames in the reader's code, each with its line, innermost last."""
    lines = code.splitlines()
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == FILENAME]
    shown = []
    for f in frames:
        source = lines[f.lineno - 1].strip() if f.lineno and 0 < f.lineno <= len(lines) else ""
        where = "" if f.name == "<module>" else f", in {f.name}"
        shown.append(f"  line {f.lineno}{where}: {source}")
    return "\n".join(shown)


def syntax_pointer(error: SyntaxError) -> str:
    """The line of a syntax error (its indentation left out) and under it a caret at the column Python names,
    for a monospace block: the caret's lead mirrors the line's tabs, so it lands under that column at any tab
    width. '' when Python names no line."""
    if not (error.text and error.offset):
        return ""
    text = error.text.rstrip("\n")
    line = text.lstrip()
    before = line[:max(error.offset - 1 - (len(text) - len(line)), 0)]
    return f"{line}\n{''.join(c if c == chr(9) else ' ' for c in before)}^"


def error_message(error: BaseException, code: str) -> str:
    if isinstance(error, SyntaxError):  # its line and caret: syntax_pointer's
        return f"{type(error).__name__} at line {error.lineno}: {error.msg}"
    if isinstance(error, SystemExit):
        return "Your code called exit(): nothing to check."
    where = reader_lines(error, code)
    return f"{type(error).__name__}: {error}" + (f"\n{where}" if where else "")


def page_messages() -> dict:
    """What the page says around a run, which it makes without this Python ({name} marks what it fills in: the
    start's progress, why Python ended); "time-limit" and "stopped" name why the page ended a run."""
    fresh = "Run starts a fresh Python."
    return {"running": "Running your code\u2026", "waiting": "Waiting for Python: {status}",
            "starting": "Starting a Python for your code\u2026", "starting-step": "Starting a Python for your code: {step}",
            "no-start": "Python could not start: {error}", "ended": "{reason} Press Run to start a fresh Python.",
            "time-limit": f"Stopped after {TIME_LIMIT_S} s: your code was still running (a loop that never ends?). {fresh}",
            "stopped": f"Stopped. {fresh}"}


def answer(status: str, message: str, output: BoundedText, pointer: str = "") -> dict:
    """The reader's answer; pointer (a syntax error's line and caret) only where there is one."""
    return {"status": status, "message": message, "output": output.text()} | ({"pointer": pointer} if pointer else {})


def _params_fit(args: dict) -> None:
    """params are given exactly when the exercise checks a trained model."""
    wanted = EXERCISES[args["name"]].trained_cases is not None
    if wanted and args.get("params") is None:
        raise ValueError(f"params is needed: the {args['name']} exercise checks your functions on the trained "
                         "model's patterns too (its weights, as the page's training widget ships them).")
    if not wanted and args.get("params") is not None:
        raise ValueError(f"params is for an exercise on the trained model; {args['name']} takes none.")


def exercise_cases(exercise: Exercise, params: str | None) -> list[Case]:
    """The exercise's cases: random and edge cases, then those on the trained model whose weights params holds."""
    cases = exercise.cases(Random(SEED))
    if exercise.trained_cases is not None:
        cases += exercise.trained_cases(decode_params(params, TrainConfig()))
    return cases


@arguments(_params_fit, name=Choice(tuple(EXERCISES)), code=Labelled(Text(MAX_CODE_CHARS), "Your code"),
           params=Maybe(Text(MAX_PARAMS_CHARS)))
def run_exercise(name: str, code: str, params: str | None = None) -> dict:
    """Run the reader's code for exercise name and check the functions it defines, case by case.

    Returns {status, message, output[, pointer]}: status "pass", "fail" (a case's result is wrong: the message
    names the case, its inputs, what was expected and what was received) or "error" (the code could not run: a
    syntax error or an exception, with the line in the reader's code); output is what the code printed; pointer,
    for a syntax error that names its line, that line and a caret under its column (syntax_pointer).
    params: the trained model's weights (mha_core.params_codec.encode_params' form, the default
    TrainConfig), for an exercise that checks the reader's functions on its patterns; None for the others.
    """
    exercise, output = EXERCISES[name], BoundedText(ECHO)
    cases = exercise_cases(exercise, params)  # a misfit params is refused before the reader's code runs
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            exec(compile(code, FILENAME, "exec"), namespace)
        except BaseException as error:  # the reader's error, reported; nothing is raised past here
            pointer = syntax_pointer(error) if isinstance(error, SyntaxError) else ""
            return answer("error", error_message(error, code), output, pointer)
        missing = [sig for function, sig in exercise.functions.items() if not callable(namespace.get(function))]
        if missing:
            return answer("error", f"Your code does not define {missing[0]}.", output)
        default = next(iter(exercise.functions))
        for case in cases:
            fn = namespace[case.function or default]
            kwargs = {} if case.causal is None else {"causal": case.causal}
            expected = exercise.expect(case)
            try:
                received = fn(*case.args.values(), **kwargs)
            except BaseException as error:
                return answer("error", f"{case_name(case)}: {error_message(error, code)}", output)
            try:
                exercise.check(case, expected, received)
            except Failed as failure:
                return answer("fail", f"{case_name(case)}: {failure}", output)
            except Exception as error:  # a result that cannot even be compared (an array of objects, say)
                return answer("fail", f"{case_name(case)}: your result could not be compared with the "
                                      f"expected one ({type(error).__name__}: {error}).", output)
    labels = "; ".join(case.label for case in cases)
    return answer("pass", f"Passed all {len(cases)} cases: {labels}.", output)


def exercise_info(name: str) -> dict:
    """What the page shows of exercise name: its task, signature, skeleton and solution."""
    e = EXERCISES[name]
    return {"name": e.name, "signature": e.signature, "task": e.task, "skeleton": e.skeleton, "solution": e.solution}

