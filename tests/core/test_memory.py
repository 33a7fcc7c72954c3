"""The memory widget's steps: NumPy's strides and buffers as the page draws them, checked against
NumPy asked directly, against PyTorch's strides (in elements), and the labels against the numbers."""

import json

import numpy as np
import pytest
import torch

from mha_core import merge_heads, split_heads
from mha_core.memory import D_MODEL, HEAD_CHOICES, MAX_TOKENS, OFFSETS, constructed_qkv, memory_steps

CASES = [(n, h) for n in range(1, MAX_TOKENS + 1) for h in HEAD_CHOICES]


@pytest.mark.parametrize("n, h", CASES)
def test_right_split_strides_are_numpys_and_torchs(n, h):
    r = memory_steps(n, h)
    d_k = D_MODEL // h
    q, _, _ = constructed_qkv(n, h)
    names = [s["name"] for s in r["steps"]]
    assert names == ["q", "reshape", "transpose", "z", "transpose back", "merge"]
    by = dict(zip(names, r["steps"]))
    assert by["transpose"]["shape"] == [h, n, d_k]
    assert tuple(by["transpose"]["strides_bytes"]) == split_heads(q, h).strides
    assert by["reshape"]["strides_bytes"] == [D_MODEL * 8, d_k * 8, 8]
    z = np.zeros((h, n, d_k))  # attention's output layout: a new array, heads outermost
    assert tuple(by["z"]["strides_bytes"]) == z.strides
    # PyTorch counts strides in elements: the same steps spelled view / transpose
    t = torch.from_numpy(q)
    assert list(t.view(n, h, d_k).stride()) == by["reshape"]["strides_elements"]
    assert list(t.view(n, h, d_k).transpose(0, 1).stride()) == by["transpose"]["strides_elements"]
    assert list(torch.from_numpy(z).transpose(0, 1).stride()) == by["transpose back"]["strides_elements"]
    for s in r["steps"]:
        assert s["strides_elements"] == [b // 8 for b in s["strides_bytes"]]
    # views and copies, as np.shares_memory and torch's is_contiguous say
    assert [s["view"] for s in r["steps"][:5]] == [False, True, True, False, True]
    copies = h > 1 and n > 1
    assert r["merge_copies"] == copies == (not by["merge"]["view"])
    assert by["merge"]["buffer"] == ("merged" if copies else "z")
    assert torch.from_numpy(z).transpose(0, 1).is_contiguous() == (not copies)
    assert r["merge_copies"] == (not np.shares_memory(merge_heads(z), z))


@pytest.mark.parametrize("n, h", CASES)
def test_cells_follow_the_numbers(n, h):
    """In memory, q lies token by token; z head by head; the merge puts it back token by token."""
    r = memory_steps(n, h)
    d_k = D_MODEL // h
    token_major = [{"token": t, "head": i, "feature": f} for t in range(n) for i in range(h) for f in range(d_k)]
    head_major = [{"token": t, "head": i, "feature": f} for i in range(h) for t in range(n) for f in range(d_k)]
    memory = {s["name"]: s["memory"] for s in r["steps"]}
    read = {s["name"]: s["read"] for s in r["steps"]}
    assert memory["q"] == memory["reshape"] == memory["transpose"] == token_major
    assert read["transpose"] == head_major  # the view reads head by head from a buffer stored token by token
    assert memory["z"] == memory["transpose back"] == head_major
    assert memory["merge"] == read["merge"] == token_major
    merge = r["steps"][-1]
    if merge["from"] is not None:  # a copy: each number comes from its place in z's buffer
        assert [memory["transpose back"][i] for i in merge["from"]] == memory["merge"]
    assert (merge["from"] is None) == merge["view"]
    moved = sum(a != b for a, b in zip(head_major, token_major))
    assert r["steps"][-1]["moved"] == (moved if r["merge_copies"] else 0)
    assert (moved > 0) == r["merge_copies"]


def test_the_wrong_split_mixes_tokens():
    r = memory_steps(3, 2, wrong=True)
    split = r["steps"][1]
    assert split["name"] == "wrong reshape" and split["shape"] == [2, 3, 4] and split["view"]
    rows = [split["read"][i:i + 4] for i in range(0, 24, 4)]  # 2 "heads" × 3 rows of d_k = 4
    pieces = [(row[0]["token"], row[0]["head"]) for row in rows]
    assert all(len({(c["token"], c["head"]) for c in row}) == 1 for row in rows)
    # "head" 1 gets token 1's two halves and token 2's first half; "head" 2 the rest
    assert pieces == [(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]
    assert r["steps"][-1]["view"]  # the wrong way back is a view too: the bug copies nothing


def test_the_patterns_are_the_constructed_heads_and_the_wrong_split_breaks_them():
    for n, h in CASES:
        right = np.array(memory_steps(n, h)["patterns"]["right"])  # [h, n, n]
        assert np.allclose(right.sum(-1), 1) and np.allclose(np.triu(right, 1), 0)
        for i in range(h):
            for t in range(OFFSETS[i], n):
                assert right[i, t, t - OFFSETS[i]] > 0.9, (n, h, i, t)
    wrong = np.array(memory_steps(3, 2, wrong=True)["patterns"]["wrong"])
    right = np.array(memory_steps(3, 2)["patterns"]["right"])
    assert all(np.abs(wrong[i] - right[i]).max() > 0.4 for i in range(2))  # both heads scrambled
    assert np.array_equal(memory_steps(3, 2)["patterns"]["wrong"], memory_steps(3, 2, True)["patterns"]["wrong"])


@pytest.mark.parametrize("args, message", [
    ({"n_tokens": 0}, "n_tokens must be at least 1, got 0."),
    ({"n_tokens": 5}, "n_tokens must be at most 4, got 5."),
    ({"n_heads": 3}, "n_heads must be one of 1, 2, 4 (d_model = 8), got 3."),
    ({"wrong": "no"}, "wrong must be true or false, got 'no'."),
])
def test_memory_steps_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError) as refused:
        memory_steps(**args)
    assert str(refused.value) == message
    assert json.dumps(memory_steps(n_tokens=2, n_heads=4), default=str) == json.dumps(memory_steps.fn(2, 4), default=str)
