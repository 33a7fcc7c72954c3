"""The memory widget's view: each step's data and words are mha_core.memory's answers, every cell is drawn once
with its token and head, units wrap whole, and the browser gets the view through the bridge."""

import json

import numpy as np
import pytest

from mha_page import bridge
from mha_core.memory import D_MODEL, memory_steps
from mha_page.views.memory import memory_view, note, strides, wrap_unit

CASES = [(n, h, wrong) for n in (1, 3, 4) for h in (1, 2, 4) for wrong in (False, True)]


def cells_of(slot: dict) -> list[dict]:
    return [cell for unit in slot["rows"] for cell in unit["rows"]]


@pytest.mark.parametrize("n,h,wrong", CASES)
def test_each_step_shows_numpy_s_answers(n, h, wrong):
    r, view = memory_steps(n, h, wrong), memory_view(n, h, wrong)
    steps = view["outputs"]["steps"]["rows"]
    assert [s["data"]["step"] for s in steps] == [s["name"] for s in r["steps"]]
    for shown, s in zip(steps, r["steps"]):
        assert shown["data"]["strides"] == ",".join(map(str, s["strides_bytes"]))
        assert shown["data"]["view"] == ("true" if s["view"] else "false") and shown["data"]["moved"] == s["moved"]
        for row in ("memory", "read"):
            cells = cells_of(shown["outputs"][row])
            assert [(c["text"], c["data"]["cell-head"]) for c in cells] == [(str(c["token"] + 1), c["head"]) for c in s[row]]
        slid = [c["vars"]["--from"] for c in cells_of(shown["outputs"]["memory"]) if c["data"]["moved"] == "true"]
        assert slid == [j - i for i, j in enumerate(s["from"] or []) if j != i]
        assert shown["outputs"]["play"] == {"hidden": not s["moved"]}
    assert view["data"] == {"n": n, "h": h, "wrong": "true" if wrong else "false"}


@pytest.mark.parametrize("n,h,wrong", CASES)
def test_units_wrap_whole_and_gaps_fall_between_the_array_s_rows(n, h, wrong):
    for s, shown in zip(memory_steps(n, h, wrong)["steps"], memory_view(n, h, wrong)["outputs"]["steps"]["rows"]):
        unit = wrap_unit(s["shape"], D_MODEL)
        units = shown["outputs"]["read"]["rows"]
        assert [len(u["rows"]) for u in units] == [unit] * (len(s["read"]) // unit)
        row = s["shape"][-1]
        gaps = [c["data"]["gap"] for c in cells_of(shown["outputs"]["read"])]
        assert gaps == [int(i % unit != 0 and i % row == 0) for i in range(len(s["read"]))]


@pytest.mark.parametrize("n,h", [(3, 2), (4, 4), (1, 1)])
def test_each_pattern_cell_is_the_weight_it_shows(n, h):
    r, view = memory_steps(n, h), memory_view(n, h)
    for figure in view["outputs"]["patterns"]["rows"]:
        weights = np.asarray(r["patterns"][figure["data"]["split"]])  # [h, n, n]
        tables = figure["outputs"]["heads"]["rows"]
        shown = [[[float(c["vars"]["--w"]) for c in tr["rows"]] for tr in t["outputs"]["pattern"]["rows"]] for t in tables]
        assert np.allclose(shown, weights, rtol=0, atol=5e-7)
        text = [[[float(c["text"]) for c in tr["rows"]] for tr in t["outputs"]["pattern"]["rows"]] for t in tables]
        assert np.allclose(text, weights, atol=0.005)


def test_words():
    assert strides([64, 8], 8) == "strides (64, 8) bytes = (8, 1) elements"
    assert strides([8], 8) == "strides (8,) bytes = (1,) elements"
    merge = memory_steps(3, 2)["steps"][-1]
    assert note(merge, 2) == f"a copy: {merge['moved']} of 24 numbers move to a new place, token by token"
    assert note(memory_steps(1, 2)["steps"][-1], 2) == "a view of z: no copy, because n = 1"
    assert note(memory_steps(3, 1)["steps"][-1], 1) == "a view of z: no copy, because h = 1"


def test_through_the_bridge_the_browser_gets_the_view():
    answer = json.loads(bridge.call("memory_view", json.dumps({"n_tokens": 2, "n_heads": 4, "wrong": False})))
    assert answer["ok"] and answer["result"] == json.loads(json.dumps(memory_view(2, 4)))


@pytest.mark.parametrize("h", [1, 2, 4])
def test_the_legend_names_each_head_there_is(h):
    legend = memory_view(3, h)["outputs"]["legend"]["rows"]
    assert [(c["text"], c["data"]["cell-head"]) for c in legend] == [(f"head {i + 1}", i) for i in range(h)]
