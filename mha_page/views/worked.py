"""The worked example's view: every matrix of mha_core.worked as the reader reads it (the form mha_page.views
describes), laid out in the steps the page walks through ("fixed": what no control changes)."""

from __future__ import annotations

from mha_core.worked import D_HEAD, D_MODEL, INPUTS, N_HEADS, N_TOKENS, TOKENS, worked_example
from . import decimal, declared_as

# Each step: its title, what it says, and its rows of terms. A term is a matrix name or an operator.
# Head i's names end in _0 or _1; the reader counts heads from 1. The layout is for two heads.
STEPS = [
    ("The input", f"{N_TOKENS} tokens, each a row of d_model = {D_MODEL} numbers.", [["X"]]),
    ("One projection for all heads",
     f"Each weight matrix is {D_MODEL} × {D_MODEL}: its first {D_HEAD} columns belong to head 1, its last "
     f"{D_HEAD} to head 2. So the first {D_HEAD} columns of Q, K and V are head 1's queries, keys and values.",
     [["X", "×", "W_Q", "=", "Q"], ["X", "×", "W_K", "=", "K"], ["X", "×", "W_V", "=", "V"]]),
    *[(f"Head {i + 1} on its own",
       f"Head {i + 1}'s columns of Q and K give its scores, divided by √d_k = √{D_HEAD}; a softmax over each "
       f"row gives its weights; the weights average head {i + 1}'s columns of V into z{i + 1}.",
       [[f"q_{i}", "×", f"k_{i}ᵀ", f"/ √{D_HEAD} =", f"scores_{i}", "softmax →", f"weights_{i}"],
        [f"weights_{i}", "×", f"v_{i}", "=", f"z_{i}"]]) for i in range(N_HEADS)],
    ("The concatenation",
     f"The heads' outputs side by side: {N_TOKENS} × {N_HEADS * D_HEAD} again. In memory this is the merge.",
     [["merged"]]),
    ("The output projection",
     f"W_O's first {D_HEAD} rows, W_O1, act on head 1's columns, its last {D_HEAD}, W_O2, on head 2's, so the "
     "product is a sum of one term per head.",
     [["merged", "×", "W_O", "=", "out"], ["z_0", "×", "W_O_0", "=", "part_0"], ["z_1", "×", "W_O_1", "=", "part_1"],
      ["part_0", "+", "part_1", "=", "out"]]),
]

CAPTIONS = {"X": "X", "W_Q": "W_Q", "W_K": "W_K", "W_V": "W_V", "Q": "Q", "K": "K", "V": "V",
            "merged": "[z1 z2]", "W_O": "W_O", "out": "output"}
for _i in range(N_HEADS):
    CAPTIONS |= {f"q_{_i}": f"Q{_i + 1}", f"k_{_i}ᵀ": f"K{_i + 1}ᵀ", f"v_{_i}": f"V{_i + 1}",
                 f"scores_{_i}": f"scores{_i + 1}", f"weights_{_i}": f"weights{_i + 1}", f"z_{_i}": f"z{_i + 1}",
                 f"W_O_{_i}": f"W_O{_i + 1}", f"part_{_i}": f"z{_i + 1} W_O{_i + 1}"}

TOKEN_ROWS = {"X", "Q", "K", "V", "merged", "out"} | {f"{m}_{i}" for m in ("q", "v", "scores", "weights", "z", "part")
                                                       for i in range(N_HEADS)}
TOKEN_COLS = {f"{m}_{i}" for m in ("scores", "weights", "k") for i in range(N_HEADS)}  # keys (kᵀ: one token a column)
COLUMN_BLOCKS = {"W_Q", "W_K", "W_V", "Q", "K", "V", "merged"}  # column c belongs to head c // d_k
ROW_BLOCKS = {"W_O"}  # row r belongs to head r // d_k


def head_of(term: str, r: int, c: int) -> int | None:
    """Which head a cell belongs to (its colour), or None."""
    if term in COLUMN_BLOCKS:
        return c // D_HEAD
    if term in ROW_BLOCKS:
        return r // D_HEAD
    if term[-1] in "01" or term.endswith(("0ᵀ", "1ᵀ")):
        return int(term.rstrip("ᵀ")[-1])
    return None


def matrix(example: dict, term: str) -> dict:
    """A matrix term's cells as rows of slots {text, data: {r, c, cell-head}}; kᵀ is shown transposed."""
    name = term.rstrip("ᵀ")
    values = example["matrices"][name]["values"]
    shown = values if name == term else [list(col) for col in zip(*values)]
    decimals = 1 if name in INPUTS else 2

    def cell(r, c, v):
        head = head_of(term, r, c)
        return {"text": decimal(v, decimals), "data": {"r": r, "c": c} | ({} if head is None else {"cell-head": head})}
    return {"rows": [{"rows": [cell(r, c, v) for c, v in enumerate(row)]} for r, row in enumerate(shown)]}


def layout(example: dict) -> list[dict]:
    """The steps: each a title, its words, and rows of terms ({op} or {matrix: how its table is drawn})."""
    def term(t):
        name = t.rstrip("ᵀ")
        if name not in example["matrices"]:
            return {"op": t}
        rows, cols = example["matrices"][name]["shape"][::1 if name == t else -1]
        return {"matrix": {"name": name, "term": t, "transposed": name != t, "caption": CAPTIONS[t],
                           "shape": f"{rows} × {cols}", "row_labels": t in TOKEN_ROWS, "col_labels": t in TOKEN_COLS,
                           "rows": rows, "cols": cols}}
    return [{"title": title, "text": text, "rows": [[term(t) for t in row] for row in rows]} for title, text, rows in STEPS]


@declared_as(worked_example)
def worked_view(seed: int = 1, tokens=TOKENS) -> dict:
    """The widget's view for a seed and the reader's words."""
    example = worked_example(seed, tokens)
    outputs = {"seed": str(example["seed"])} | {f"token-{i}": t for i, t in enumerate(example["tokens"])}
    for step in layout(example):
        for row in step["rows"]:
            for t in row:
                if "matrix" in t:
                    outputs[f"matrix-{t['matrix']['term']}"] = matrix(example, t["matrix"]["term"])
    return {"data": {"seed": example["seed"], "tokens": " ".join(example["tokens"])}, "outputs": outputs,
            "fixed": {"steps": layout(example), "vocab": example["vocab"], "tokens": example["tokens"]}}
