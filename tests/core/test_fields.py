"""fields.py: each kind of declared field accepts its values (as the function wants them) and refuses the
rest with the argument's name and the reason."""

import math

import numpy as np
import pytest

from mha_core.fields import (Choice, Fields, Flag, Invalid, ListOf, Maybe, Number, Pair, Text, TextOrTokens,
                             Whole, shown)


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


def test_limits_are_plain_data():
    assert Fields({"n": Whole(2, 64), "lr": Number(0, 10), "k": Maybe(Choice((1, 2)))}).limits() == {
        "n": {"min": 2, "max": 64}, "lr": {"above": 0, "max": 10}, "k": {"values": [1, 2], "optional": True}}


def test_values_are_shown_short():
    assert len(shown("x" * 100)) == 40 and shown("x" * 100).endswith("...") and shown(10**20) == "a 21-digit number"
