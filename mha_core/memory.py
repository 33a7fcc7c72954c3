"""The split and the merge drawn in memory, for the mechanism page's memory widget.

A small unbatched layer (B = 1 left out): n tokens of d_model = 8, h heads. Each step's array is the
real one NumPy makes, and its strides, its buffer and whether it is a view are NumPy's own answers.
Where each number sits is followed with a label array pushed through the same operations: a label
says which token, head and feature of q a number belongs to.

The queries and keys are constructed so that head 1 attends to the previous token, head 2 to the token
itself, heads 3 and 4 two and three tokens back; the "wrong split" (a reshape straight to [h, n, d_k],
a classic bug) shows what the same numbers do when each "head" receives pieces of several tokens.
"""

from __future__ import annotations

import math

import numpy as np

from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .fields import Choice, Flag, Whole, arguments

D_MODEL = 8
HEAD_CHOICES = (1, 2, 4)
MAX_TOKENS = 4
OFFSETS = (1, 0, 2, 3)  # head i attends OFFSETS[i] tokens back
ANGLE = math.pi / 3  # positions as angles: cos(ANGLE·Δ) is largest at Δ = 0 for |Δ| < 6
MARGIN = 8.0  # scaled score of the matching key; a neighbour scores at most half of it


def constructed_qkv(n: int, h: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, k, v [n, d_model]: in head i's columns, query t points at position t - OFFSETS[i] and key j
    at position j (the first two features, as angles); v is head i's token number, t + 1."""
    d_k = D_MODEL // h
    q, k, v = (np.zeros((n, D_MODEL)) for _ in range(3))
    t = np.arange(n)
    for i in range(h):
        cols = slice(i * d_k, i * d_k + 2)
        scale = MARGIN * math.sqrt(d_k)  # after the division by √d_k the match scores MARGIN
        q[:, cols] = scale * np.stack([np.cos(ANGLE * (t - OFFSETS[i])), np.sin(ANGLE * (t - OFFSETS[i]))], 1)
        k[:, cols] = np.stack([np.cos(ANGLE * t), np.sin(ANGLE * t)], 1)
        v[:, i * d_k:(i + 1) * d_k] = (t + 1)[:, None]
    return q, k, v


def _cells(labels: np.ndarray, d_k: int) -> list[dict]:
    """Labels (t·d_model + column of q) as {token, head, feature}, in the order given."""
    return [{"token": int(c) // D_MODEL, "head": int(c) % D_MODEL // d_k, "feature": int(c) % d_k}
            for c in labels]


def _in_memory(a: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """a's labels in the order a's elements lie in its buffer (a starts at its buffer's start)."""
    offsets = sum(np.indices(a.shape)[axis] * (step // a.itemsize) for axis, step in enumerate(a.strides))
    out = np.empty(a.size)
    out[offsets.ravel()] = labels.ravel()
    return out


def _step(name, code, a, labels, source, buffers, d_k) -> dict:
    """One step: the array's shape and NumPy's strides, the buffer it lives in, and its cells twice:
    as they lie in memory and as its indices read them."""
    assert a.shape == labels.shape and all(  # the labels move as the numbers do (a length-1 axis has no step)
        sa == sl for sa, sl, size in zip(a.strides, labels.strides, a.shape) if size > 1)
    buffer = next(owner for owner, array in buffers.items() if np.shares_memory(a, array))
    view = source is not None and bool(np.shares_memory(a, source))
    return {
        "name": name, "code": code, "shape": list(a.shape), "buffer": buffer, "view": view,
        "strides_bytes": list(a.strides), "strides_elements": [s // a.itemsize for s in a.strides],
        "contiguous": bool(a.flags.c_contiguous),
        "memory": _cells(_in_memory(a, labels), d_k), "read": _cells(labels.ravel(), d_k),
    }


def _right_split(q, labels, z, h: int) -> tuple[list, dict]:
    """(steps, buffers) of split_heads, attention and merge_heads, q's labels carried along."""
    n, d_k = q.shape[0], D_MODEL // h
    split = q.reshape(n, h, d_k)  # [n, d_model] -> [n, h, d_k]
    heads = np.swapaxes(split, 0, 1)  # [n, h, d_k] -> [h, n, d_k]: split_heads(q)
    head_labels = np.swapaxes(labels.reshape(n, h, d_k), 0, 1)
    z_labels = np.ascontiguousarray(head_labels)  # z [h, n, d_k]: a new array, head by head
    back = np.swapaxes(z, 0, 1)  # [h, n, d_k] -> [n, h, d_k]
    merged = merge_heads(z)  # [h, n, d_k] -> [n, d_model]: a copy unless h or n is 1
    steps = [
        ("q", "q = x @ W_Q", q, labels, None),
        ("reshape", "q.reshape(n, h, d_k)", split, labels.reshape(n, h, d_k), q),
        ("transpose", "np.swapaxes(…, 0, 1)", heads, head_labels, split),
        ("z", "z = weights @ v_heads", z, z_labels, None),
        ("transpose back", "np.swapaxes(z, 0, 1)", back, np.swapaxes(z_labels, 0, 1), z),
        ("merge", "….reshape(n, d_model)", merged, np.swapaxes(z_labels, 0, 1).reshape(n, D_MODEL), back),
    ]
    return steps, {"q": q, "z": z, "merged": merged}


def _wrong_split(q, labels, z, h: int) -> tuple[list, dict]:
    """(steps, buffers) of the bug: a reshape straight to [h, n, d_k], attention, a reshape back."""
    n, d_k = q.shape[0], D_MODEL // h
    split = q.reshape(h, n, d_k)  # [n, d_model] -> [h, n, d_k]: each "head" a run of n·d_k numbers
    z_labels = labels.reshape(h, n, d_k).copy()  # row r of wrong head i holds what its query was made of
    merged = z.reshape(n, D_MODEL)  # [h, n, d_k] -> [n, d_model], a view
    steps = [
        ("q", "q = x @ W_Q", q, labels, None),
        ("wrong reshape", "q.reshape(h, n, d_k)", split, labels.reshape(h, n, d_k), q),
        ("z", "z = weights @ v_heads", z, z_labels, None),
        ("reshape", "z.reshape(n, d_model)", merged, z_labels.reshape(n, D_MODEL), z),
    ]
    return steps, {"q": q, "z": z}


def _moves(drawn: list[dict]) -> None:
    """Add to the merge's copy where it takes each number from and how many move (0 and None elsewhere)."""
    for before, step in zip([None, *drawn], drawn):
        copied = before is not None and not step["view"] and step["name"] == "merge"
        where = {(c["token"], c["head"], c["feature"]): i for i, c in enumerate(before["memory"])} if copied else {}
        step["from"] = [where[c["token"], c["head"], c["feature"]] for c in step["memory"]] if copied else None
        step["moved"] = sum(i != j for i, j in enumerate(step["from"])) if copied else 0


@arguments(n_tokens=Whole(1, MAX_TOKENS), n_heads=Choice(HEAD_CHOICES, "d_model = 8"), wrong=Flag())
def memory_steps(n_tokens: int = 3, n_heads: int = 2, wrong: bool = False) -> dict:
    """Every step from q [n, d_model] to the merged [n, d_model], as NumPy stores it, and the patterns.

    Right: reshape [n, h, d_k] -> transpose [h, n, d_k] (split_heads) -> attention -> z -> transpose
    back [n, h, d_k] -> reshape [n, d_model] (merge_heads). Wrong: reshape [h, n, d_k] -> attention ->
    z -> reshape [n, d_model]. Returns {n, h, d_k, d_model, itemsize, wrong, steps, merge_copies,
    patterns: {right, wrong} ([h, n, n] weights, causal)}. What the widget shows of it: mha_page.views.memory.
    """
    n, h, d_k = n_tokens, n_heads, D_MODEL // n_heads
    q, k, v = constructed_qkv(n, h)  # [n, d_model] each
    labels = np.arange(n * D_MODEL, dtype=q.dtype).reshape(n, D_MODEL)  # t·d_model + column, like q

    def attend(split):
        return scaled_dot_product_attention(split(q), split(k), split(v), causal=True)

    right_z, right_weights = attend(lambda a: split_heads(a, h))  # [h, n, d_k], [h, n, n]
    wrong_z, wrong_weights = attend(lambda a: a.reshape(h, n, d_k))  # the bug: no transpose
    steps, buffers = (_wrong_split(q, labels, wrong_z, h) if wrong else _right_split(q, labels, right_z, h))
    drawn = [_step(*step, buffers, d_k) for step in steps]
    _moves(drawn)
    patterns = {"right": right_weights, "wrong": wrong_weights}
    return {
        "n": n, "h": h, "d_k": d_k, "d_model": D_MODEL, "itemsize": q.itemsize, "wrong": wrong, "steps": drawn,
        "merge_copies": not np.shares_memory(merge_heads(right_z), right_z),
        "patterns": patterns,
    }
