"""mha_core.params_codec: a model's weights as text and back."""
import numpy as np
import pytest

from mha_core.model import TrainConfig, init_params
from mha_core.params_codec import decode_params, encode_params

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, min_period=2, max_period=4)


def test_params_survive_encoding_to_float16():
    params = init_params(SMALL, 0)
    back = decode_params(encode_params(params, SMALL), SMALL)
    for name, p in params.items():
        np.testing.assert_allclose(back[name], p, rtol=1e-3, atol=1e-4)
    with pytest.raises(ValueError, match="numbers"):
        decode_params(encode_params(params, SMALL)[:-8], SMALL)


def test_text_that_is_not_weights_is_refused_naming_params():
    with pytest.raises(ValueError, match="params must be base64"):
        decode_params("not base64!", SMALL)
    nan = {name: np.full_like(p, np.nan) for name, p in init_params(SMALL, 0).items()}
    with pytest.raises(ValueError, match="NaN"):
        decode_params(encode_params(nan, SMALL), SMALL)
