"""The worked example's view: each cell is mha_core.worked's number, formatted once (one decimal for what is
drawn, two for what is computed, a true minus sign), transposed where the page shows kᵀ, coloured by its
head; the browser gets the view through the bridge."""

import json

import pytest

from mha_page import bridge
from mha_page.views import decimal
from mha_page.views.worked import head_of, worked_view
from mha_core.worked import D_HEAD, INPUTS, worked_example


def test_decimals_use_a_minus_sign_and_never_show_minus_zero():
    assert (decimal(-0.001), decimal(-1.25), decimal(0.5), decimal(-0.04, 1)) == ("0.00", "\u22121.25", "0.50", "0.0")


@pytest.mark.parametrize("seed,tokens", [(1, ("the", "cat", "sat")), (7, ("mat", "mat", "a")), (2**32, ("on", "a", "the"))])
def test_every_cell_is_mha_core_s_number(seed, tokens):
    example, view = worked_example(seed, tokens), worked_view(seed, tokens)
    for name, slot in view["outputs"].items():
        if not name.startswith("matrix-"):
            continue
        term = name.removeprefix("matrix-")
        values = example["matrices"][term.rstrip("ᵀ")]["values"]
        shown = values if term == term.rstrip("ᵀ") else [list(col) for col in zip(*values)]
        decimals = 1 if term in INPUTS else 2
        cells = [[cell for cell in row["rows"]] for row in slot["rows"]]
        assert [[len(row) for row in cells]] == [[len(row) for row in shown]]
        for r, row in enumerate(cells):
            for c, cell in enumerate(row):
                assert float(cell["text"].replace("\u2212", "-")) == pytest.approx(shown[r][c], abs=0.5 * 10**-decimals + 1e-12)
                assert (cell["data"]["r"], cell["data"]["c"]) == (r, c)
                assert cell["data"].get("cell-head") == head_of(term, r, c)
    assert [view["outputs"][f"token-{i}"] for i in range(3)] == list(tokens)
    assert view["data"] == {"seed": seed, "tokens": " ".join(tokens)}


def test_each_head_owns_its_blocks():
    assert [head_of("W_Q", 0, c) for c in range(4)] == [c // D_HEAD for c in range(4)]
    assert [head_of("W_O", r, 0) for r in range(4)] == [r // D_HEAD for r in range(4)]
    assert head_of("k_1ᵀ", 0, 0) == 1 and head_of("X", 0, 3) is None


def test_every_step_s_matrix_has_its_cells():
    view = worked_view(3)
    terms = {t["matrix"]["term"] for s in view["fixed"]["steps"] for row in s["rows"] for t in row if "matrix" in t}
    assert {f"matrix-{t}" for t in terms} == {n for n in view["outputs"] if n.startswith("matrix-")}
    assert len(view["fixed"]["steps"]) == 6


def test_through_the_bridge_the_browser_gets_the_view():
    answer = json.loads(bridge.call("worked_view", json.dumps({"seed": 5})))
    assert answer["ok"] and answer["result"] == json.loads(json.dumps(worked_view(5)))
    answer = json.loads(bridge.call("worked_view", json.dumps({"seed": 0})))
    assert not answer["ok"] and "seed" in answer["error"]
