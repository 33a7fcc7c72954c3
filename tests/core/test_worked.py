"""The first page's worked example: every matrix it shows is the layer's, checked against
torch.nn.MultiheadAttention and against the algebra the page states (column blocks, row blocks, a sum)."""

import numpy as np
import pytest
import torch

from mha_core import softmax
from mha_page import bridge
from mha_core.worked import D_HEAD, D_MODEL, N_HEADS, N_TOKENS, worked_example, worked_steps

SEEDS = (1, 2, 7, 2**32)


@pytest.mark.parametrize("seed", SEEDS)
def test_equals_torch_multihead_attention(seed):
    m = worked_steps(seed)
    layer = torch.nn.MultiheadAttention(D_MODEL, N_HEADS, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():  # torch computes x @ Wᵀ: its weights are the transposes of ours
        layer.in_proj_weight.copy_(torch.from_numpy(np.concatenate([m["W_Q"].T, m["W_K"].T, m["W_V"].T])))
        layer.out_proj.weight.copy_(torch.from_numpy(m["W_O"].T))
        x = torch.from_numpy(m["X"])[None]
        out, weights = layer(x, x, x, average_attn_weights=False)
    assert np.allclose(m["out"], out[0].numpy(), atol=1e-12)
    for i in range(N_HEADS):
        assert np.allclose(m[f"weights_{i}"], weights[0, i].numpy(), atol=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_page_s_algebra(seed):
    m = worked_steps(seed)
    assert m["X"].shape == (N_TOKENS, D_MODEL) and m["scores_0"].shape == (N_TOKENS, N_TOKENS)
    for i in range(N_HEADS):
        cols = slice(i * D_HEAD, (i + 1) * D_HEAD)
        q_i, k_i, v_i = (m["X"] @ m[W][:, cols] for W in ("W_Q", "W_K", "W_V"))  # head i's own matrices
        assert np.allclose(m["Q"][:, cols], q_i) and np.allclose(m["K"][:, cols], k_i)
        assert np.allclose(m[f"scores_{i}"], q_i @ k_i.T / np.sqrt(D_HEAD))
        assert np.allclose(m[f"weights_{i}"], softmax(m[f"scores_{i}"]))
        assert np.allclose(m[f"z_{i}"], m[f"weights_{i}"] @ v_i)
        assert np.array_equal(m["merged"][:, cols], m[f"z_{i}"])  # the concatenation
        assert np.array_equal(m[f"W_O_{i}"], m["W_O"][cols])  # row block i
    assert np.allclose(m["part_0"] + m["part_1"], m["out"])  # [z_0 z_1] W_O = z_0 W_O_0 + z_1 W_O_1


def test_inputs_have_one_decimal_and_seeds_differ():
    a, b = worked_steps(1), worked_steps(2)
    for name in ("X", "W_Q", "W_K", "W_V", "W_O"):
        assert np.array_equal(a[name], np.round(a[name], 1))
    assert not np.array_equal(a["X"], b["X"])
    assert np.array_equal(worked_steps(1)["out"], a["out"])  # a seed is the same example every time


def test_the_reader_s_words_pick_rows_of_one_embedding_table():
    m = worked_steps(4, ["cat", "on", "cat"])
    assert np.array_equal(m["X"][0], m["X"][2])  # the same word, the same row, the same query
    assert np.array_equal(m["Q"][0], m["Q"][2]) and np.allclose(m["weights_0"][0], m["weights_0"][2])
    assert np.array_equal(worked_steps(4, ["on", "cat", "sat"])["X"][1], m["X"][0])  # one table per seed
    assert np.array_equal(worked_steps(4, ["cat", "on", "cat"])["W_Q"], worked_steps(4)["W_Q"])  # same weights
    assert worked_example(4, ["cat", "on", "cat"])["tokens"] == ["cat", "on", "cat"]


@pytest.mark.parametrize("args, message", [
    ({"seed": 0}, "seed must be at least 1, got 0."),
    ({"seed": "1"}, "seed must be a whole number, got '1'."),
    ({"tokens": ("the", "dog", "sat")}, "tokens[1] must be one of the, cat, sat, on, a, mat, got 'dog'."),
    ({"tokens": "cat"}, "tokens must be a list, got 'cat'."),
    ({"tokens": ["the"]}, "tokens must hold 3 items, got 1."),
])
def test_worked_example_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError) as refused:
        worked_example(**args)
    assert str(refused.value) == message
    assert worked_example(7, ("a", "cat", "mat")) == worked_example.fn(7, ("a", "cat", "mat"))
