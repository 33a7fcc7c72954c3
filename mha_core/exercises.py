"""The exercises the reader writes on the page: each one's task, skeleton, solution and checks, in one place.

run_exercise(name, code) runs the reader's code, a string given to compile() as data (never pasted into
source), in a namespace of its own, then calls the function it defines on random inputs and on the edge
cases the pages discuss, and compares what it does with mha_core: the shape, the dtype, the values (within
a tolerance) and, where the lesson is about memory, whether the result is a view of its input. The answer
says pass, or names the first case that failed and how. In the browser this runs in a Python of its own,
never the widgets' (the page ends it when it runs too long).
"""

from __future__ import annotations

import builtins
import contextlib
import io
import numbers
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .fields import Choice, Text, arguments
from .presets import PRESETS
from .rng import Random
from .shapes import shape_report

FILENAME = "<your code>"  # how the reader's code is named in its errors
PRINT_LIMIT = 4000  # characters of print output kept; the rest is counted, not kept
SEED = 2024
MAX_CODE_CHARS = 100_000  # far more than any answer needs; bounds what compile() is handed


class Failed(Exception):
    """A case whose result is not what mha_core gives; the message says how."""


@dataclass(frozen=True)
class Case:
    label: str  # the edge case it stands for, as the pages name it
    args: dict  # the reader's function's arguments, in order (passed by position), named for the messages
    causal: bool | None = None  # attention's keyword, when the case passes it


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
]}
FUNCTION_NAMES = {"kv_cache": "kv_cache_bytes"}  # the function an exercise asks for, where not its name


# ---------------------------------------------------------------- running the reader's code

class BoundedText(io.TextIOBase):
    """Print output, of which the first PRINT_LIMIT characters are kept and the rest only counted."""

    def __init__(self):
        self.parts, self.kept, self.dropped = [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = PRINT_LIMIT - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
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


def error_message(error: BaseException, code: str) -> str:
    if isinstance(error, SyntaxError):
        pointer = ""
        if error.text and error.offset:
            text = error.text.rstrip("\n")
            indent = len(text) - len(text.lstrip())
            pointer = f"\n    {text.strip()}\n    {' ' * max(error.offset - 1 - indent, 0)}^"
        return f"{type(error).__name__} at line {error.lineno}: {error.msg}{pointer}"
    if isinstance(error, SystemExit):
        return "Your code called exit(): nothing to check."
    where = reader_lines(error, code)
    return f"{type(error).__name__}: {error}" + (f"\n{where}" if where else "")


def answer(status: str, message: str, output: BoundedText) -> dict:
    return {"status": status, "message": message, "output": output.text()}


@arguments(name=Choice(tuple(EXERCISES)), code=Text(MAX_CODE_CHARS))
def run_exercise(name: str, code: str) -> dict:
    """Run the reader's code for exercise name and check the function it defines, case by case.

    Returns {status, message, output}: status "pass", "fail" (a case's result is wrong: the message names
    the case, its inputs, what was expected and what was received) or "error" (the code could not run: a
    syntax error or an exception, with the line in the reader's code); output is what the code printed.
    """
    exercise, output = EXERCISES[name], BoundedText()
    function = FUNCTION_NAMES.get(name, name)
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
        try:
            exec(compile(code, FILENAME, "exec"), namespace)
        except BaseException as error:  # the reader's error, reported; nothing is raised past here
            return answer("error", error_message(error, code), output)
        fn = namespace.get(function)
        if not callable(fn):
            return answer("error", f"Your code does not define {exercise.signature}.", output)
        cases = exercise.cases(Random(SEED))
        for case in cases:
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

