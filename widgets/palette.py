"""The heatmaps' colours for the widgets' pages (heads, training): mha_page.views.palette's, which the views use."""
from __future__ import annotations

from mha_page.views.palette import PALETTE, STEPS, colour, gradient

__all__ = ["PALETTE", "STEPS", "colour", "gradient"]
