"""mha_page.views: the formatting every view shares, and a view's declaration borrowed from its numerics."""
import re

import pytest
from hypothesis import given, strategies as st

from mha_core.fields import Whole, arguments
from mha_page.views import css_number, decimal, declared_as, fraction, plural


@pytest.mark.parametrize("value, decimals, text", [
    (0.5, 2, "0.50"), (-1.25, 2, "\u22121.25"), (-0.001, 2, "0.00"), (-0.0, 2, "0.00"), (3.14159, 3, "3.142"),
])
def test_decimal_writes_a_true_minus_and_never_a_negative_zero(value, decimals, text):
    assert decimal(value, decimals) == text


@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_decimal_reads_back_as_the_number_rounded(value):
    assert float(decimal(value).replace("\u2212", "-")) == pytest.approx(round(value, 2), abs=0.0051)


@pytest.mark.parametrize("value, signed, slot", [
    (0.25, False, {"value": "0.2500", "text": "0.25"}),
    (0.25, True, {"value": "0.2500", "text": "+0.25"}),
    (-0.25, True, {"value": "-0.2500", "text": "\u22120.25"}),
    (0.001, True, {"value": "0.0010", "text": "0.00"}),
])
def test_a_fraction_is_a_slot_with_its_value_to_four_decimals(value, signed, slot):
    assert fraction(value, signed) == slot


@given(st.floats(-1e3, 1e3, allow_nan=False))
def test_a_css_number_never_has_an_exponent(value):
    text = css_number(value)
    assert re.fullmatch(r"-?\d+\.\d{6}", text) and float(text) == pytest.approx(value, abs=5e-7)


@pytest.mark.parametrize("n, text", [(1, "1 head"), (2, "2 heads"), (0, "0 heads"), (1024, "1,024 heads")])
def test_plural(n, text):
    assert plural(n, "head") == text


def test_a_view_declared_as_its_numerics_refuses_what_they_refuse():
    @arguments(n=Whole(1, 8))
    def numerics(n):
        return n * 2

    @declared_as(numerics)
    def view(n):
        return {"outputs": {"double": str(numerics.fn(n))}}

    assert view(3) == {"outputs": {"double": "6"}}
    with pytest.raises(ValueError, match="n must be at least 1, got 0."):
        view(0)
