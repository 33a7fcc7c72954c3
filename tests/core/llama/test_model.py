"""model.py against transformers' LlamaForCausalLM loaded from the same GGUF (eager attention, float32): the logits
and every head's attention weights on six texts and on the texts the real model's page shows; the heads the model
is known for; the pieces; refusals. To the model a text is its ids: each text here differs in what the forward
does with them (how many, which rows of the embedding); that the ids are transformers' for texts in every
script is test_tokenizer.py's to check.

Tolerances, from float32: one rounding is 6e-8 of a value; a dot product of 576 or 1,536 terms summed in another
order (NumPy's BLAS and PyTorch's kernels block their sums differently) differs by some 1e-6 of its terms, and
30 layers carry these on. Measured on these texts: logits differ by at most 1.5e-4 (logits of magnitude up to
43: ~4e-6 of them) and attention weights by at most 9e-6. The tolerances below are about ten times those, and far
below what any mistake moves (a RoPE pair mis-rotated, a missing norm or a wrong key/value group changes
weights by tenths).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from mha_core.llama.gguf import read_gguf
from mha_core.llama.model import (LlamaConfig, embed, forward, layer_weights, llama_config, rms_norm, rope_angles,
                                  rotate, run_layers, split_model)
from mha_core.llama.tokenizer import tokenizer_from_gguf
from mha_core.llama.scores import head_scores
from sitebuild.widgets import widget_module

LOGITS_TOLERANCE = 2e-3  # in logits: ~5e-5 of the largest
WEIGHTS_TOLERANCE = 1e-4  # in attention weights, which lie in [0, 1]

INDUCTION_WORDS = "table orange cloud silver horse paper stone forest candle winter engine market island tiger"
RANDOM = np.random.default_rng(41).integers(17, 49152, size=24)  # ordinary tokens (0..16 are special)

TEXTS = {
    "one token": "Hello",  # each head's softmax over one key
    "english": "The quick brown fox jumps over the lazy dog, then rests under an old oak tree.",
    "prose": ("Attention lets every token look back at the tokens before it. Each head computes its own weights, "
              "so one head can follow the previous word while another finds where the current word was seen "
              "before and copies what came next. Stacked in thirty layers, these simple moves add up to a model "
              "that writes fluent text."),  # 62 tokens: RoPE turns its pairs through many angles
    "chat template": "<|im_start|>user\nWhat is attention?<|im_end|>\n<|im_start|>assistant\n",  # special tokens
    "repeated random tokens": np.concatenate([RANDOM, RANDOM]),  # rows from all over the embedding
    "14 words repeated": f"{INDUCTION_WORDS} {INDUCTION_WORDS}",  # the induction heads' text (below)
}
PAGE = widget_module("real_model")  # the texts the real model's page shows (its heads are mha_core's on them)


@pytest.fixture(scope="module")
def reference(transformers_model):
    return transformers_model


def reference_forward(model, ids) -> tuple[np.ndarray, np.ndarray]:
    """(logits [n, V], weights [n_layers, h, n, n]) by transformers."""
    with torch.no_grad():
        out = model(torch.tensor([list(ids)]), output_attentions=True)
    return out.logits[0].numpy(), torch.stack(out.attentions)[:, 0].numpy()


def ids_of(text, tokenizer) -> list[int]:
    return tokenizer.encode(text) if isinstance(text, str) else [int(i) for i in text]


@pytest.mark.transformers
@pytest.mark.parametrize("name", TEXTS)
def test_logits_and_every_head_s_weights_are_transformers(name, gguf, tokenizer, reference):
    assert_as_transformers(ids_of(TEXTS[name], tokenizer), gguf, reference)


@pytest.fixture(scope="module")
def page_texts(gguf_path) -> dict[str, str]:
    return PAGE.texts()  # the repeated text is drawn from the model's vocabulary


@pytest.mark.transformers
@pytest.mark.parametrize("name", PAGE.TEXTS)
def test_the_real_model_page_s_texts_give_transformers_heads(name, page_texts, gguf, tokenizer, reference):
    """tests/site/test_real_model.py checks that the page shows mha_core's heads on these texts."""
    assert_as_transformers(tokenizer.encode(page_texts[name]), gguf, reference)


def assert_as_transformers(ids: list[int], gguf, reference) -> None:
    logits, patterns = forward(gguf, ids)
    expected_logits, expected_weights = reference_forward(reference, ids)
    assert logits.dtype == patterns.dtype == np.float32
    assert patterns.shape == (30, 9, len(ids), len(ids))
    np.testing.assert_allclose(logits, expected_logits, rtol=0, atol=LOGITS_TOLERANCE)
    np.testing.assert_allclose(patterns, expected_weights, rtol=0, atol=WEIGHTS_TOLERANCE)


@pytest.mark.transformers
def test_the_induction_and_previous_token_heads_the_model_is_known_for(gguf, tokenizer, reference):
    """On 14 distinct words repeated once: L18 H6 the strongest induction head (about 0.89), L16 H0 the strongest
    previous-token head (about 0.94), by transformers' weights and by ours, every head's scores within 0.02."""
    ids = ids_of(TEXTS["14 words repeated"], tokenizer)
    words = INDUCTION_WORDS.split()
    assert [tokenizer.decode([i]).strip() for i in ids] == words + words  # one token a word
    assert ids[1:14] == ids[15:]  # the first word's token differs: "table", then " table"
    ours = head_scores(forward(gguf, ids)[1], ids)
    theirs = head_scores(reference_forward(reference, ids)[1], ids)
    for kind in ours:
        np.testing.assert_allclose(ours[kind], theirs[kind], rtol=0, atol=0.02)
    for scores in (ours, theirs):
        assert np.unravel_index(np.argmax(scores["induction"]), (30, 9)) == (18, 6)
        assert scores["induction"][18, 6] == pytest.approx(0.89, abs=0.02)
        assert np.unravel_index(np.argmax(scores["previous_token"]), (30, 9)) == (16, 0)
        assert scores["previous_token"][16, 0] == pytest.approx(0.94, abs=0.02)


def test_layer_by_layer_is_the_whole_forward(gguf, tokenizer):
    ids = tokenizer.encode("Layer by layer.")
    steps = list(run_layers(gguf, ids))
    assert [layer for layer, _, _ in steps] == list(range(30))
    np.testing.assert_array_equal(np.stack([pattern for _, _, pattern in steps]), forward(gguf, ids)[1])


def test_the_model_cut_into_files_runs_as_the_whole(gguf, tokenizer):
    files = split_model(gguf)
    assert list(files) == ["model.gguf", "embedding.gguf", *(f"layer-{i:02d}.gguf" for i in range(30))]
    sizes = {name: len(data) / 1e6 for name, data in files.items()}
    assert 1 < sizes["model.gguf"] < 2.5 and 30 < sizes["embedding.gguf"] < 31
    assert all(2.2 < sizes[f"layer-{i:02d}.gguf"] < 2.3 for i in range(30))
    ids = tokenizer_from_gguf(read_gguf(files["model.gguf"])).encode("Cut into files, run as one.")
    assert ids == tokenizer.encode("Cut into files, run as one.")
    embedding = read_gguf(files["embedding.gguf"])
    logits, patterns = forward(embedding, ids, layers=(read_gguf(files[f"layer-{i:02d}.gguf"]) for i in range(30)))
    whole = forward(gguf, ids)
    np.testing.assert_array_equal(logits, whole[0])
    np.testing.assert_array_equal(patterns, whole[1])
    layers = [read_gguf(files[f"layer-{i:02d}.gguf"]) for i in range(30)]
    for wrong, said in [(layers[:29], "layers holds 29 layers, not the model's 30"),
                        (layers + layers[:1], "more than the model's 30"),
                        (layers[1:] + layers[:1], "name 'blk.0.attn_norm.weight' is not a tensor"),
                        (["layer-00.gguf"], "layers must hold GGUFFiles")]:
        with pytest.raises(ValueError, match=said):
            forward(embedding, ids, layers=wrong)


def test_the_config_is_the_model_s(gguf):
    config = llama_config(gguf)
    assert config == LlamaConfig(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, d_mlp=1536, d_vocab=49152,
                                 n_ctx=8192, rope_base=100000.0, eps=np.float32(1e-5).item())
    assert config.d_head == 64
    weights = layer_weights(gguf, 29)
    shapes = {name: w.shape for name, w in weights.items()}
    assert shapes == {"ln1": (576,), "W_Q": (576, 576), "W_K": (576, 192), "W_V": (576, 192), "W_O": (576, 576),
                      "ln2": (576,), "W_gate": (576, 1536), "W_up": (576, 1536), "W_down": (1536, 576)}
    assert all(w.dtype == np.float32 for w in weights.values())


def test_rms_norm_and_rope_by_their_definitions():
    x = np.array([[3.0, 4.0], [0.0, 2.0]], np.float32)
    w = np.array([1.0, 2.0], np.float32)
    expected = [[3 / np.sqrt(12.5), 8 / np.sqrt(12.5)], [0.0, 2 * np.sqrt(2)]]  # rows' root mean squares √12.5, √2
    np.testing.assert_allclose(rms_norm(x, w, 0.0), expected, rtol=1e-6)
    cos, sin = rope_angles(3, 4, 100.0)  # pair i turns by p / 100^(i/2): pair 0 by p, pair 1 by p / 10
    q = np.tile(np.array([1.0, 0.0, 1.0, 0.0], np.float32), (1, 3, 1))  # [1 head, 3 positions, d_head 4]
    turned = rotate(q, cos, sin)
    p = np.arange(3)
    np.testing.assert_allclose(turned[0], np.stack([np.cos(p), np.sin(p), np.cos(p / 10), np.sin(p / 10)], 1),
                               atol=1e-6)
    assert turned.dtype == np.float32


def test_nonsense_is_refused_with_the_argument_named(gguf):
    for tokens, said in [([], "tokens must be a non-empty"), ([1.5], "tokens must be"), ([[1, 2]], "tokens must be"),
                         ([49152], r"tokens must be ids in \[0, 49152\)"), ([-1], "tokens must be ids"),
                         (np.zeros(8193, int), "more than the model's context")]:
        with pytest.raises(ValueError, match=said):
            forward(gguf, tokens)
    with pytest.raises(ValueError, match="gguf must be a GGUFFile"):
        embed("model.gguf", [1])
    for layer in (30, -1, 1.0, True):
        with pytest.raises(ValueError, match=r"layer must be an integer in \[0, 30\)"):
            layer_weights(gguf, layer)
