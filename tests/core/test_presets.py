"""Presets against the published configurations they cite."""

import pytest
import torch

from mha_core import PRESETS, check_config, param_count, presets, shape_report
from mha_page.views.shapes import shapes_display

# key: (d_model, n_heads, n_kv_heads, d_head, bias, n_layers, context), each from the publication named
# beside it.
PUBLISHED = {
    # Vaswani et al. 2017, arXiv:1706.03762, Table 3 "base": d_model 512, h 8, d_k = d_v = 64.
    # No bias: the paper's equations have none and tensor2tensor's compute_attention_component and
    # output_transform use use_bias=False.
    # N = 6 layers in the encoder (and 6 in the decoder); no fixed context (sinusoidal positions).
    "transformer-base": (512, 8, 8, 64, False, 6, None),
    # openai-community/gpt2 config.json: n_embd 768, n_head 12, n_layer 12, n_ctx 1024; c_attn and
    # c_proj have biases.
    "gpt2-small": (768, 12, 12, 64, True, 12, 1024),
    # google-bert/bert-base-uncased config.json: hidden_size 768, num_attention_heads 12,
    # num_hidden_layers 12, max_position_embeddings 512; Linear with bias.
    "bert-base": (768, 12, 12, 64, True, 12, 512),
    # Brown et al. 2020, arXiv:2005.14165, Table 2.1: n_layers 96, d_model 12288, n_heads 96, d_head 128,
    # context window n_ctx = 2048 ("the same model and architecture as GPT-2", so biases as GPT-2).
    "gpt3-175b": (12288, 96, 96, 128, True, 96, 2048),
    # meta-llama/Llama-2-7b-hf config.json: hidden_size 4096, num_attention_heads 32,
    # num_key_value_heads 32, num_hidden_layers 32, max_position_embeddings 4096, attention_bias false.
    "llama2-7b": (4096, 32, 32, 128, False, 32, 4096),
    # meta-llama/Meta-Llama-3-8B config.json: hidden_size 4096, heads 32, num_key_value_heads 8,
    # num_hidden_layers 32, max_position_embeddings 8192.
    "llama3-8b": (4096, 32, 8, 128, False, 32, 8192),
    # mistralai/Mistral-7B-v0.1 config.json: hidden_size 4096, heads 32, num_key_value_heads 8,
    # num_hidden_layers 32, sliding_window 4096 (each layer attends over at most 4096 tokens, and its
    # rolling KV cache holds no more; max_position_embeddings is 32768).
    "mistral-7b": (4096, 32, 8, 128, False, 32, 4096),
    # tiiuae/falcon-7b config.json: hidden_size 4544, n_head 71, n_layer 32, multi_query true,
    # bias false; its model card: sequence length 2048.
    "falcon-7b": (4544, 71, 1, 64, False, 32, 2048),
    # google/gemma-7b config.json: hidden_size 3072, num_attention_heads 16, num_key_value_heads 16,
    # head_dim 256, num_hidden_layers 28, max_position_embeddings 8192, attention_bias false.
    "gemma-7b": (3072, 16, 16, 256, False, 28, 8192),
}


def test_every_model_named_in_the_issue_is_there():
    assert set(PRESETS) == set(PUBLISHED)
    assert [p["key"] for p in presets()] == list(PUBLISHED)  # display order: the table above


@pytest.mark.parametrize("key", PUBLISHED)
def test_preset_matches_publication(key):
    p = PRESETS[key]
    assert (p.d_model, p.n_heads, p.n_kv_heads, p.d_head, p.bias, p.n_layers, p.context) == PUBLISHED[key]
    assert p.source.startswith("https://") and p.label
    assert check_config(p.d_model, p.n_heads, p.n_kv_heads, p.d_head)["ok"]


@pytest.mark.parametrize("key", [k for k in PUBLISHED if k != "gemma-7b"])
def test_d_head_follows_from_d_model_except_for_gemma(key):
    p = PRESETS[key]
    assert p.d_model // p.n_heads == p.d_head and p.d_model % p.n_heads == 0


def test_gemma_needs_its_explicit_d_head():
    p = PRESETS["gemma-7b"]
    assert p.d_model / p.n_heads == 192 != p.d_head
    assert p.config.weight_shapes["W_Q"] == (3072, 16 * 256)


def test_gpt2_small_attention_matches_torch_parameter_count():
    layer = torch.nn.MultiheadAttention(768, 12)  # biases on, as GPT-2's c_attn and c_proj
    torch_count = sum(p.numel() for p in layer.parameters())
    assert torch_count == 4 * 768 * 768 + 4 * 768 == 2_362_368
    assert PRESETS["gpt2-small"].config.param_count == torch_count


def test_transformer_base_without_and_with_torch_biases():
    assert PRESETS["transformer-base"].config.param_count == 4 * 512 * 512
    layer = torch.nn.MultiheadAttention(512, 8, bias=False)
    assert sum(p.numel() for p in layer.parameters()) == param_count(512, 8, bias=False)


def test_grouped_and_multi_query_counts_match_the_released_projection_shapes():
    # Llama-3-8B: q_proj 4096->4096, k_proj and v_proj 4096->1024, o_proj 4096->4096, no bias
    assert PRESETS["llama3-8b"].config.param_count == 4096 * 4096 * 2 + 4096 * 1024 * 2
    # Falcon-7B: fused query_key_value 4544 -> 4544 + 2·64, dense 4544 -> 4544, no bias
    assert PRESETS["falcon-7b"].config.param_count == 4544 * (4544 + 2 * 64) + 4544 * 4544


def test_gpt3_layer_count():
    assert presets()[[p["key"] for p in presets()].index("gpt3-175b")]["param_count"] == 604_028_928


def test_llama2_whole_model_kv_cache():
    """Llama 2 7B at its full context, one sequence, 2 bytes a number: 64 MiB a layer, 2 GiB for 32 layers."""
    p = PRESETS["llama2-7b"]
    report = shape_report(p.d_model, p.n_heads, p.context, 1, p.n_kv_heads, p.d_head, p.bias, 2, p.n_layers)
    assert report["kv_cache_bytes"] == 2 * 4096 * 32 * 128 * 2 == 64 * 2**20
    assert report["kv_cache_model_bytes"] == 32 * 64 * 2**20 == 2 * 2**30
    assert (shapes_display(report)["totals"]["kv_cache"]["text"], shapes_display(report)["totals"]["kv_cache_model"]["text"]) == (
        "64.0 MiB", "2.00 GiB")


def test_the_whole_model_kv_cache_counts_the_layers_that_keep_one():
    """Decoder-only models cache keys and values in every layer; the Transformer base's decoder in its 6
    self-attention and its 6 cross-attention layers (the encoder in none); BERT, an encoder, in none."""
    base, bert = PRESETS["transformer-base"], PRESETS["bert-base"]
    assert base.kv_layers == 2 * base.n_layers == 12 and "cross-attention" in base.cache_note
    assert bert.kv_layers == 0 and "encoder" in bert.cache_note and "no KV cache" in bert.cache_note
    for key, p in PRESETS.items():
        if key not in ("transformer-base", "bert-base"):
            assert p.kv_layers == p.n_layers and p.cache_note == ""
    shown = {p["key"]: p["kv_layers"] for p in presets()}
    assert shown["transformer-base"] == 12 and shown["bert-base"] == 0


def test_presets_takes_no_argument():
    with pytest.raises(TypeError):
        presets("transformer-base")
    assert presets() == presets.fn()
