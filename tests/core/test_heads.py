"""Constructed heads: each pattern against the rules of tests/oracles.py, the circuit, and the weights."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from mha_core import HEAD_KINDS, head_patterns, head_weights, tokenize
from tests.oracles import RULES, rule_rows

SENTENCES = [
    "The cat sat on the mat. The cat ran, and the dog sat.",
    "Harry Potter went to Hogwarts; later, Harry Potter left Hogwarts.",
    "A B C D A B C D E A B",
    "no punctuation at all here but repeats here at all",
    "¿Qué? ¡Sí! Qué bien, sí.",
    "مرحبا بالعالم . مرحبا بالعالم 😀 😀",
    "one",
    "x x x x",
]


def check_against_oracles(tokens, heads):
    for kind in RULES:
        for i, targets in rule_rows(kind, tokens).items():
            mass = heads[kind][i, sorted(targets)].sum()
            assert mass >= 0.9, (kind, i, tokens[i], mass)


@pytest.mark.parametrize("text", SENTENCES)
def test_each_head_does_its_job(text):
    result = head_patterns(text)
    tokens = result["tokens"]
    assert tokens == tokenize(text) and set(result["heads"]) == set(HEAD_KINDS)
    check_against_oracles(tokens, result["heads"])
    for kind, pattern in result["heads"].items():
        assert pattern.shape == (len(tokens), len(tokens))
        assert np.allclose(pattern.sum(axis=1), 1.0)
        assert np.all(np.triu(pattern, 1) == 0), kind  # causal: nothing from the future


vocab = st.sampled_from(["a", "A", "b", "c", "dog", "Dog", ".", ",", "!", "x"])


@settings(max_examples=40, deadline=None)
@given(st.lists(vocab, min_size=1, max_size=64))
def test_heads_on_random_token_lists(tokens):
    check_against_oracles(tokens, head_patterns(tokens)["heads"])


def test_averaged_is_the_mean_of_the_four():
    heads = head_patterns(SENTENCES[0])["heads"]
    four = [heads[k] for k in ("previous_token", "positional", "induction", "content")]
    assert np.allclose(heads["averaged"], np.mean(four, axis=0))
    assert HEAD_KINDS == ("previous_token", "positional", "induction", "content", "averaged")


@pytest.mark.parametrize("text", SENTENCES[:3])
def test_ablating_the_previous_token_head_breaks_induction(text):
    normal, ablated = head_patterns(text), head_patterns(text, ablate=("previous_token",))
    tokens = normal["tokens"]
    checked = 0
    for i, targets in rule_rows("induction", tokens).items():
        if i not in targets:
            assert normal["heads"]["induction"][i, sorted(targets)].sum() >= 0.9
            assert ablated["heads"]["induction"][i, sorted(targets)].sum() < 0.1
            checked += 1
    assert checked >= 2
    for kind in ("previous_token", "positional", "content"):  # layer 0 itself is unchanged
        assert np.array_equal(normal["heads"][kind], ablated["heads"][kind])


# ---------------------------------------------------------------- recompute by hand

def by_hand(inp, head):
    """softmax(causal(inp W_Q (inp W_K)ᵀ / √d_head)) with plain numpy."""
    q, k = inp @ np.array(head["W_Q"]), inp @ np.array(head["W_K"])
    scores = q @ k.T / np.sqrt(head["d_head"])
    scores[np.triu_indices(len(inp), 1)] = -np.inf
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("ablate", [(), ("previous_token",)])
def test_patterns_recomputed_from_the_exposed_weights(ablate):
    text = SENTENCES[0]
    w, patterns = head_weights(text, ablate=ablate), head_patterns(text, ablate=ablate)["heads"]
    x = np.array(w["x"])
    assert x.shape == (len(w["tokens"]), len(w["features"]))
    # the residual stream layer 1 reads: the embeddings plus every layer-0 head's z @ W_O
    residual = x.copy()
    for kind in ("previous_token", "positional", "content"):
        head = w["heads"][kind]
        residual += by_hand(x, head) @ (x @ head["W_V"]) @ head["W_O"]
    assert np.allclose(residual, w["residual"])
    for kind in ("previous_token", "positional", "content", "induction"):
        head = w["heads"][kind]
        inp = {"x": x, "residual": residual}[head["input"]]
        assert np.allclose(by_hand(inp, head), patterns[kind], atol=1e-12), kind
        assert head["layer"] == (1 if kind == "induction" else 0) and head["ablated"] == (kind in ablate)
    assert w["heads"]["averaged"] == {"layer": None}  # no weights of its own


def test_embeddings_are_token_position_and_boundary():
    w = head_weights("Hi . hi")
    features, x = w["features"], w["x"]
    assert features[:2] == ["token:hi", "token:."] and "boundary" in features
    row = dict(zip(features, x[2]))
    assert row["token:hi"] == 1 and row["position:2"] == 1 and row["boundary"] == 0
    assert dict(zip(features, x[1]))["boundary"] == 1 and dict(zip(features, x[0]))["boundary"] == 1
    assert x[:, [f.startswith("previous:") for f in features]].sum() == 0  # layer 0 fills these
    assert np.abs(np.array(w["residual"])[2, features.index("previous:.")] - 1) < 1e-3


# ---------------------------------------------------------------- text handling

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # man ZWJ woman ZWJ girl ZWJ boy


def test_tokens_in_other_scripts_make_heads_that_follow_their_rules():
    text = f"我爱北京。我爱{FAMILY}, U.S.A. {FAMILY} U.S.A."
    result = head_patterns(text)
    assert result["tokens"][:5] == ["我", "爱", "北", "京", "。"] and result["tokens"].count(FAMILY) == 2
    check_against_oracles(result["tokens"], result["heads"])


def test_long_text_in_other_scripts_is_counted_whole():
    result = head_patterns("我爱北京。" * 20_000)  # 100,000 characters, each one a token
    assert result["n_tokens_given"] == 100_000 and len(result["tokens"]) == 64
    assert head_patterns("e\u0301" * 50_000)["tokens"] == ["e\u0301" * 50_000]  # one word of marks, glued in linear time


def test_long_text_is_truncated_and_reported():  # its speed: bench/core_speed.py
    text = "the cat, " * 2500  # 22,500 characters, 7,500 tokens
    result = head_patterns(text)
    assert len(result["tokens"]) == 64 and result["truncated"] is True and result["n_tokens_given"] == 7500
    assert len(tokenize(text)) == 64
    short = head_patterns("the cat")
    assert short["truncated"] is False and short["n_tokens_given"] == 2


@pytest.mark.parametrize("text, row", [("the cat saw The dog", 3), ("a b c", 2), ("x", 0), ("a a", 1),
                                        ("我爱北京，我", 5)])
def test_first_query_is_the_first_repeated_token_else_the_last(text, row):
    result = head_patterns(text)
    assert result["first_query"] == row
    content = result["heads"]["content"]  # the same row, told by the content head: it leaves itself there
    assert [q for q in range(len(content)) if content[q][q] < 0.5][:1] in ([row], [])


def test_token_list_input_equals_text_input():
    text = SENTENCES[1]
    a, b = head_patterns(text), head_patterns(tokenize(text))
    assert a["tokens"] == b["tokens"] and all(np.array_equal(a["heads"][k], b["heads"][k]) for k in HEAD_KINDS)
    many = head_patterns(["a"] * 70)
    assert many["truncated"] and many["n_tokens_given"] == 70 and len(many["tokens"]) == 64


# ---------------------------------------------------------------- the public door

@pytest.mark.parametrize("call, message", [
    (lambda: head_patterns("   "), "text is empty."),
    (lambda: head_patterns(None), "text_or_tokens must be a string or a list of 1 to 100,000 non-blank token strings"),
    (lambda: head_patterns(["a", ""]), "text_or_tokens must be a string or a list of 1 to 100,000"),
    (lambda: head_patterns("a b", ablate="induction"), "ablate must be a list, got 'induction'."),
    (lambda: head_weights("a b", ablate=["averaged"]), "ablate[0] must be one of previous_token, positional"),
    (lambda: head_weights("a" * 100_001), "text is too long: 100,001 characters (at most 100,000)."),
    (lambda: tokenize(["a"]), "text must be a string, got list."),
    (lambda: tokenize(b"a b"), "text must be a string, got bytes."),
])
def test_nonsense_is_refused_by_name(call, message):
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(message)


def test_a_blank_text_has_no_tokens():
    assert tokenize("") == [] and tokenize(" \n") == []


def test_valid_calls_answer_as_the_functions_themselves():
    text = "The cat sat. The cat"
    assert tokenize(text) == tokenize.fn(text)
    for kind, pattern in head_patterns(text, ablate=("induction",))["heads"].items():
        assert np.array_equal(pattern, head_patterns.fn(text, ("induction",))["heads"][kind])
