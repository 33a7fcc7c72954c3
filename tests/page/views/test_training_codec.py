"""views/training_codec.py: a checkpoint's patterns as the text of each drawn weight."""

import re

import numpy as np

from mha_page.views.training import display_tokens
from mha_page.views.training_codec import WEIGHT_CHARS, encode_patterns
from mha_core.model import TrainConfig, forward, init_params

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


def test_patterns_travel_as_the_text_of_each_drawn_weight():
    """Each cell's weight to 4 decimals, layer by layer, head by head, row by row up to the query: the text the
    heatmap's cells read, and the weights it colours them by."""
    params = init_params(SMALL, 3)
    _, patterns = forward(params, np.array([display_tokens(SMALL)]), SMALL)
    text, n = encode_patterns(patterns), SMALL.seq_len
    cells = [text[i:i + WEIGHT_CHARS] for i in range(0, len(text), WEIGHT_CHARS)]
    assert len(text) == WEIGHT_CHARS * len(cells) and len(cells) == SMALL.n_layers * SMALL.n_heads * n * (n + 1) // 2
    assert all(re.fullmatch(r"[01]\.\d{4}", c) for c in cells)
    drawn = [(l, h, q, k) for l in range(SMALL.n_layers) for h in range(SMALL.n_heads) for q in range(n) for k in range(q + 1)]
    np.testing.assert_allclose([float(c) for c in cells], [patterns[l][0, h, q, k] for l, h, q, k in drawn], atol=5e-5)
