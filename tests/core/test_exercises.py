"""mha_core.exercises: the checks the browser runs on the reader's code. Each shipped solution passes, and so do
right solutions written differently; wrong ones fail with a message that names the case, its inputs and what
differed; a copy where a view is asked for is refused as a copy; errors point at the reader's line; print output
is kept, bounded; the widgets' bridge cannot run code. The detectors exercise is checked on the weights of the run
the page ships, as the page hands them over."""

import io
import json

import numpy as np
import pytest

from mha_core import exercises
from mha_core.exercises import EXERCISES, PRINT_LIMIT, run_exercise
from widgets.training.run import asset_bytes as training_run


def trained_params() -> str:
    """The trained model's weights as the page carries them: the shipped run's last checkpoint."""
    return json.loads(training_run())["checkpoints"][-1]["params"]


def run(name: str, code: str) -> dict:
    """run_exercise as the page calls it: with the trained model's weights for an exercise checked on them."""
    return run_exercise(name, code, trained_params() if EXERCISES[name].trained_cases else None)

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
    "online_softmax": """
import numpy as np

def online_softmax_update(m, l, o, scores, v):
    new_max = np.max(np.concatenate([m[:, None], scores], axis=1), axis=1)
    alpha = np.exp(m - new_max)
    weights = np.exp(scores - new_max[:, None])
    return new_max, alpha * l + weights.sum(axis=1), alpha[:, None] * o + np.einsum("qk,kd->qd", weights, v)
""",
    "kv_cache": """
def kv_cache_bytes(n_layers, batch, seq_len, n_heads, n_kv_heads, d_head, bytes_per_number):
    keys = values = batch * seq_len * n_kv_heads * d_head
    return n_layers * (keys + values) * bytes_per_number
""",
    "detectors": """
import numpy as np

def previous_token_score(pattern):
    B, h, n, _ = pattern.shape
    total, count = np.zeros(h), 0
    for b in range(B):
        for i in range(1, n):
            total += pattern[b, :, i, i - 1]
            count += 1
    return total / count if count else total

def induction_score(pattern, tokens):
    B, h, n, _ = pattern.shape
    total, count = np.zeros(h), 0
    for b in range(B):
        for i in range(n):
            keys = [j + 1 for j in range(i) if tokens[b, j] == tokens[b, i]]
            if keys:
                total += pattern[b, :, i, keys].sum(axis=0)
                count += 1
    return total / count if count else total
""",
}
DETECTORS = RIGHT["detectors"]
PREVIOUS_END = "return total / count if count else total\n\ndef induction"
PER_SEQUENCE = """def induction_score(pattern, tokens):
    B, h, n, _ = pattern.shape
    scores = np.zeros((B, h))
    for b in range(B):
        count = 0
        for i in range(n):
            keys = [j + 1 for j in range(i) if tokens[b, j] == tokens[b, i]]
            if keys:
                scores[b] += pattern[b, :, i, keys].sum(axis=0)
                count += 1
        scores[b] /= max(count, 1)
    return scores.mean(axis=0)
"""

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
    ("online_softmax", RIGHT["online_softmax"].replace("alpha * l +", "l +"),
     ['Case "the maximum rises for some queries"', "scores: [4, 5] float64", "l: values differ",
      "The old sum was not rescaled"]),
    ("online_softmax", RIGHT["online_softmax"].replace("alpha[:, None] * o", "np.exp(new_max - m)[:, None] * o"),
     ['Case "the first block', "o: values differ", "rescaled by exp(m' − m)"]),
    ("online_softmax", RIGHT["online_softmax"].replace("alpha[:, None] * o", "o"),
     ['Case "the maximum rises for some queries"', "o: values differ", "rescaled by nothing"]),
    ("online_softmax", RIGHT["online_softmax"].replace("alpha[:, None] * o", "np.exp(m - scores.max(axis=1))[:, None] * o"),
     ['Case "the maximum rises for some queries"', "o: values differ", "exp(m − the block's maximum)"]),
    ("online_softmax", RIGHT["online_softmax"].replace("return new_max,", "return m,"),
     ['Case "the first block', "m: values differ", "The maximum was not updated"]),
    ("online_softmax", RIGHT["online_softmax"].replace("np.concatenate([m[:, None], scores], axis=1)", "scores"),
     ['Case "the maximum rises for some queries"', "m: values differ", "forgot the old maximum"]),
    ("online_softmax", RIGHT["online_softmax"].replace("return new_max, alpha * l +", "return new_max.astype(np.float64), alpha * l +"),
     ['Case "float32"', "m: expected dtype float32, received float64"]),
    ("detectors", DETECTORS.replace(PREVIOUS_END, "return total / (B * n)\n\ndef induction"),
     ['Case "a perfect previous-token head', "previous_token_score(pattern: [2, 2, 5, 5] float64)",
      "head 0: expected 1, received 0.8.", "as TransformerLens does", "(8 of 10 here)"]),
    ("detectors", DETECTORS.replace("pattern[b, :, i, i - 1]", "pattern[b, :, i - 1, i]"),
     ['Case "a perfect previous-token head', "head 0: expected 1, received 0."]),
    ("detectors", DETECTORS.replace("total += pattern[b, :, i, i - 1]",
                                    "total += pattern[b, :, i].argmax(-1) == i - 1"),
     ['Case "ties: each query\'s weight spread evenly"', "not whether a query's largest weight is on one"]),
    ("detectors", DETECTORS.replace(PREVIOUS_END, "return total / count\n\ndef induction"),
     ['Case "one token: no query has a target"', "expected 0, received nan", "the score is 0"]),
    ("detectors", DETECTORS.replace("keys = [j + 1 for", "keys = [j for"),
     ['Case "a perfect induction head" (induction_score(pattern: [1, 2, 8, 8] float64, tokens: [1, 8] int64))',
      "head 0: expected 1, received 0.", "the earlier occurrence itself"]),
    ("detectors", DETECTORS.replace("total += pattern[b, :, i, keys].sum(axis=0)",
                                    "total += np.isin(pattern[b, :, i].argmax(-1), keys)"),
     ['Case "ties on a repeated block', "not whether a query's largest weight is on one"]),
    ("detectors", DETECTORS.rsplit("return total / count if count else total", 1)[0] + "return total / (B * n)\n",
     ['Case "a perfect induction head"', "as TransformerLens does", "(4 of 8 here)"]),
    ("detectors", DETECTORS.replace("if tokens[b, j] == tokens[b, i]]", "if tokens[b, j] == tokens[b, i]][-1:]"),
     ['Case "a block seen three times', "a target after each of its earlier occurrences"]),
    ("detectors", DETECTORS.split("def induction_score")[0] + PER_SEQUENCE,
     ['Case "B = 2, blocks of different lengths"', "each sequence's own score"]),
    ("detectors", DETECTORS.rsplit("return total / count if count else total", 1)[0] + "return total / count\n",
     ['Case "no repeat: no query has a target"', "(not a division by zero)"]),
    ("detectors", DETECTORS.replace("total, count = np.zeros(h), 0", "total, count = np.zeros((B, h)), 0", 1).replace(
        "total += pattern[b, :, i, i - 1]", "total[b] += pattern[b, :, i, i - 1]"),
     ['Case "a perfect previous-token head', "expected shape [2], one score per head, received [2, 2]",
      "the batch axis"]),
    ("detectors", DETECTORS.split("def induction_score")[0],
     ["Your code does not define induction_score(pattern, tokens)."]),
]


@pytest.mark.parametrize("name", EXERCISES)
def test_the_shipped_solution_passes(name):
    answer = run(name, EXERCISES[name].solution)
    assert answer["status"] == "pass", answer["message"]
    assert answer["message"].startswith("Passed all")


@pytest.mark.parametrize("name", EXERCISES)
def test_a_right_solution_written_differently_passes(name):
    answer = run(name, RIGHT[name])
    assert answer == {"status": "pass", "message": answer["message"], "output": ""}, answer["message"]


@pytest.mark.parametrize("name", EXERCISES)
def test_the_skeleton_fails_on_the_first_case(name):
    answer = run(name, EXERCISES[name].skeleton)
    assert answer["status"] == "fail"
    assert answer["message"].startswith('Case "')


@pytest.mark.parametrize("name, code, words", WRONG)
def test_a_wrong_solution_fails_naming_the_case(name, code, words):
    answer = run(name, code)
    assert answer["status"] in ("fail", "error"), answer
    for word in words:
        assert word in answer["message"], answer["message"]


def test_every_case_the_pages_discuss_is_checked():
    from mha_core.rng import Random
    for name in ("split_heads", "merge_heads", "attention"):
        labels = " ".join(c.label for c in EXERCISES[name].cases(Random(0)))
        for edge in ("h = 1", "n = 1", "B > 1", "non-contiguous", "float32"):
            assert edge in labels, (name, edge)
    online = " ".join(c.label for c in EXERCISES["online_softmax"].cases(Random(0)))
    for edge in ("the first block", "the maximum rises for some queries", "no maximum rises", "masked", "float32"):
        assert edge in online, edge
    detectors = " ".join(c.label for c in EXERCISES["detectors"].cases(Random(0)))
    for edge in ("no repeat: no query has a target", "the first token has no previous token", "ties",
                 "one token: no query has a target", "two targets", "B = 2"):
        assert edge in detectors, edge


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
    assert answer["pointer"] == "def merge_heads(z)\n" + " " * len("def merge_heads(z)") + "^"


def test_a_syntax_error_s_caret_sits_under_its_column_whatever_the_indentation():
    answer = run_exercise("merge_heads", "def merge_heads(z):\n\tif z:\n\t\treturn z.reshape(WWW iii)\n")
    line, caret = answer["pointer"].split("\n")
    assert line == "return z.reshape(WWW iii)" and caret == " " * line.index("WWW") + "^"
    tabbed = run_exercise("merge_heads", "def merge_heads(z):\n    x = [1,\t+* 2]\n")["pointer"]
    line, caret = tabbed.split("\n")  # a tab before the column stays a tab in the caret's lead
    assert caret == " " * len("x = [1,") + "\t ^" and line[len(caret) - 1] == "*"
    assert "pointer" not in run_exercise("merge_heads", "def merge_heads(z):\n    return z.nope\n")


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


def test_what_is_kept_of_the_prints_is_echoed_as_it_is_written(monkeypatch):
    """In the browser the kept prints also go to the exercises' Python's stdout as they happen (the page keeps
    them when it ends a run): the echo receives exactly the output's kept part, the first part before the run
    goes on."""
    assert exercises.ECHO is None  # in CPython the prints are only answered
    echo = io.StringIO()
    seen = []
    monkeypatch.setattr(exercises, "ECHO", echo)
    code = ("import sys\nprint('hello')\ndef kv_cache_bytes(*a):\n    print('x' * 10**6)\n    return 0\n"
            "sys.stderr.write('to stderr\\n')\n")
    monkeypatch.setattr(echo, "write", lambda text, write=echo.write: seen.append(text) or write(text))
    answer = run_exercise("kv_cache", code)
    kept = answer["output"].partition("\n… (")[0]
    assert echo.getvalue() == kept and kept.startswith("hello\nto stderr\nxxx")
    assert seen[:2] == ["hello", "\n"]  # as print wrote them, one write at a time


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


# ---------------------------------------------------------------- the detectors, on the trained model

# Right on every constructed case, wrong on the trained model's sequences (n = 32): only its case can fail it.
WRONG_ON_THE_TRAINED_MODEL = DETECTORS.replace(
    PREVIOUS_END, "if n == 32:\n        total *= 0.9\n    " + PREVIOUS_END)
TRAINED_CASE_FAILS = ('Case "the trained model\'s layer 0 on its evaluation sequences" '
                      '(previous_token_score(pattern: [16, 2, 32, 32] float64)): head 0: expected ')


def test_the_detectors_are_checked_on_the_trained_model_s_patterns_as_its_chart_scores_them():
    """The trained cases run the shipped run's last checkpoint on its evaluation sequences: mha_core's detector
    gives there the scores the training widget's chart shows (rounded to 3 decimals; the page's weights are
    float16)."""
    from mha_page.views.training import decode_params
    from mha_core.model import TrainConfig
    exercise = EXERCISES["detectors"]
    cases = exercise.trained_cases(decode_params(trained_params(), TrainConfig()))
    shown = json.loads(training_run())["history"][-1]["scores"]
    for case, layer, kind in zip(cases, (0, 1), ("previous_token", "induction")):
        assert case.args["pattern"].shape == (16, 2, 32, 32), case.label
        assert np.allclose(exercise.expect(case), shown[kind][layer], atol=2e-3), (case.label, shown[kind][layer])
    answer = run("detectors", WRONG_ON_THE_TRAINED_MODEL)
    assert answer["status"] == "fail"
    assert answer["message"].startswith(TRAINED_CASE_FAILS), answer["message"]


def test_the_detectors_exercise_needs_the_trained_weights_and_the_others_refuse_them():
    with pytest.raises(ValueError, match="^params is needed: the detectors exercise checks"):
        run_exercise("detectors", DETECTORS)
    with pytest.raises(ValueError, match="^params is for an exercise on the trained model; kv_cache takes none"):
        run_exercise("kv_cache", RIGHT["kv_cache"], trained_params())
    with pytest.raises(ValueError, match="^params hold 3 numbers, but this config has"):
        run_exercise("detectors", DETECTORS, "AAAAAAAA")
    with pytest.raises(ValueError, match="^params must be a string"):
        run_exercise("detectors", DETECTORS, 3)


@pytest.mark.parametrize("n, P", [(32, 5), (32, 16), (9, 3)])
def test_a_perfect_induction_head_scores_1_and_n_minus_p_over_n_counting_every_query(n, P):
    """What-heads-learn's question: its score counts the queries with a target; TransformerLens's, every query."""
    from mha_core.detectors import detector_scores
    from mha_core.exercises import ideal_pattern, repeated
    tokens = np.array([repeated(list(range(P)), n)])  # [1, n]: a block of P distinct tokens, repeated
    perfect = ideal_pattern("induction", tokens, 1)  # [1, 1, n, n]
    assert detector_scores([perfect], tokens)["induction"][0][0] == pytest.approx(1.0)
    after = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i):
            after[i, j + 1] |= bool(tokens[0, j] == tokens[0, i])  # the key after an earlier occurrence
    assert (perfect[0, 0] * after).sum() / n == pytest.approx((n - P) / n)
