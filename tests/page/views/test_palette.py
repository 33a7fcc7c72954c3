"""The heatmaps' colours: viridis's anchors interpolated on 256 steps, checked against NumPy's interpolation and
against what a reader needs of a sequential scale (never darker from step to step, the ends where they belong)."""
from __future__ import annotations

import numpy as np
import pytest

from mha_page.views.palette import COLOURS, PALETTE, STEPS, colour, gradient


def rgb(hex_colour: str) -> np.ndarray:
    return np.array([int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=float)


def test_every_step_is_numpy_s_interpolation_of_the_anchors():
    anchors = np.array([rgb(c) for c in PALETTE])  # [9, 3]
    at = np.linspace(0, len(PALETTE) - 1, STEPS + 1)  # each step's place among the anchors
    want = np.stack([np.interp(at, np.arange(len(PALETTE)), anchors[:, c]) for c in range(3)], axis=1)
    got = np.array([rgb(c) for c in COLOURS])  # [256, 3]
    assert got.shape == (STEPS + 1, 3)
    assert np.abs(got - want).max() <= 0.5 + 1e-9  # rounded to whole channel values


def test_the_scale_never_gets_darker_and_spans_dark_to_light():
    linear = lambda c: np.where(c / 255 <= 0.04045, c / 255 / 12.92, ((c / 255 + 0.055) / 1.055) ** 2.4)
    luminance = [float(linear(rgb(c)) @ [0.2126, 0.7152, 0.0722]) for c in COLOURS]
    assert all(b >= a for a, b in zip(luminance, luminance[1:]))  # (two neighbours round to one colour)
    assert luminance[-1] > 20 * luminance[0]


@pytest.mark.parametrize("weight, step", [(0.0, 0), (1.0, STEPS), (-0.5, 0), (7.0, STEPS),
                                          (0.5 / STEPS, 1), (0.49 / STEPS, 0), (0.5, 128)])
def test_a_weight_takes_its_nearest_step_clamped_to_the_scale(weight, step):
    assert colour(weight) == COLOURS[step]


def test_the_legend_runs_through_every_anchor_in_order():
    css = gradient()
    assert css.startswith("linear-gradient(to right, ")
    assert [css.index(c) for c in PALETTE] == sorted(css.index(c) for c in PALETTE)
