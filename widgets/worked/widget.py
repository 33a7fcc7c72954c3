"""Build-time side of the worked-example widget: its option and its first state.

build.py calls context(**options) and renders worked.html.j2 with the result: every matrix of the
example, computed and formatted by mha_core.worked in CPython, laid out in the steps the page walks
through. worked.js refills the same cells with Python's answer for another seed.
"""
from __future__ import annotations

from mha_core.worked import D_HEAD, D_MODEL, N_HEADS, N_TOKENS, worked_example

OPTIONS = {"seed": int}

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
for _i in range(2):
    CAPTIONS |= {f"q_{_i}": f"Q{_i + 1}", f"k_{_i}ᵀ": f"K{_i + 1}ᵀ", f"v_{_i}": f"V{_i + 1}",
                 f"scores_{_i}": f"scores{_i + 1}", f"weights_{_i}": f"weights{_i + 1}", f"z_{_i}": f"z{_i + 1}",
                 f"W_O_{_i}": f"W_O{_i + 1}", f"part_{_i}": f"z{_i + 1} W_O{_i + 1}"}

TOKEN_ROWS = {"X", "Q", "K", "V", "merged", "out"} | {f"{m}_{i}" for m in ("q", "v", "scores", "weights", "z", "part")
                                                       for i in range(2)}
TOKEN_COLS = {f"{m}_{i}" for m in ("scores", "weights", "k") for i in range(2)}  # keys (kᵀ: one token a column)
COLUMN_BLOCKS = {"W_Q", "W_K", "W_V", "Q", "K", "V", "merged"}  # column c belongs to head c // d_k
ROW_BLOCKS = {"W_O"}  # row r belongs to head r // d_k


def head_of(name: str, r: int, c: int, d_head: int) -> int | None:
    """Which head a cell belongs to (its colour), or None."""
    if name in COLUMN_BLOCKS:
        return c // d_head
    if name in ROW_BLOCKS:
        return r // d_head
    if name[-1] in "01" or name.endswith(("0ᵀ", "1ᵀ")):
        return int(name.rstrip("ᵀ")[-1])
    return None


def grid(example: dict, term: str) -> dict | None:
    """A matrix term as rows of cells {text, head}, with its labels; None for an operator."""
    name = term.rstrip("ᵀ")
    if name not in example["matrices"]:
        return None
    m, d_head, tokens = example["matrices"][name], example["d_head"], example["tokens"]
    text = m["text"] if name == term else [list(col) for col in zip(*m["text"])]  # kᵀ is shown transposed
    rows = [[{"text": t, "head": head_of(term, r, c, d_head)} for c, t in enumerate(row)] for r, row in enumerate(text)]
    return {"name": name, "transposed": name != term, "caption": CAPTIONS[term], "rows": rows,
            "shape": f"{len(rows)} × {len(rows[0])}",
            "row_labels": tokens if term in TOKEN_ROWS else None,
            "col_labels": tokens if term in TOKEN_COLS else None}


def context(seed: int = 1) -> dict:
    example = worked_example(seed)
    steps = [{"title": title, "text": text,
              "rows": [[{"op": term} if grid(example, term) is None else {"matrix": grid(example, term)}
                        for term in row] for row in rows]}
             for title, text, rows in STEPS]
    return {"example": example, "steps": steps}
