"""A chart's geometry: a line's points are its values placed in the box, clipped to it; ticks stand where their
values do."""

import pytest

from mha_page.views.charts import polyline, ticks, x_of, y_of

BOX = {"left": 40, "right": 340, "top": 10, "bottom": 110}


def test_the_box_s_corners_are_the_ends_of_its_ranges():
    assert (x_of(0, 600, BOX), x_of(600, 600, BOX)) == (40, 340)
    assert (y_of(0, 4, BOX), y_of(4, 4, BOX)) == (110, 10)


def test_a_line_passes_through_each_value_and_a_value_off_the_chart_runs_along_its_edge():
    points = [tuple(map(float, p.split(","))) for p in polyline([0, 300, 600], [2.0, 9.0, -1.0], 600, 4, BOX).split()]
    assert points == [(40.0, 60.0), (190.0, 10.0), (340.0, 110.0)]


@pytest.mark.parametrize("digits", [0, 1, 2])
def test_ticks_stand_at_their_values_with_their_text(digits):
    shown = ticks([0, 1, 2.5], 5, digits, BOX)
    assert [t["y"] for t in shown] == [110, 90, 60]
    assert shown[2]["text"] == f"{2.5:.{digits}f}"
