"""mha_core.exercises: the checks the browser runs on the reader's code. Each shipped solution passes, and so do
right solutions written differently; wrong ones fail with a message that names the case, its inputs and what
differed; a copy where a view is asked for is refused as a copy; errors point at the reader's line; print output
is kept, bounded; the widgets' bridge cannot run code."""


import numpy as np
import pytest

from mha_core.exercises import EXERCISES, PRINT_LIMIT, run_exercise

# Right, and written unlike the shipped solutions.
RIGHT = {
    "split_heads": """
import numpy as np

def split_heads(x, n_heads):
    *lead, d_model = x.shape
    heads = x.reshape(*lead, n_heads, -1)
    return np.moveaxis(heads, -2, -3)
""",
    "merge_heads": """
import numpy as np

def merge_heads(z):
    z = np.einsum("bhnd->bnhd", z)
    return z.reshape(z.shape[0], z.shape[1], -1)
""",
    "attention": """
import math
import numpy as np

def attention(q, k, v, causal=False):
    scores = np.einsum("...qd,...kd->...qk", q, k) / math.sqrt(q.shape[-1])
    if causal:
        i = np.arange(scores.shape[-2])[:, None]
        j = np.arange(scores.shape[-1])[None, :]
        scores = np.where(j <= i, scores, -np.inf)
    top = np.max(scores, axis=-1, keepdims=True)
    e = np.exp(scores - top)
    return np.einsum("...qk,...kd->...qd", e / e.sum(-1, keepdims=True), v)
""",
    "kv_cache": """
def kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number):
    keys = values = batch * seq_len * n_kv_heads * d_head
    return n_layers * (keys + values) * bytes_per_number
""",
}

# Wrong, each in one way: (exercise, code, words the message must hold).
WRONG = [
    ("split_heads", "def split_heads(x, n_heads):\n    B, n, d = x.shape\n    return x.reshape(B, n_heads, n, d // n_heads)\n",
     ['Case "random input"', "x: [2, 5, 12] float64", "values differ"]),
    ("split_heads", "def split_heads(x, n_heads):\n    B, n, d = x.shape\n    return x.reshape(B, n, n_heads, d // n_heads)\n",
     ['Case "random input"', "expected shape [2, 3, 5, 4], received [2, 5, 3, 4]"]),
    ("split_heads", "def split_heads(x, n_heads):\n    return x.reshape(2, 5, n_heads, 4).transpose(0, 2, 1, 3)\n",
     ['Case "h = 1"', "ValueError", "line 2, in split_heads"]),
    ("split_heads", "def split_heads(x, n_heads):\n    B, n, d = x.shape\n    return x.astype('float64').reshape(B, n, n_heads, -1).transpose(0, 2, 1, 3)\n",
     ['Case "random input"', "copy"]),
    ("merge_heads", "def merge_heads(z):\n    B, h, n, d = z.shape\n    return z.reshape(B, n, h * d)\n",
     ['Case "random input"', "z: [2, 3, 5, 4] float64", "values differ"]),
    ("merge_heads", "def merge_heads(z):\n    B, h, n, d = z.shape\n    return z.transpose(0, 2, 1, 3).reshape(B, n, h * d).astype('float64')\n",
     ['Case "float32"', "expected dtype float32, received float64"]),
    ("attention", RIGHT["attention"].replace(" / math.sqrt(q.shape[-1])", ""),
     ['Case "random input, no leading axis"', "q: [4, 8] float64", "values differ"]),
    ("attention", RIGHT["attention"].replace("j <= i", "j < i + 2"),
     ['Case "causal"', "causal=True", "values differ"]),
    ("attention", RIGHT["attention"].replace("math.sqrt(q.shape[-1])", "np.sqrt(q.shape[-1])"),
     ['Case "float32"', "expected dtype float32, received float64"]),
    ("attention", RIGHT["attention"].replace("scores - top", "scores"),
     ['Case "large scores', "values differ"]),
    ("attention", RIGHT["attention"].replace('np.einsum("...qd,...kd->...qk", q, k)', "(q @ k.T)"),
     ['Case "B > 1', "q: [2, 3, 5, 4] float64", "ValueError", "line 6, in attention"]),
    ("kv_cache", RIGHT["kv_cache"].replace("n_kv_heads * d_head", "n_heads * d_head"),
     ['Case "Llama 3 8B', "n_kv_heads: 8", "expected 1,073,741,824 bytes", "every query head"]),
    ("kv_cache", RIGHT["kv_cache"].replace("(keys + values)", "keys"),
     ['Case "GPT-2 small', "Both keys and values"]),
]


@pytest.mark.parametrize("name", EXERCISES)
def test_the_shipped_solution_passes(name):
    answer = run_exercise(name, EXERCISES[name].solution)
    assert answer["status"] == "pass", answer["message"]
    assert answer["message"].startswith("Passed all")


@pytest.mark.parametrize("name", EXERCISES)
def test_a_right_solution_written_differently_passes(name):
    answer = run_exercise(name, RIGHT[name])
    assert answer == {"status": "pass", "message": answer["message"], "output": ""}, answer["message"]


@pytest.mark.parametrize("name", EXERCISES)
def test_the_skeleton_fails_on_the_first_case(name):
    answer = run_exercise(name, EXERCISES[name].skeleton)
    assert answer["status"] == "fail"
    assert answer["message"].startswith('Case "')


@pytest.mark.parametrize("name, code, words", WRONG)
def test_a_wrong_solution_fails_naming_the_case(name, code, words):
    answer = run_exercise(name, code)
    assert answer["status"] in ("fail", "error"), answer
    for word in words:
        assert word in answer["message"], answer["message"]


def test_every_case_the_pages_discuss_is_checked():
    from mha_core.rng import Random
    for name in ("split_heads", "merge_heads", "attention"):
        labels = " ".join(c.label for c in EXERCISES[name].cases(Random(0)))
        for edge in ("h = 1", "n = 1", "B > 1", "non-contiguous", "float32"):
            assert edge in labels, (name, edge)


def test_a_copy_is_refused_as_a_copy_even_when_its_values_are_right():
    code = "import numpy as np\ndef split_heads(x, n_heads):\n    B, n, d = x.shape\n" \
           "    return np.ascontiguousarray(x.reshape(B, n, n_heads, d // n_heads).transpose(0, 2, 1, 3))\n"
    answer = run_exercise("split_heads", code)
    assert answer["status"] == "fail"
    assert "values are right but your result is a copy" in answer["message"]
    assert "np.shares_memory(result, x) is False" in answer["message"]


def test_a_syntax_error_names_its_line():
    answer = run_exercise("merge_heads", "import numpy as np\n\ndef merge_heads(z)\n    return z\n")
    assert answer["status"] == "error"
    assert answer["message"].startswith("SyntaxError at line 3: expected ':'")
    assert "def merge_heads(z)" in answer["message"]


def test_an_exception_shows_the_reader_s_lines_only():
    code = "def helper(z):\n    return z.nope\n\ndef merge_heads(z):\n    return helper(z)\n"
    answer = run_exercise("merge_heads", code)
    assert answer["status"] == "error"
    message = answer["message"]
    assert message.startswith('Case "random input" (z: [2, 3, 5, 4] float64): AttributeError:')
    assert "  line 5, in merge_heads: return helper(z)\n  line 2, in helper: return z.nope" in message
    assert "exercises.py" not in message and "Traceback" not in message


def test_an_exception_at_the_top_level_and_a_missing_function():
    assert run_exercise("attention", "x = 1 / 0\n")["message"] == "ZeroDivisionError: division by zero\n  line 1: x = 1 / 0"
    missing = run_exercise("attention", "def attend(q, k, v):\n    pass\n")
    assert missing == {"status": "error", "message": "Your code does not define attention(q, k, v, causal=False).",
                       "output": ""}
    assert run_exercise("attention", "raise SystemExit(3)\n")["status"] == "error"


def test_print_output_is_kept_and_bounded():
    code = "print('hello')\ndef kv_cache_bytes(*a):\n    print('x' * 10**6)\n    return 0\n"
    answer = run_exercise("kv_cache", code)
    assert answer["status"] == "fail"
    assert answer["output"].startswith("hello\nxxx")
    kept, _, note = answer["output"].partition("\n… (")
    assert len(kept) == PRINT_LIMIT
    assert note == f"{6 + 1_000_001 - PRINT_LIMIT:,} more characters not shown)"


def test_the_reader_s_code_is_data():
    """Code with quotes, backslashes and a triple quote runs as written: it is compiled, never pasted."""
    code = 'S = """\'\\\\"""\n' + RIGHT["kv_cache"]
    assert run_exercise("kv_cache", code)["status"] == "pass"


def test_the_inputs_are_not_shared_with_the_expected_result():
    """A function that writes into its inputs cannot change what it is compared with."""
    code = RIGHT["attention"].replace("    scores =", "    q *= 0\n    k *= 0\n    scores =", 1)
    assert run_exercise("attention", code)["status"] == "fail"


def test_a_case_s_arrays_are_as_labelled():
    from mha_core.rng import Random
    cases = {c.label: c for c in EXERCISES["split_heads"].cases(Random(0))}
    assert not cases["non-contiguous input"].args["x"].flags.c_contiguous
    assert cases["float32"].args["x"].dtype == np.float32


@pytest.mark.parametrize("args, message", [
    ({"name": "nope", "code": "x = 1"}, "name must be one of split_heads, merge_heads"),
    ({"name": "kv_cache", "code": "  "}, "code is empty."),
    ({"name": "kv_cache", "code": None}, "code must be a string, got NoneType."),
])
def test_run_exercise_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError) as refused:
        run_exercise(**args)
    assert str(refused.value).startswith(message)
