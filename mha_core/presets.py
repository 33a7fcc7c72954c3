"""Attention layers of published models, each with the configuration it was taken from.

Bias policy: `bias` says whether the model's Q/K/V/O projections have bias vectors, as its released
code builds them. GPT-2, BERT and GPT-3 (the GPT-2 architecture, per its paper) have them; Llama,
Mistral, Falcon and Gemma do not. The original Transformer's equations have no bias terms, and its
authors' tensor2tensor code builds the four projections with use_bias=False, so its preset has none
(PyTorch's nn.MultiheadAttention, by default, would add 4·d_model of them).

n_layers counts the attention layers of the model (the encoder's for BERT; the Transformer base has 6
in its encoder and 6 self-attention layers in its decoder). context is the longest sequence one layer
attends over: the model's context window (Mistral 7B: its sliding window, which bounds its KV cache),
None where the model has no fixed one.

The whole model's KV cache (what a model keeps while it generates, one token at a time) is not always
n_layers layers' worth: cached_layers counts the attention layers that cache keys and values, and
cache_note says which they are where that is not simply every layer. The Transformer base's decoder caches
the keys and values of its 6 self-attention layers and of its 6 cross-attention layers (those of the encoded
source sentence, computed once); its encoder caches nothing. BERT is an encoder: it reads its whole input at
once and generates nothing, so it keeps no KV cache at inference (cached_layers 0).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .config import AttentionConfig
from .fields import arguments


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    bias: bool
    n_layers: int
    context: int | None
    source: str  # where the numbers are published
    cached_layers: int | None = None  # attention layers that keep a KV cache; None: all n_layers
    cache_note: str = ""

    @property
    def kv_layers(self) -> int:
        """How many attention layers keep keys and values while the model generates (0: no KV cache)."""
        return self.n_layers if self.cached_layers is None else self.cached_layers

    @property
    def config(self) -> AttentionConfig:
        """The layer as an AttentionConfig (d_head passed explicitly, as the source gives it)."""
        return AttentionConfig(self.d_model, self.n_heads, self.n_kv_heads, self.d_head, self.bias)


_PRESETS = (
    Preset("transformer-base", "Transformer base (2017)", 512, 8, 8, 64, False, 6, None,
           "https://arxiv.org/abs/1706.03762", cached_layers=12,
           cache_note="The decoder's 6 self-attention layers and its 6 cross-attention layers each keep keys and "
                      "values (cross-attention's are the source sentence's, here n tokens long too): L = 12. "
                      "The encoder keeps none."),
    Preset("gpt2-small", "GPT-2 small (124M)", 768, 12, 12, 64, True, 12, 1024,
           "https://huggingface.co/openai-community/gpt2/blob/main/config.json"),
    Preset("bert-base", "BERT-base", 768, 12, 12, 64, True, 12, 512,
           "https://huggingface.co/google-bert/bert-base-uncased/blob/main/config.json", cached_layers=0,
           cache_note="BERT is an encoder: it reads its whole input at once and generates nothing, so it keeps "
                      "no KV cache at inference."),
    Preset("gpt3-175b", "GPT-3 175B", 12288, 96, 96, 128, True, 96, 2048,
           "https://arxiv.org/abs/2005.14165"),
    Preset("llama2-7b", "Llama 2 7B", 4096, 32, 32, 128, False, 32, 4096,
           "https://huggingface.co/meta-llama/Llama-2-7b-hf/blob/main/config.json"),
    Preset("llama3-8b", "Llama 3 8B (grouped-query)", 4096, 32, 8, 128, False, 32, 8192,
           "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json"),
    Preset("mistral-7b", "Mistral 7B (grouped-query)", 4096, 32, 8, 128, False, 32, 4096,
           "https://huggingface.co/mistralai/Mistral-7B-v0.1/blob/main/config.json"),
    Preset("falcon-7b", "Falcon 7B (multi-query)", 4544, 71, 1, 64, False, 32, 2048,
           "https://huggingface.co/tiiuae/falcon-7b/blob/main/config.json"),
    Preset("gemma-7b", "Gemma 7B (explicit d_head)", 3072, 16, 16, 256, False, 28, 8192,
           "https://huggingface.co/google/gemma-7b/blob/main/config.json"),
)

PRESETS: dict[str, Preset] = {p.key: p for p in _PRESETS}


@arguments()
def presets() -> list[dict]:
    """Every preset as a plain dict, in display order, with its layer's param_count."""
    return [{**asdict(p), "param_count": p.config.param_count, "kv_layers": p.kv_layers} for p in _PRESETS]
