"""How a checkpoint's attention patterns travel to the page: the text of each drawn weight, as the heatmap's cells
read it (widgets/training/view.js reads it back; the weights travel as mha_core.params_codec's text)."""
from __future__ import annotations

import numpy as np

WEIGHT_CHARS = 6  # a weight as the heatmap's cells read it: 0.1234


def encode_patterns(patterns: list[np.ndarray]) -> str:
    """[L] × [1, h, n, n] weights as the heatmap's cells read them, to 4 decimals (WEIGHT_CHARS each), layer by
    layer, head by head, row by row, each row's keys up to its query (the others are masked): one text, about
    the size of the same weights in base64, that the page reads and draws without writing a number."""
    stacked = np.nan_to_num(np.stack([p[0] for p in patterns]))  # [L, h, n, n]; a diverged run's NaN: 6 characters too
    q, k = np.tril_indices(stacked.shape[-1])
    return "".join(f"{w:.4f}" for w in stacked[..., q, k].ravel().tolist())  # weights in [0, 1]: no sign
