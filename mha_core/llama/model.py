"""A Llama-style language model (SmolLM2-135M) run from its GGUF file, one layer's weights at a time.

x @ W convention, TransformerLens's names; one block, pre-norm:
    resid_pre = W_E[tokens]                                         # [n, d_model]: no position embedding
    q, k, v = ln1(resid) @ W_Q, W_K, W_V                            # RMSNorm; [n, h·d_head], [n, h_kv·d_head] ×2
    q, k rotated by their position (RoPE); z, pattern = causal grouped-query attention (attention.py)
    resid_mid = resid_pre + merge_heads(z) @ W_O
    resid_post = resid_mid + (silu(ln2(resid_mid) @ W_gate) · (ln2(resid_mid) @ W_up)) @ W_down   # SwiGLU
    logits = ln_final(resid) @ W_Eᵀ                                 # tied embedding: W_U = W_Eᵀ
Weights keep the GGUF's precision (dequantized exactly, float32) and every step stays float32.

llama.cpp's converter stores the rows of attn_q and attn_k of each head permuted: the two halves that
rotate_half (Hugging Face's RoPE) pairs, dimension i with i + d_head/2, are interleaved, so that llama.cpp
rotates adjacent pairs (2i, 2i + 1). Here the rows stay as stored and the adjacent pairs rotate, as Llama's
original code does; each pair turns by the same angle as in Hugging Face's layout, and a head's scores q·k are
a sum over its pairs, so the patterns and the logits are the same.
Shapes: n seq, d_model, h n_heads, h_kv n_kv_heads, d_head, d_mlp, V d_vocab.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from ..fields import Array, Having, Invalid, Maybe, arguments
from ..attention import merge_heads, project, scaled_dot_product_attention, split_heads
from .gguf import GGUFFile, gguf_bytes, raw_tensor, tensor, tensor_rows

ARCHITECTURE = "llama"
UNEMBED_ROWS = 8192  # vocabulary rows dequantized at a time for the logits (18 MB of float32)


@dataclass(frozen=True)
class LlamaConfig:
    """The model's sizes, as its GGUF metadata states them."""
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    d_mlp: int
    d_vocab: int
    n_ctx: int
    rope_base: float
    eps: float  # RMSNorm's epsilon

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


def _gguf(gguf) -> GGUFFile:
    if not isinstance(gguf, GGUFFile):
        raise ValueError(f"gguf must be a GGUFFile (read_gguf's result), got {type(gguf).__name__}")
    if gguf.metadata.get("general.architecture") != ARCHITECTURE:
        raise ValueError(f"gguf holds a {gguf.metadata.get('general.architecture')!r} model, not {ARCHITECTURE!r}")
    return gguf


def llama_config(gguf) -> LlamaConfig:
    """The sizes in gguf's metadata (llama.* keys)."""
    meta = _gguf(gguf).metadata
    key = f"{ARCHITECTURE}.{{}}".format
    return LlamaConfig(
        n_layers=meta[key("block_count")], d_model=meta[key("embedding_length")],
        n_heads=meta[key("attention.head_count")], n_kv_heads=meta[key("attention.head_count_kv")],
        d_mlp=meta[key("feed_forward_length")],
        d_vocab=meta.get(key("vocab_size")) or len(meta["tokenizer.ggml.tokens"]),
        n_ctx=meta[key("context_length")], rope_base=meta[key("rope.freq_base")],
        eps=meta[key("attention.layer_norm_rms_epsilon")])


def layer_weights(gguf, layer: int) -> dict[str, np.ndarray]:
    """Block layer's weights, float32, x @ W convention (views of the stored [out, in] matrices, transposed):
    ln1, ln2 [d_model]; W_Q [d_model, h·d_head], W_K, W_V [d_model, h_kv·d_head], W_O [h·d_head, d_model];
    W_gate, W_up [d_model, d_mlp], W_down [d_mlp, d_model]. About 14 MB: unpack one layer at a time."""
    config = llama_config(gguf)
    if isinstance(layer, bool) or not isinstance(layer, numbers.Integral) or not 0 <= layer < config.n_layers:
        raise ValueError(f"layer must be an integer in [0, {config.n_layers}), got {layer!r}")
    names = {"ln1": "attn_norm", "W_Q": "attn_q", "W_K": "attn_k", "W_V": "attn_v", "W_O": "attn_output",
             "ln2": "ffn_norm", "W_gate": "ffn_gate", "W_up": "ffn_up", "W_down": "ffn_down"}
    weights = {ours: tensor(gguf, f"blk.{layer}.{theirs}.weight") for ours, theirs in names.items()}
    return {name: w if w.ndim == 1 else w.T for name, w in weights.items()}  # [out, in] -> [in, out]


def check_tokens(tokens, config: LlamaConfig) -> np.ndarray:
    """tokens as a [n] int64 array, or a ValueError naming them."""
    array = TokenIds().check("tokens", tokens)
    if array.size > config.n_ctx:
        raise Invalid(f"tokens holds {array.size} ids, more than the model's context of {config.n_ctx}")
    if array.min() < 0 or array.max() >= config.d_vocab:
        raise Invalid(f"tokens must be ids in [0, {config.d_vocab}), got {int(array.min())}..{int(array.max())}")
    return array


class Model:
    """A GGUFFile holding a Llama-style model (read_gguf's result)."""

    def check(self, name: str, value) -> GGUFFile:
        try:
            return _gguf(value)
        except ValueError as error:
            raise Invalid(str(error).replace("gguf", name, 1)) from None


class TokenIds:
    """A [n] sequence of token ids as an int64 array: not empty unless empty is True."""

    def __init__(self, empty: bool = False):
        self.empty = empty

    def check(self, name: str, value) -> np.ndarray:
        try:
            array = np.asarray(value)
        except (TypeError, ValueError):
            array = np.asarray([], dtype=object)
        if self.empty and array.ndim == 1 and array.size == 0:
            return array.astype(np.int64)
        if array.ndim != 1 or array.size == 0 or array.dtype.kind not in "iu":
            what = "a sequence" if self.empty else "a non-empty sequence"
            raise Invalid(f"{name} must be {what} of token ids, got {value!r:.80}")
        return array.astype(np.int64)


def _tokens_fit(args: dict) -> None:
    if "gguf" in args and "tokens" in args:
        check_tokens(args["tokens"], llama_config(args["gguf"]))


def _resid_fits(args: dict) -> None:
    d_model = llama_config(args["gguf"]).d_model
    if args["resid"].shape[-1] != d_model:
        raise Invalid(f"resid must be [n, d_model={d_model}], got shape {args['resid'].shape}")


LAYER_FILES = Maybe(Having(("__iter__",), "an iterable of GGUFFiles, one per layer"))


# ---------------------------------------------------------------- the pieces of a block

def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    """[n, d_model] -> [n, d_model]: x / √(mean(x²) + eps) · w, every row to root-mean-square 1, then scaled."""
    mean_square = np.mean(x * x, axis=-1, keepdims=True)  # [n, 1]
    return x / np.sqrt(mean_square + np.float32(eps)) * w


def rope_angles(n: int, d_head: int, base: float) -> tuple[np.ndarray, np.ndarray]:
    """(cos, sin), each [n, d_head/2] float32: position p turns pair i by p · base^(−2i/d_head)."""
    exponents = np.arange(0, d_head, 2, dtype=np.float32) / np.float32(d_head)  # [d_head/2]: 2i/d_head
    inv_freq = np.float32(1) / np.float32(base) ** exponents  # [d_head/2], float32 as Hugging Face computes it
    angles = np.arange(n, dtype=np.float32)[:, None] * inv_freq  # [n, 1] · [d_head/2] -> [n, d_head/2]
    return np.cos(angles), np.sin(angles)


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """RoPE on adjacent pairs: [h, n, d_head] -> [h, n, d_head], each pair (x₂ᵢ, x₂ᵢ₊₁) turned by its angle."""
    pairs = x.reshape(*x.shape[:-1], -1, 2)  # [h, n, d_head] -> [h, n, d_head/2, 2]
    even, odd = pairs[..., 0], pairs[..., 1]  # [h, n, d_head/2] each
    turned = np.stack((even * cos - odd * sin, even * sin + odd * cos), axis=-1)  # [h, n, d_head/2, 2]
    return turned.reshape(x.shape)  # -> [h, n, d_head]


def silu(x: np.ndarray) -> np.ndarray:
    """x · sigmoid(x), element-wise (exp's overflow for very negative x gives the right limit, −0)."""
    with np.errstate(over="ignore"):
        return x / (np.float32(1) + np.exp(-x))


def attention(x: np.ndarray, w: dict, config: LlamaConfig, cos: np.ndarray, sin: np.ndarray, mask=None):
    """ln1(resid) [..., n, d_model] -> (z [..., h, n, d_head], pattern [..., h, n, n]): causal grouped-query
    attention, its queries and keys rotated by position; z is each head's weighted sum of values, before W_O
    (leading axes: a batch of texts of one length). mask: None, or [n, n] bool, True where a query may attend
    to a key (on top of the causal mask)."""
    q = project(x, w["W_Q"])  # [n, d_model] @ [d_model, h·d_head] -> [n, h·d_head]
    k = project(x, w["W_K"])  # [n, d_model] @ [d_model, h_kv·d_head] -> [n, h_kv·d_head]
    v = project(x, w["W_V"])  # [n, d_model] @ [d_model, h_kv·d_head] -> [n, h_kv·d_head]
    q_heads = rotate(split_heads(q, config.n_heads), cos, sin)  # [n, h·d_head] -> [h, n, d_head]
    k_heads = rotate(split_heads(k, config.n_kv_heads), cos, sin)  # [n, h_kv·d_head] -> [h_kv, n, d_head]
    v_heads = split_heads(v, config.n_kv_heads)  # [n, h_kv·d_head] -> [h_kv, n, d_head]
    *batch, h, n, d_head = q_heads.shape
    q_groups = q_heads.reshape(*batch, config.n_kv_heads, -1, n, d_head)  # [h, n, d_head] -> [h_kv, g, n, d_head]
    # Query heads g·j .. g·j + g − 1 share key/value head j: its keys and values broadcast over the group's axis.
    k_groups, v_groups = k_heads[..., None, :, :], v_heads[..., None, :, :]  # [h_kv, 1, n, d_head] each
    z, pattern = scaled_dot_product_attention(q_groups, k_groups, v_groups, causal=True, mask=mask)
    return z.reshape(*batch, h, n, d_head), pattern.reshape(*batch, h, n, n)  # [h_kv, g, n, ...] -> [h, n, ...]


def mlp(x: np.ndarray, w: dict) -> np.ndarray:
    """ln2(resid) [n, d_model] -> [n, d_model]: SwiGLU, silu(x W_gate) · (x W_up), then W_down."""
    gate = silu(project(x, w["W_gate"]))  # [n, d_model] @ [d_model, d_mlp] -> [n, d_mlp]
    hidden = gate * project(x, w["W_up"])  # [n, d_mlp]
    return project(hidden, w["W_down"])  # [n, d_mlp] @ [d_mlp, d_model] -> [n, d_model]


def block_parts(resid: np.ndarray, w: dict, config: LlamaConfig, cos: np.ndarray, sin: np.ndarray, knocked=None,
                mask=None) -> dict:
    """resid_pre [..., n, d_model] -> {resid_post [..., n, d_model], pattern [..., h, n, n], z [..., h, n, d_head],
    mlp_out [..., n, d_model]}. knocked: None, or [..., h] bool, the heads whose z is set to 0 (zero-ablated)
    before W_O; mask: as attention takes it."""
    z, pattern = attention(rms_norm(resid, w["ln1"], config.eps), w, config, cos, sin, mask)
    if knocked is not None:
        z = np.where(knocked[..., None, None], np.float32(0), z)  # [..., h, n, d_head]
    resid = resid + project(merge_heads(z), w["W_O"])  # resid_mid: [n, h·d_head] @ [h·d_head, d_model]
    mlp_out = mlp(rms_norm(resid, w["ln2"], config.eps), w)  # [n, d_model]
    return {"resid_post": resid + mlp_out, "pattern": pattern, "z": z, "mlp_out": mlp_out}


def block(resid: np.ndarray, w: dict, config: LlamaConfig, cos: np.ndarray, sin: np.ndarray):
    """resid_pre [n, d_model] -> (resid_post [n, d_model], pattern [h, n, n])."""
    parts = block_parts(resid, w, config, cos, sin)
    return parts["resid_post"], parts["pattern"]


# ---------------------------------------------------------------- the model

@arguments(_tokens_fit, gguf=Model(), tokens=TokenIds())
def embed(gguf, tokens) -> np.ndarray:
    """tokens [n] -> resid_pre_0 [n, d_model]: only the embedding rows the tokens need are dequantized."""
    return tensor_rows(gguf, "token_embd.weight", tokens)  # [n, d_model]


@arguments(_tokens_fit, gguf=Model(), tokens=TokenIds(), layers=LAYER_FILES)
def run_layers(gguf, tokens, layers=None):
    """Yield (layer, resid_post [n, d_model], pattern [h, n, n]) after each block, one layer's weights
    unpacked at a time (a caller reports progress between layers, or stops early).

    layers: where each block's tensors are, one GGUFFile per layer in order (split_model's layer files, which
    a caller may read only as their turn comes); by default gguf itself.
    """
    config = llama_config(gguf)
    resid = embed(gguf, tokens)  # [n, d_model]
    cos, sin = rope_angles(len(resid), config.d_head, config.rope_base)  # [n, d_head/2] each
    sources = [gguf] * config.n_layers if layers is None else layers
    layer = -1
    for layer, source in enumerate(sources):
        if layer == config.n_layers:
            raise ValueError(f"layers holds more than the model's {config.n_layers} layers")
        if not isinstance(source, GGUFFile):
            raise ValueError(f"layers must hold GGUFFiles (read_gguf's results), got a {type(source).__name__}")
        resid, pattern = block(resid, layer_weights(source, layer), config, cos, sin)
        yield layer, resid, pattern
    if layer + 1 < config.n_layers:
        raise ValueError(f"layers holds {layer + 1} layers, not the model's {config.n_layers}")


@arguments(_resid_fits, gguf=Model(), resid=Array(ndim=(2,)))
def unembed(gguf, resid) -> np.ndarray:
    """resid_final [n, d_model] -> logits [n, V], through the final RMSNorm and the tied embedding W_Eᵀ,
    dequantized UNEMBED_ROWS rows at a time (the whole of it as float32 would be 113 MB)."""
    config = llama_config(gguf)
    x = rms_norm(resid, tensor(gguf, "output_norm.weight"), config.eps)  # [n, d_model]
    logits = np.empty((len(x), config.d_vocab), np.float32)  # [n, V]
    for start in range(0, config.d_vocab, UNEMBED_ROWS):
        stop = min(start + UNEMBED_ROWS, config.d_vocab)
        W_E = tensor_rows(gguf, "token_embd.weight", np.arange(start, stop))  # [rows, d_model]
        logits[:, start:stop] = project(x, W_E.T)  # [n, d_model] @ [d_model, rows] -> [n, rows]
    return logits


@arguments(_tokens_fit, gguf=Model(), tokens=TokenIds(), layers=LAYER_FILES)
def forward(gguf, tokens, layers=None) -> tuple[np.ndarray, np.ndarray]:
    """tokens [n] -> (logits [n, V], patterns [n_layers, h, n, n]): the whole model, layer by layer (layers: as
    run_layers takes them)."""
    patterns = []
    for _, resid, pattern in run_layers(gguf, tokens, layers):
        patterns.append(pattern)
    return unembed(gguf, resid), np.stack(patterns)


# ---------------------------------------------------------------- the model cut into files, for a browser

def split_model(gguf) -> dict[str, bytes]:
    """{file name: bytes}: the model cut into GGUF files that read_gguf reads, the blocks as stored (never
    re-quantized), each with the model's sizes (general.architecture and the llama.* keys):

        model.gguf       all the metadata (the tokenizer's vocabulary and merges among it), no tensor
        embedding.gguf   token_embd (Q8_0, 30 MB) and output_norm: embed, and unembed for the logits
        layer-00.gguf …  each block's nine tensors (Q4_1 and its two norms, 2.2 MB)

    A browser fetches model.gguf and embedding.gguf, then each layer file as its turn comes, and runs
    forward(read_gguf(embedding), tokens, layers=(read_gguf(layer file) for each layer)).
    """
    config = llama_config(gguf)
    sizes = {k: v for k, v in gguf.metadata.items() if k == "general.architecture" or k.startswith(f"{ARCHITECTURE}.")}

    def file(names):
        return gguf_bytes(sizes, {name: raw_tensor(gguf, name) for name in names})

    files = {"model.gguf": gguf_bytes(gguf.metadata, {}),
             "embedding.gguf": file(["token_embd.weight", "output_norm.weight"])}
    for layer in range(config.n_layers):
        files[f"layer-{layer:02d}.gguf"] = file([name for name in gguf.tensors if name.startswith(f"blk.{layer}.")])
    return files
