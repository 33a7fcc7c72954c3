"""views/training_words.py: the heads' roles and names, the captions, the sentence under the slider."""

from dataclasses import asdict

from mha_core.model import TrainConfig, init_params
from mha_core.params_codec import encode_params
from mha_page.views import training_words
from mha_page.views.training import training_evaluate

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=2, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


def test_each_heads_caption_names_it_the_step_the_heads_knocked_out_and_the_sequence():
    config = TrainConfig(n_layers=2, n_heads=2, min_period=8, max_period=8)
    plain = training_words.captions(config, 270)
    assert plain[1][0] == ("Layer 1, head 0 at step 270: each row is a query, each column a key, on a test sequence "
                           "that repeats a block of 8 tokens.")
    knocked = training_words.captions(config, 30, [(1, 1), (0, 1)], "your text")
    assert knocked[0][1] == ("Layer 0, head 1 at step 30 (knocked out: L0 H1, L1 H1): each row is a query, each "
                             "column a key, on your text.")
    params = init_params(SMALL, 1)
    answer = training_evaluate(asdict(SMALL), 3, encode_params(params, SMALL), [[0, 1]], "the cat. the cat.", step=60)
    assert answer["captions"][1][1] == ("Layer 1, head 1 at step 60 (knocked out: L0 H1): each row is a query, "
                                        "each column a key, on your text.")
