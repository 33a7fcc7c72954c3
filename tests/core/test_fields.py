"""fields.py: each kind of declared field accepts its values (as the function wants them) and refuses the
rest with the argument's name and the reason; a declared function checks every call; every public one is declared."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import mha_core
from mha_page import bridge
from mha_core.fields import (Array, ArraysByName, Choice, Declared, Fields, Flag, Having, Instance, Invalid, Labelled,
                             ListOf,                              Maybe, Number, Pair, Text, TextOrTokens, Whole, arguments, shown)


@pytest.mark.parametrize("value, words", [
    (True, "must be a whole number"), (False, "must be a whole number"), (float("nan"), "must be a whole number"),
    (float("inf"), "must be a whole number"), ("512", "must be a whole number"), (None, "must be a whole number, got None."),
    ([512], "must be a whole number"), (3.5, "must be a whole number"), (complex(512, 0), "must be a whole number"),
    (0, "must be at least 1, got 0."), (-8, "must be at least 1, got -8."), (1e12, "must be at most 1,048,576"),
    (10**20, "got a 21-digit number"),
])
def test_a_whole_number_out_of_its_range_is_refused_with_its_name(value, words):
    with pytest.raises(Invalid) as refused:
        Whole(1, 1_048_576).check("d_model", value)
    assert str(refused.value).startswith("d_model ") and words in str(refused.value) and len(str(refused.value)) < 200


def test_whole_numbers_come_back_as_ints():
    assert [Whole(1, 8).check("n", v) for v in (1, 8.0, np.int64(3))] == [1, 8, 3]
    assert all(type(Whole(1, 8).check("n", v)) is int for v in (8.0, np.int64(3)))


@pytest.mark.parametrize("value", [0, -1, 10.5, float("nan"), math.inf, True, "0.1", None])
def test_a_number_out_of_its_range_is_refused(value):
    with pytest.raises(Invalid, match=r"^lr must be a number above 0 and at most 10, got"):
        Number(0, 10).check("lr", value)


def test_numbers_at_their_edges():
    assert Number(0, 10).check("lr", 10) == 10.0 and type(Number(0, 10).check("lr", 10)) is float
    assert Number(0, 10).check("lr", 1e-9) == 1e-9


def test_a_choice_gives_back_the_declared_value():
    choice = Choice((1, 2, 4), "d_model = 8")
    assert choice.check("n_heads", 2.0) == 2 and type(choice.check("n_heads", 2.0)) is int
    with pytest.raises(Invalid, match=r"^n_heads must be one of 1, 2, 4 \(d_model = 8\), got 3\.$"):
        choice.check("n_heads", 3)
    with pytest.raises(Invalid, match="got True"):
        choice.check("n_heads", True)  # True == 1, but a flag is not a count


def test_flags_texts_and_tokens():
    assert Flag().check("bias", False) is False
    with pytest.raises(Invalid, match="^bias must be true or false, got 1.$"):
        Flag().check("bias", 1)
    assert Text(10).check("text", " a ") == " a "
    for bad, words in ((" \n", "text is empty."), ("x" * 11, "text is too long: 11 characters (at most 10)."),
                       (5, "text must be a string, got int.")):
        with pytest.raises(Invalid, match=words.replace("(", r"\(").replace(")", r"\)")):
            Text(10).check("text", bad)
    either = TextOrTokens(5)
    assert either.check("text_or_tokens", ["a", "b"]) == ["a", "b"] and either.check("text_or_tokens", "ab") == "ab"
    with pytest.raises(Invalid, match="^text is too long"):
        either.check("text_or_tokens", "abcdef")
    for bad in ([], ["a", " "], ["a", 3], ["a"] * 6, 42, None):
        with pytest.raises(Invalid, match="^text_or_tokens must be a string or a list of 1 to 5 non-blank token strings"):
            either.check("text_or_tokens", bad)


def test_lists_pairs_and_optional_fields_name_the_item():
    pairs = ListOf(Pair(Whole(0, 3), Whole(0, 7), ("layer", "head")), max_items=4)
    assert pairs.check("ablate", [[0, 1], (3, 7.0)]) == [(0, 1), (3, 7)]
    with pytest.raises(Invalid, match=r"^ablate\[1\]'s head must be at most 7, got 8\.$"):
        pairs.check("ablate", [[0, 1], [0, 8]])
    with pytest.raises(Invalid, match=r"^ablate\[0\] must be a pair \[layer, head\]"):
        pairs.check("ablate", [[0]])
    with pytest.raises(Invalid, match="^ablate must hold at most 4 items, got 5.$"):
        pairs.check("ablate", [[0, 0]] * 5)
    with pytest.raises(Invalid, match="^tokens must hold 3 items, got 2.$"):
        ListOf(Choice(("a", "b")), 3, length=3).check("tokens", ["a", "b"])
    assert Maybe(Whole(1, 4)).check("d_head", None) is None and Maybe(Whole(1, 4)).check("d_head", 4) == 4


def test_an_object_of_fields_refuses_unknown_ones_and_names_each_field_alone():
    config = Fields({"n_heads": Whole(1, 8), "lr": Number(0, 10)})
    assert config.check("config", None) == {} and config.check("config", {"n_heads": 2.0}) == {"n_heads": 2}
    with pytest.raises(Invalid, match="^unknown config field 'heads'; known: n_heads, lr.$"):
        config.check("config", {"heads": 2})
    with pytest.raises(Invalid, match="^n_heads must be at least 1, got 0.$"):
        config.check("config", {"n_heads": 0})
    with pytest.raises(Invalid, match="^config must be an object"):
        config.check("config", [2])


@pytest.mark.parametrize("field, value", [(Text(10), " "), (Text(10), "x" * 11), (Whole(1, 8), 0), (Number(0, 1), "a"),
                                          (Choice((1, 2)), 3), (TextOrTokens(5), [""])])
def test_a_labelled_field_says_the_same_refusal_with_the_controls_name(field, value):
    with pytest.raises(Invalid) as plain:
        field.check("lr", value)
    with pytest.raises(Invalid) as labelled:
        Labelled(field, "The learning rate").check("lr", value)
    assert str(labelled.value) == str(plain.value) and plain.value.said is None  # a Python caller's words unchanged
    assert labelled.value.said == "The learning rate " + str(plain.value).split(" ", 1)[1]
    assert Labelled(field, "The learning rate").limits() == field.limits()


def test_inside_an_object_of_fields_a_label_names_its_own_field():
    config = Fields({"lr": Labelled(Number(0, 10), "The learning rate"), "n": Whole(1, 8)})
    with pytest.raises(Invalid) as refused:
        config.check("config", {"lr": 0})
    assert (str(refused.value), refused.value.said) == ("lr must be a number above 0 and at most 10, got 0.",
                                                        "The learning rate must be a number above 0 and at most 10, got 0.")
    assert config.check("config", {"lr": 0.5, "n": 2.0}) == {"lr": 0.5, "n": 2}


def test_limits_are_plain_data():
    assert Fields({"n": Whole(2, 64), "lr": Number(0, 10), "k": Maybe(Choice((1, 2)))}).limits() == {
        "n": {"min": 2, "max": 64}, "lr": {"above": 0, "max": 10}, "k": {"values": [1, 2], "optional": True}}


def test_values_are_shown_short():
    assert len(shown("x" * 100)) == 40 and shown("x" * 100).endswith("...") and shown(10**20) == "a 21-digit number"


# ---------------------------------------------------------------- the Python door: arrays, instances, declarations

@pytest.mark.parametrize("field, value, words", [
    (Array(), [[1.0], [1.0, 2.0]], "x is not a numeric array"),
    (Array(), np.array(["a"]), "x must hold floating-point numbers, got dtype <U1."),
    (Array(kind="i"), np.zeros(2), "x must hold integers, got dtype float64."),
    (Array(kind="b"), np.zeros(2), "x must be a bool array, got dtype float64."),
    (Array(ndim=(2, 3)), np.zeros(4), "x must have 2 or 3 dimensions, got shape (4,)."),
    (Array(), np.array([1.0, np.nan]), "x contains NaN or infinite values."),
    (Array(values="no +inf"), np.array([np.inf]), "x contains NaN or +inf values."),
    (ArraysByName(Array()), [np.zeros(2)], "x must be a dict of arrays by name, got list."),
    (ArraysByName(Array(ndim=(2,))), {"W_Q": np.zeros(2)}, "x['W_Q'] must have 2 dimensions"),
    (Instance(dict), [], "x must be a dict, got list."),
    (Instance((dict, tuple)), [], "x must be a dict or tuple, got list."),
    (Having(("integers",), "a generator"), 3, "x must be a generator (with integers), got int."),
])
def test_the_array_kinds_refuse_with_the_name(field, value, words):
    with pytest.raises(Invalid) as refused:
        field.check("x", value)
    assert str(refused.value).startswith(words)


def test_an_array_is_not_copied_and_minus_inf_may_mark_a_mask():
    a = np.array([[0.0, -np.inf]])
    assert Array(values="no +inf").check("x", a) is a
    assert Array(values="any").check("x", np.array([np.nan])).shape == (1,)


def ordered(args):  # a relation sees the arguments given, defaults left out
    if args["low"] > args.get("high", 10):
        raise ValueError("low > high")


@arguments(ordered, low=Whole(0, 10), high=Whole(0, 10))
def span(low, high=10):
    return high - low


def test_a_declared_function_checks_each_argument_given_then_the_relations():
    assert span(2.0, 5) == 3 and span(low=1) == 9 and type(span(2.0, 5.0)) is int
    with pytest.raises(ValueError, match="^low must be at least 0, got -1.$"):
        span(-1)
    with pytest.raises(ValueError, match="^low > high$"):
        span(5, 2)
    with pytest.raises(TypeError):
        span(1, 2, 3)
    assert span.fn(5, 2) == -3  # the function itself trusts its input


def test_a_declaration_names_every_argument_once():
    with pytest.raises(TypeError, match=r"undeclared \[.high.\]"):
        arguments(low=Whole(0, 1))(lambda low, high: 0)
    with pytest.raises(TypeError, match=r"unknown \[.other.\]"):
        arguments(low=Whole(0, 1), other=Whole(0, 1))(lambda low: 0)


def test_a_declared_method_binds_like_a_method():
    class Counter:
        @arguments(by=Whole(1, 5))
        def add(self, by):
            return by
    assert Counter().add(2) == 2
    with pytest.raises(ValueError, match="by must be at most 5"):
        Counter().add(6)


PUBLIC = sorted(name for name in mha_core.__all__ if callable(getattr(mha_core, name))
                and not isinstance(getattr(mha_core, name), type))


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_function_carries_its_declaration(name):
    assert isinstance(getattr(mha_core, name), Declared)


@pytest.mark.parametrize("fn_name", sorted(bridge.FUNCTIONS))
def test_the_bridge_serves_the_functions_as_declared(fn_name):
    declared = bridge.FUNCTIONS[fn_name]
    assert isinstance(declared, Declared) and declared.__name__ == fn_name


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3),
                 st.lists(st.integers(), max_size=2)))
def test_whole_accepts_exactly_the_whole_numbers_in_range(value):
    try:
        got = Whole(1, 64).check("n", value)
    except Invalid as refused:
        assert str(refused).startswith("n must be ")
        assert not (type(value) in (int, float) and value == value and value in range(1, 65))
    else:
        assert type(got) is int and 1 <= got <= 64 and got == value
