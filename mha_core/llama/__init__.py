"""A real language model in mha_core: SmolLM2-135M (Allal et al., 2025; Apache-2.0), a Llama-style model, run from
llama.cpp's GGUF file with NumPy alone, its attention the one attention.py teaches.

    gguf        the file read (metadata, tensor infos, Q4_1, Q8_0 and F32 blocks dequantized exactly) and written
    model       RMSNorm, RoPE, grouped-query attention, SwiGLU, tied embedding; a forward one layer at a time;
                the model cut into a file per layer for a browser
    tokenizer   its byte-level BPE tokenizer, from the file's vocabulary and merges
    scores      how much each head is a previous-token, first-token, induction or duplicate-token head
    lab         the model as a laboratory: its predictions and loss on every token, heads knocked out, the heads
                that wrote a logit, the logit lens

    >>> from mha_core.llama import read_gguf, tokenizer_from_gguf, forward, head_scores
    >>> model = read_gguf("SmolLM2-135M-Instruct.Q4_1.gguf")
    >>> ids = tokenizer_from_gguf(model).encode("red green blue yellow purple orange " * 2)
    >>> logits, patterns = forward(model, ids)       # [n, 49152], [30 layers, 9 heads, n, n]
    >>> head_scores(patterns, ids)["induction"]      # [30, 9]
"""

from .gguf import GGUFFile, TensorInfo, dequantize, gguf_bytes, raw_tensor, read_gguf, tensor, tensor_rows
from .lab import (UnpackedOnUse, control_heads, knockout_effects, logit_attribution, logit_lens, parse_heads,
                  predictions, pruning_steps, recorded_run, removable_heads, removal_order, removal_steps, run,
                  strongest_heads, unpacked_layers)
from .model import LlamaConfig, embed, forward, layer_weights, llama_config, run_layers, split_model, unembed
from .scores import SCORES, head_scores, ideal_keys
from .tokenizer import Tokenizer, pre_tokenize, tokenizer_from_gguf

__all__ = [
    "GGUFFile", "TensorInfo", "dequantize", "gguf_bytes", "raw_tensor", "read_gguf", "tensor", "tensor_rows",
    "LlamaConfig", "embed", "forward", "layer_weights", "llama_config", "run_layers", "split_model", "unembed",
    "SCORES", "head_scores", "ideal_keys", "Tokenizer", "pre_tokenize", "tokenizer_from_gguf",
    "control_heads", "knockout_effects", "logit_attribution", "logit_lens", "parse_heads", "predictions",
    "recorded_run", "removable_heads", "run", "strongest_heads", "unpacked_layers", "UnpackedOnUse",
    "pruning_steps", "removal_order", "removal_steps",
]
