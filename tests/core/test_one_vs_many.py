"""One head against several: the verb's attention and what reaches it, against an oracle written here from
the sentence alone (which words each relationship holds, each word's grammatical number), and the layers
against torch's scaled_dot_product_attention."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

from mha_core import multi_head_attention
from mha_page import bridge
from mha_core.one_vs_many import D_HEAD, D_MODEL, UNDECIDED, embed, layer, one_vs_many

# ---------------------------------------------------------------- the oracle, from the sentence alone

WORDS = "The report that the committee members wrote about the rules was".split()
SUBJECT, CLAUSE, NEIGHBOUR = [1], list(range(2, 10)), [9]  # report; that ... rules; rules
SINGULAR, PLURAL = {"report", "committee"}, {"members", "rules"}


def number(word: str) -> float:
    return 1.0 if word in SINGULAR else -1.0 if word in PLURAL else 0.0


def ideal_row(shares) -> np.ndarray:
    """The verb's attention: the subject its share, the clause's share spread evenly, the neighbour its
    share on top of its part of the clause, nothing elsewhere."""
    s, c, p = shares
    row = np.zeros(len(WORDS))
    row[SUBJECT] += s
    row[CLAUSE] += c / len(CLAUSE)
    row[NEIGHBOUR] += p
    return row


def ideal_number(shares) -> float:
    """The number the verb reads from one average: each relationship's mean number at its share."""
    means = [np.mean([number(WORDS[j]) for j in keys]) for keys in (SUBJECT, CLAUSE, NEIGHBOUR)]
    return float(np.dot(shares, means))


def normalised(weights) -> np.ndarray:
    return np.array(weights, float) / sum(weights)


# ---------------------------------------------------------------- one head: one average

EDGES = [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 1, 1), (100, 100, 100), (50, 25, 25), (0, 3, 1), (100, 0, 0.5)]


@pytest.mark.parametrize("weights", EDGES)
@pytest.mark.parametrize("wide", [False, True])
def test_one_head_gives_each_relationship_its_share_and_no_more(weights, wide):
    shares = normalised(weights)
    r = one_vs_many(*weights, wide=wide)
    one = r["one"]
    assert one["n_heads"] == 1 and one["d_k"] == (D_MODEL if wide else D_HEAD)
    assert np.allclose(r["shares"], shares)
    assert np.allclose(one["weights"][0], ideal_row(shares), atol=1e-9)
    assert np.allclose(one["arrives"], shares, atol=1e-9)
    assert sum(one["arrives"]) == pytest.approx(1.0)  # one budget of weight, shared
    assert one["number"] == pytest.approx(ideal_number(shares), abs=1e-9)
    assert one["residual"] < 1e-9  # the block is exactly a mixture of the three relationships' vectors


@pytest.mark.parametrize("wide", [False, True])
def test_in_one_head_the_relationships_share_one_block(wide):
    blocks = np.array(one_vs_many(2, 1, 1, wide=wide)["one"]["blocks"])
    mixture = normalised([2, 1, 1])
    if wide:  # room for three blocks, but every copy is the same average
        assert np.allclose(blocks, [mixture] * 3, atol=1e-9)
    else:
        assert np.allclose(blocks, [mixture, [0, 0, 0], [0, 0, 0]], atol=1e-9)


def test_equal_weights_lose_the_agreement():
    """Spread evenly, the subject's singular and the neighbour's plural cancel; the clause tips it to plural."""
    one = one_vs_many(1, 1, 1)["one"]
    assert one["number"] == pytest.approx((1 - 1 / 8 - 1) / 3)
    assert one["number"] < -UNDECIDED  # plural
    assert one_vs_many(1, 0, 0)["one"]["number"] > UNDECIDED  # singular
    tie = one_vs_many(1, 0, 1)["one"]  # the subject's +1 and the neighbour's -1, half each: nothing left
    assert abs(tie["number"]) < UNDECIDED


# ---------------------------------------------------------------- several heads: each relationship whole

@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0, 100), min_size=3, max_size=3).filter(lambda w: sum(w) > 1e-3), st.booleans())
def test_three_heads_keep_every_relationship_whole_whatever_the_one_head_does(weights, wide):
    r = one_vs_many(*weights, wide=wide)
    many, shares = r["many"], normalised(weights)
    assert many["n_heads"] == 3 and many["d_k"] == D_HEAD
    assert np.allclose(many["arrives"], 1.0, atol=1e-9)
    assert np.allclose(many["blocks"], np.eye(3), atol=1e-9)  # each in its own block, alone
    for h, pure in enumerate(np.eye(3)):
        assert np.allclose(many["weights"][h], ideal_row(pure), atol=1e-9)
    assert many["number"] == pytest.approx(1.0)
    assert np.allclose(r["one"]["arrives"], shares, atol=1e-9)


# ---------------------------------------------------------------- fewer heads: relationships share a softmax

NAMES = ("subject", "clause", "previous")


@pytest.mark.parametrize("alone", NAMES)
def test_with_two_heads_the_other_two_relationships_share_one_head_half_each(alone):
    """The lone relationship's head sees it alone; the other head's softmax gives each of the other two half,
    so each arrives at 0.5, and block 1 (the subject's head's) reads the subject's number mixed with its partner's."""
    r = one_vs_many(1, 2, 3, heads=2, alone=alone)
    many = r["many"]
    lone, pair = np.eye(3)[NAMES.index(alone)], np.array([0.0 if n == alone else 0.5 for n in NAMES])
    heads = sorted([lone, pair], key=lambda s: -s[0])  # the subject's head first
    assert many["n_heads"] == 2 and many["d_k"] == D_HEAD
    assert np.allclose(many["weights"], [ideal_row(s) for s in heads], atol=1e-9)
    assert np.allclose(many["arrives"], lone + pair, atol=1e-9)  # 1 for the lone one, 0.5 for the pair
    assert np.allclose(many["blocks"], [*heads, [0, 0, 0]], atol=1e-9)  # block 3 empty
    assert many["number"] == pytest.approx(ideal_number(heads[0]), abs=1e-9)
    assert [len(g) for g in r["groups"]] == [round(1 / max(s)) for s in heads]
    assert np.allclose(r["one"]["arrives"], normalised([1, 2, 3]), atol=1e-9)  # the one head is untouched


def test_which_pair_shares_decides_the_verb():
    """The subject beside the clause keeps its singular (+1/2 - 1/16); beside the plural neighbour it cancels."""
    assert one_vs_many(heads=2, alone="subject")["many"]["number"] == pytest.approx(1.0)
    assert one_vs_many(heads=2, alone="previous")["many"]["number"] == pytest.approx(0.5 - 0.5 / 8)
    assert abs(one_vs_many(heads=2, alone="clause")["many"]["number"]) < UNDECIDED


def test_with_one_head_the_other_side_shares_it_three_ways():
    many = one_vs_many(5, 0, 1, heads=1)["many"]
    assert many["n_heads"] == 1
    assert np.allclose(many["weights"][0], ideal_row([1 / 3] * 3), atol=1e-9)
    assert np.allclose(many["arrives"], 1 / 3, atol=1e-9)
    assert many["number"] == pytest.approx(ideal_number([1 / 3] * 3), abs=1e-9)


# ---------------------------------------------------------------- the layers against torch

def torch_layer(x, W) -> np.ndarray:
    """The layer's output by torch: projections, heads split, causal SDPA, merged, W_O."""
    t = {k: torch.from_numpy(v) for k, v in W.items() if k != "n_heads"}
    h, n = W["n_heads"], x.shape[0]
    heads = [(torch.from_numpy(x) @ t[name]).reshape(n, h, -1).transpose(0, 1) for name in ("W_Q", "W_K", "W_V")]
    z = torch.nn.functional.scaled_dot_product_attention(*heads, is_causal=True)  # [h, n, d_k]
    return (z.transpose(0, 1).reshape(n, -1) @ t["W_O"]).numpy()


@pytest.mark.parametrize("shares_by_head,d_k", [([[0.2, 0.5, 0.3]], D_HEAD), ([[0.2, 0.5, 0.3]], D_MODEL),
                                                 (list(np.eye(3)), D_HEAD), ([[1, 0, 0], [0, 0.5, 0.5]], D_HEAD)],
                         ids=["one", "wide", "three", "two"])
def test_the_layers_equal_torch(shares_by_head, d_k):
    x, W = embed(), layer(shares_by_head, d_k)
    out, _ = multi_head_attention(x, **W, causal=True)
    assert np.allclose(out, torch_layer(x, W), atol=1e-12)


# ---------------------------------------------------------------- the boundary and the bridge

@pytest.mark.parametrize("args,words", [
    ({"subject": 0, "clause": 0, "previous": 0}, "all 0"),
    ({"subject": -1}, "subject must be a number from 0 to 100"),
    ({"clause": 101}, "clause must be a number from 0 to 100"),
    ({"previous": True}, "previous must be a number"),
    ({"previous": "1"}, "previous must be a number"),
    ({"subject": float("nan")}, "subject must be a number"),
    ({"wide": 1}, "wide must be true or false"),
    ({"heads": 0}, "heads must be at least 1"),
    ({"heads": 4}, "heads must be at most 3"),
    ({"heads": "2"}, "heads must be a whole number"),
    ({"alone": "verb"}, "alone must be one of subject, clause, previous"),
])
def test_bad_arguments_are_explained(args, words):
    reply = json.loads(bridge.call("one_vs_many_view", json.dumps(args)))
    assert not reply["ok"] and words in reply["error"]


@pytest.mark.parametrize("args, message", [
    ({"subject": -1}, "subject must be a number from 0 to 100, got -1."),
    ({"clause": float("nan")}, "clause must be a number from 0 to 100, got nan."),
    ({"previous": "1"}, "previous must be a number from 0 to 100, got '1'."),
    ({"wide": "yes"}, "wide must be true or false, got 'yes'."),
    ({"subject": 0, "clause": 0, "previous": 0}, "give at least one relationship some weight"),
    ({"heads": 0}, "heads must be at least 1, got 0."),
    ({"heads": 4}, "heads must be at most 3, got 4."),
    ({"heads": 2.5}, "heads must be a whole number, got 2.5."),
    ({"heads": True}, "heads must be a whole number, got True."),
    ({"alone": None}, "alone must be one of subject, clause, previous"),
])
def test_one_vs_many_refuses_nonsense_by_name(args, message):
    with pytest.raises(ValueError) as refused:
        one_vs_many(**args)
    assert str(refused.value).startswith(message)
    assert np.allclose(one_vs_many(2, 1, 0.5)["one"]["arrives"], one_vs_many.fn(2, 1, 0.5)["one"]["arrives"])
