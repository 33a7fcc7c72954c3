"""A chart as the reader reads it: its lines as SVG points and its ticks' places, made here so that the page draws
no number. A box is a chart's plot area inside its SVG viewBox: {"left", "right", "top", "bottom"}. Values are
drawn from 0 (the box's bottom) to top (its top), steps from 0 (its left) to total (its right).
"""

from __future__ import annotations

from . import decimal


def x_of(step: float, total: float, box: dict) -> float:
    return box["left"] + (box["right"] - box["left"]) * step / total


def y_of(value: float, top: float, box: dict) -> float:
    """value's height, clipped to [0, top] (a diverging curve runs along the box's edge)."""
    return box["bottom"] - (box["bottom"] - box["top"]) * min(max(value, 0.0), top) / top


def polyline(steps: list[int], values: list[float], total: float, top: float, box: dict) -> str:
    """The points attribute of a line through (steps[i], values[i])."""
    return " ".join(f"{x_of(s, total, box):.1f},{y_of(v, top, box):.1f}" for s, v in zip(steps, values))


def ticks(values, top: float, digits: int, box: dict) -> list[dict]:
    """[{"y", "text"}]: each value's height and its text to digits decimals."""
    return [{"y": round(y_of(v, top, box), 1), "text": decimal(v, digits)} for v in values]
