"""Attention without the n × n matrix: FlashAttention's forward pass in NumPy, tile by tile.

Dao et al. (2022) cut the queries into blocks of block_q rows and the keys and values into blocks of block_k.
For each query block they walk the key blocks, keeping per query a running maximum m, a running sum
ℓ = Σ exp(s − m) over the keys seen so far and an unnormalised output O (the online softmax of Milakov &
Gimelshein, 2018). A tile of scores S [b_q, b_k] and its values V_j [b_k, d_v] update them:

    m' = max(m, rowmax S)
    ℓ' = exp(m − m') ℓ + rowsum exp(S − m')
    O' = exp(m − m') O + exp(S − m') V_j

and once every key block is in, out = O / ℓ. This is exact, not an approximation: softmax is unchanged by
a shift of its row (exp(s − m) / Σ exp(s − m) is the same for every m), and exp(m − m') moves what was
summed against the old maximum onto the new one. Only one tile of scores exists at a time; the n × n
scores and weights are never built. With causal=True a tile whose every key comes after every query
(entirely above the diagonal) is skipped, never computed.

The query blocks are the outer loop: a query block's m, ℓ and O stay in fast memory until its output is
written, once.

Shapes use n_q, n_k (queries, keys), d (d_k) and d_v; b_q, b_k the blocks; T_q = ⌈n_q / b_q⌉ and
T_k = ⌈n_k / b_k⌉ the numbers of blocks. Every function keeps the input's floating dtype.
"""

from __future__ import annotations

import math
import zlib

import numpy as np

from .attention import future_keys, qkv_fit
from .fields import Array, Choice, Flag, TextOrTokens, Whole, arguments
from .heads import MAX_TOKENS, given_tokens
from .rng import Random
from .tokens import MAX_TEXT_CHARS, token_key

BLOCK = Whole(1, 2**31 - 1)  # a block larger than n is one block of n


def _blocks(n: int, block: int) -> list[tuple[int, int]]:
    """[(start, stop), ...]: n positions in blocks of block; the last is shorter when block does not divide n."""
    return [(start, min(start + block, n)) for start in range(0, n, block)]


def _above_diagonal(rows: tuple[int, int], cols: tuple[int, int]) -> bool:
    """Every key of cols comes after every query of rows (key j > query i): the causal mask hides the whole tile."""
    return cols[0] > rows[1] - 1


def _update(m, l, o, s, v_j):
    """The online softmax's step for one tile -> (m', ℓ', O', exp(m − m')).

    m, l [..., b_q]; o [..., b_q, d_v]; s [..., b_q, b_k] (−inf where masked); v_j [..., b_k, d_v].
    A query with no key seen yet has m = −inf, ℓ = 0 and O = 0; its first key makes m' finite and exp(m − m') 0.
    """
    m_new = np.maximum(m, s.max(axis=-1))  # [..., b_q]
    shift = np.where(m_new == -np.inf, 0, m_new)  # [..., b_q]: a query with every key so far masked stays at 0
    rescale = np.exp(m - shift)  # [..., b_q]: 1 where the maximum did not move
    p = np.exp(s - shift[..., None])  # [..., b_q, b_k]
    l_new = rescale * l + p.sum(axis=-1)  # [..., b_q]
    o_new = rescale[..., None] * o + p @ v_j  # [..., b_q, d_v] + [..., b_q, b_k] @ [..., b_k, d_v]
    return m_new, l_new, o_new, rescale


def _flash(q, k, v, block_q: int, block_k: int, causal: bool, steps: list | None = None):
    """The tiled forward pass (arguments already checked) -> (out [..., n_q, d_v], traffic).

    traffic counts, per head, the elements read from and written to slow memory ({"reads", "writes"}) and
    the largest tile of scores held ({"held"}), tallied from the arrays as they are sliced and built. With a
    list for steps, each tile is appended to it as flash_attention_steps describes.
    """
    d, d_v = q.shape[-1], v.shape[-1]
    dtype = np.result_type(q, k, v)
    scale = dtype.type(1 / math.sqrt(d))  # a dtype scalar: float32 stays float32
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    out = np.empty((*lead, q.shape[-2], d_v), dtype)  # [..., n_q, d_v]
    traffic = {"reads": 0, "writes": 0, "held": 0}
    for i, rows in enumerate(_blocks(q.shape[-2], block_q)):
        q_i = q[..., rows[0]:rows[1], :]  # [..., b_q, d]: read once per query block
        traffic["reads"] += q_i.shape[-2] * d
        m = np.full((*lead, q_i.shape[-2]), -np.inf, dtype)  # [..., b_q]
        l = np.zeros_like(m)  # [..., b_q]
        o = np.zeros((*lead, q_i.shape[-2], d_v), dtype)  # [..., b_q, d_v]
        for j, cols in enumerate(_blocks(k.shape[-2], block_k)):
            tile = {"query_block": i, "key_block": j, "rows": rows, "cols": cols}
            if causal and _above_diagonal(rows, cols):
                if steps is not None:
                    steps.append(tile | {"skipped": True})
                continue
            k_j, v_j = k[..., cols[0]:cols[1], :], v[..., cols[0]:cols[1], :]  # [..., b_k, d], [..., b_k, d_v]
            traffic["reads"] += k_j.shape[-2] * d + v_j.shape[-2] * d_v
            s = q_i @ k_j.mT  # [..., b_q, d] @ [..., d, b_k] -> [..., b_q, b_k]: the only scores there are
            s *= scale
            traffic["held"] = max(traffic["held"], s.shape[-2] * s.shape[-1])
            if causal:
                later = future_keys(q.shape[-2], k.shape[-2])[rows[0]:rows[1], cols[0]:cols[1]]  # [b_q, b_k]
                np.copyto(s, -np.inf, where=later)
            m_new, l_new, o_new, rescale = _update(m, l, o, s, v_j)
            if steps is not None:
                steps.append(tile | {"skipped": False, "scores": s, "rescale": rescale,
                                     "m": (m, m_new), "l": (l, l_new), "o": (o, o_new)})
            m, l, o = m_new, l_new, o_new
        out[..., rows[0]:rows[1], :] = o / l[..., None]  # [..., b_q, d_v]: written once
        traffic["writes"] += q_i.shape[-2] * d_v
    return out, traffic


def _some_positions(args: dict) -> None:
    qkv_fit(args)
    if args["q"].shape[-1] < 1:
        raise ValueError(f"q's last axis (d_k) must be at least 1, got shape {args['q'].shape}.")
    for name, what in (("q", "query"), ("k", "key")):
        if args[name].shape[-2] < 1:
            raise ValueError(f"{name} must hold at least one {what}, got shape {args[name].shape}.")


QKV = {"q": Array(), "k": Array(), "v": Array()}


@arguments(_some_positions, **QKV, block_q=BLOCK, block_k=BLOCK, causal=Flag())
# --8<-- [start:flash_attention]
def flash_attention(q, k, v, block_q: int, block_k: int, causal: bool = False) -> np.ndarray:
    """softmax(q kᵀ / √d_k) v computed tile by tile -> out [..., n_q, d_v], scaled_dot_product_attention's out.

    q is [..., n_q, d_k], k is [..., n_k, d_k], v is [..., n_k, d_v]; leading axes broadcast. block_q and
    block_k are any sizes from 1: a block that does not divide n leaves a shorter last block. causal=True
    masks every key after the query (key j > query i) and skips the tiles it hides entirely.
    """
    return _flash(q, k, v, block_q, block_k, causal)[0]
# --8<-- [end:flash_attention]


@arguments(_some_positions, q=Array(ndim=(2,)), k=Array(ndim=(2,)), v=Array(ndim=(2,)),
           block_q=BLOCK, block_k=BLOCK, causal=Flag())
def flash_attention_steps(q, k, v, block_q: int, block_k: int, causal: bool = False) -> dict:
    """One head's tiled attention, every tile in order -> {out, steps, traffic}.

    q [n_q, d_k], k [n_k, d_k], v [n_k, d_v]. steps lists the T_q · T_k tiles, query block by query block:
    {query_block, key_block, rows (start, stop), cols (start, stop), skipped}, and for a tile computed
    (skipped False) also scores [b_q, b_k] (scaled, −inf where masked), m, l and o as (before, after)
    ([b_q], [b_q], [b_q, d_v]: o unnormalised) and rescale [b_q], exp(m − m'). traffic: as _flash tallies it.
    """
    steps = []
    out, traffic = _flash(q, k, v, block_q, block_k, causal, steps)
    return {"out": out, "steps": steps, "traffic": traffic}


@arguments(n_q=Whole(1, 2**31 - 1), n_k=Whole(1, 2**31 - 1), d=Whole(1, 2**31 - 1), d_v=Whole(1, 2**31 - 1),
           block_q=BLOCK, block_k=BLOCK, causal=Flag())
# --8<-- [start:flash_counts]
def flash_counts(n_q: int, n_k: int, d: int, d_v: int, block_q: int, block_k: int, causal: bool = False) -> dict:
    """What one head's attention holds, computes and moves, tiled and ordinary, counted in elements.

    tiles      tiles computed: T_q · T_k, or with causal=True those not entirely above the diagonal: query
               block [r0, r1) needs the key blocks up to the one holding key r1 − 1, min(⌈r1 / b_k⌉, T_k) of them
    skipped    T_q · T_k − tiles (0 unless causal)
    held       score elements held at once: min(b_q, n_q) · min(b_k, n_k), one tile
    full       n_q · n_k, the ordinary computation's scores (and as many weights)

    Reads and writes of slow memory (the GPU's HBM), as Dao et al. (2022) count them:
    ordinary   its Algorithm 0: read Q, K, write S; read S, write P = softmax(S); read P, V, write O:
               reads n_q·d + n_k·d + 2·n_q·n_k + n_k·d_v, writes 2·n_q·n_k + n_q·d_v
    tiled      each query block read once, each computed tile's K_j and V_j read, each output row written once:
               reads n_q·d + Σ over computed tiles b_k·(d + d_v), writes n_q·d_v
    Without the mask and with blocks that fill a fast memory of M elements (b_q ≈ b_k ≈ M / 4d), T_q ≈ 4·n·d / M
    and the tiled reads are n·d + T_q·n·(d + d_v) ≈ 8·n²·d² / M: the paper's Θ(n² d² / M) against Θ(n d + n²).
    """
    row_blocks, col_blocks = _blocks(n_q, block_q), _blocks(n_k, block_k)
    computed = [min(math.ceil(stop / block_k), len(col_blocks)) if causal else len(col_blocks)
                for _, stop in row_blocks]  # key blocks each query block combines
    key_columns = sum(min(c * block_k, n_k) for c in computed)  # Σ over computed tiles of b_k (the last shorter)
    return {
        "tiles": sum(computed), "skipped": len(row_blocks) * len(col_blocks) - sum(computed),
        "held": min(block_q, n_q) * min(block_k, n_k), "full": n_q * n_k,
        "ordinary": {"reads": n_q * d + n_k * d + 2 * n_q * n_k + n_k * d_v, "writes": 2 * n_q * n_k + n_q * d_v},
        "tiled": {"reads": n_q * d + key_columns * (d + d_v), "writes": n_q * d_v},
    }
# --8<-- [end:flash_counts]


SCORES = Array(ndim=(2,), values="no +inf")  # −inf marks a masked score


def _update_fits(args: dict) -> None:
    m, l, o, s, v = (args[name] for name in ("m", "l", "o", "scores", "v"))
    b_q, b_k = s.shape
    if m.shape != (b_q,) or l.shape != (b_q,):
        raise ValueError(f"m {m.shape} and l {l.shape} must hold one number per query, ({b_q},), as scores has rows.")
    if o.shape[0] != b_q or v.shape != (b_k, o.shape[1]):
        raise ValueError(f"o {o.shape} must be [b_q, d_v] and v {v.shape} [b_k, d_v], with scores [b_q, b_k] = {s.shape}.")


@arguments(_update_fits, m=Array(ndim=(1,), values="no +inf"), l=Array(ndim=(1,)), o=Array(ndim=(2,)),
           scores=SCORES, v=Array(ndim=(2,)))
# --8<-- [start:online_softmax_update]
def online_softmax_update(m, l, o, scores, v) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One key block's step of the online softmax -> (m', ℓ', O').

    m, l [b_q]: each query's running maximum and sum (m = −inf, l = 0 before any key); o [b_q, d_v] the
    unnormalised output so far; scores [b_q, b_k] the new tile (already divided by √d_k, −inf where masked);
    v [b_k, d_v] its values. O' / ℓ' is the attention output over every key seen so far.
    """
    return _update(m, l, o, scores, v)[:3]
# --8<-- [end:online_softmax_update]


D_HEADS = (2, 4, 8)  # the widget's head widths
D_EMBED = 16  # the sentence head's embedding width
EMBED_SEED = 60


@arguments(text_or_tokens=TextOrTokens(MAX_TEXT_CHARS), d_head=Choice(D_HEADS))
def sentence_head(text_or_tokens, d_head: int = 4) -> dict:
    """One head on a sentence -> {tokens, q, k, v} ([n, d_head] each, float64), n the first MAX_TOKENS tokens.

    Each word's embedding (the same for the same word, whatever the case, in any sentence) plus its position's,
    [n, D_EMBED], through W_Q, W_K, W_V [D_EMBED, d_head]: every number drawn from fixed seeds, normal with
    variance 1 for the embeddings and 1 / D_EMBED for the weights, so that a score q·k / √d_head spreads over a
    few units, as a trained head's do.
    """
    tokens, _ = given_tokens(text_or_tokens)
    words = np.stack([Random((EMBED_SEED, zlib.crc32(token_key(t).encode()))).standard_normal(D_EMBED)
                      for t in tokens])  # [n, D_EMBED]
    positions = Random((EMBED_SEED, 0)).standard_normal((MAX_TOKENS, D_EMBED))[:len(tokens)]  # [n, D_EMBED]
    W_Q, W_K, W_V = Random((EMBED_SEED, 1, d_head)).standard_normal((3, D_EMBED, d_head)) / math.sqrt(D_EMBED)
    x = words + positions  # [n, D_EMBED]
    return {"tokens": tokens, "q": x @ W_Q, "k": x @ W_K, "v": x @ W_V}  # [n, D_EMBED] @ [D_EMBED, d_head]
