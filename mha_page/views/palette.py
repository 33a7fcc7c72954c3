"""The heatmaps' colours, shared by every view and widget that draws attention weights (heads, training).

Viridis (matplotlib) at 0, 1/8, ..., 1: sequential, colour-blind safe, legible on light and dark. The page carries
PALETTE and STEPS; widgets/shared/palette.js builds the same STEPS + 1 colours from them, and colour() is its twin here.
"""
from __future__ import annotations

PALETTE = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"]
STEPS = 255


def _step(s: int) -> str:
    """The colour of step s of STEPS, between the palette's anchors."""
    t = s / STEPS * (len(PALETTE) - 1)
    i = min(int(t), len(PALETTE) - 2)
    a, b = (bytes.fromhex(PALETTE[j][1:]) for j in (i, i + 1))
    return "#" + "".join(f"{int(x + (y - x) * (t - i) + 0.5):02x}" for x, y in zip(a, b))


COLOURS = [_step(s) for s in range(STEPS + 1)]  # made once: a view colours thousands of cells


def colour(weight: float) -> str:
    """The palette's colour for a weight in [0, 1], on the same 256 steps as palette.js (rounding half up)."""
    return COLOURS[int(min(max(weight, 0.0), 1.0) * STEPS + 0.5)]


def gradient() -> str:
    """The palette as a CSS gradient, for a legend."""
    return f"linear-gradient(to right, {', '.join(PALETTE)})"
