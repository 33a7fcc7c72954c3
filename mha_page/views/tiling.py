"""The tiling widget's view: one head's attention on a sentence computed tile by tile (mha_core.flash), every tile's
numbers as the reader reads them (the form mha_page.views describes).

tiling_view(...) -> {"data", "outputs", "steps"}: "outputs" holds what every step shares (the counts, the grid of
tiles) and the first step's slots; "steps" holds each step's slots, one per tile computed, in order, so that the
step slider shows any of them without Python (the binding writes them into the same elements).
"""

from __future__ import annotations

import math

import numpy as np

from mha_core.attention import scaled_dot_product_attention
from mha_core.fields import Choice, Flag, TextOrTokens, Whole, arguments
from mha_core.flash import D_HEADS, flash_attention_steps, flash_counts, sentence_head
from mha_core.heads import MAX_TOKENS, given_tokens
from mha_core.tokens import MAX_TEXT_CHARS
from . import clip, decimal, plural

MAX_TILES = 64  # the steps one view carries: 8 × 8 tiles, a block of 8 for 64 tokens
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
STATES = ("todo", "done", "current", "skipped")  # a tile in the grid, at a step
BLOCK = 4  # the block shown first


def smallest_block(n: int) -> int:
    """The smallest block that keeps n tokens' tiles within MAX_TILES."""
    return math.ceil(n / math.isqrt(MAX_TILES))


def _blocks_fit(args: dict) -> None:
    n, block = len(given_tokens(args["text_or_tokens"])[0]), args.get("block", BLOCK)
    if block < smallest_block(n):
        raise ValueError(f"block must be at least {smallest_block(n)} for {n} tokens (at most {MAX_TILES} tiles), "
                         f"got {block}.")


def scientific(x: float) -> str:
    """2.2e-16 -> '2.2 × 10⁻¹⁶'; 0 -> '0'."""
    if x == 0:
        return "0"
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(SUPERSCRIPT)}"


def number(x: float) -> str:
    """A running number as its cell reads it: 2 decimals, −∞ before any key."""
    return "−∞" if x == -np.inf else decimal(x)


def vector(row) -> str:
    """An output row: its numbers, 2 decimals each."""
    return " ".join(decimal(x) for x in row)


def span(what: tuple[str, str], start: int, stop: int) -> str:
    """Positions start..stop − 1 as the reader counts them, from 1, named by what (singular, plural):
    'queries 5–8', or 'query 5'."""
    return f"{what[1]} {start + 1}–{stop}" if stop - start > 1 else f"{what[0]} {start + 1}"


QUERIES, KEYS = ("query", "queries"), ("key", "keys")


def token_label(tokens: list[str], i: int) -> str:
    return f"{i + 1} “{clip(tokens[i])}”"


def grid_states(steps: list[dict], current: int) -> list[int]:
    """Each tile's STATES index at step current (an index of the computed tiles)."""
    states, computed = [], 0
    for step in steps:
        if step["skipped"]:
            states.append(3)
        else:
            states.append(1 if computed < current else 2 if computed == current else 0)
            computed += 1
    return states


def query_rows(step: dict, tokens: list[str]) -> dict:
    """The tile's queries: each one's m, ℓ and O before and after, the rescaling and the output so far."""
    (m, m_new), (l, l_new), (o, o_new) = step["m"], step["l"], step["o"]
    rows = []
    for r, i in enumerate(range(*step["rows"])):
        moved = bool(m_new[r] > m[r])
        rescale = ("0: its first keys" if m[r] == -np.inf else decimal(step["rescale"][r], 3) if moved
                   else "1: unchanged")
        rows.append({"data": {"moved": "true" if moved else "false"}, "outputs": {
            "token": token_label(tokens, i), "m-before": number(m[r]), "m-after": number(m_new[r]),
            "rescale": {"text": rescale, "value": f"{step['rescale'][r]:.6g}"},
            "l-before": decimal(l[r], 3), "l-after": decimal(l_new[r], 3),
            "o-before": vector(o[r]), "o-after": vector(o_new[r]), "out": vector(o_new[r] / l_new[r])}})
    return {"rows": rows}


def score_rows(step: dict, tokens: list[str]) -> dict:
    """The tile of scores, a row per query: each key's score (÷ √d_head), masked after the query; the row's
    largest marked."""
    rows = []
    for r, i in enumerate(range(*step["rows"])):
        scores = step["scores"][r]
        top = int(np.argmax(scores))
        rows.append({"outputs": {"query": token_label(tokens, i)}, "rows": [
            {"text": "masked", "data": {"kind": "masked"}} if s == -np.inf
            else {"text": decimal(s), "data": {"kind": "max" if c == top else "score"}}
            for c, s in enumerate(scores)]})
    return {"rows": rows}


def said(computed: list[dict], s: int) -> str:
    """What step s does, in words: the blocks that meet, what happens to m, ℓ and O, whether the output is done."""
    step = computed[s]
    rows, cols = step["rows"], step["cols"]
    one = rows[1] - rows[0] == 1
    moved = int(np.sum(step["m"][1] > step["m"][0]))
    if np.all(step["m"][0] == -np.inf):
        did = f"The first keys {'this query sees' if one else 'these queries see'}: ℓ and O start from this tile."
    elif moved:
        rose = "Its maximum rose" if one else f"The maximum rose for {moved} of {rows[1] - rows[0]} queries"
        did = (f"{rose}: ℓ and O so far are multiplied by exp(m − m′) where it rose, before this tile's terms "
               "are added.")
    else:
        did = "No maximum rose: nothing is rescaled."
    if s == len(computed) - 1 or computed[s + 1]["rows"] != rows:
        seen = "This query has seen all its" if one else "These queries have seen all their"
        did += f" {seen} keys: O′ / ℓ′ is the output."
    return f"Tile {s + 1} of {len(computed)}: {span(QUERIES, *rows)} with {span(KEYS, *cols)}. {did}"


def step_slots(r: dict, computed: list[dict], s: int, tokens: list[str], error: float) -> dict:
    """Step s's slots (computed: the tiles computed, in order): what it does, the grid's states, the tile of
    scores, the queries' running numbers, and at the last step the error."""
    step = computed[s]
    grid_label = (f"Tiles: {len(r['grid_rows'])} query blocks by {len(r['grid_cols'])} key blocks; "
                  f"query block {step['query_block'] + 1} with key block {step['key_block'] + 1} now"
                  + (f"; {plural(r['skipped'], 'tile')} skipped by the causal mask" if r["skipped"] else ""))
    error_text = f"Largest |difference| from the ordinary computation, over every output number: {scientific(error)}."
    return {
        "step-text": said(computed, s),
        "grid": {"label": grid_label, "cells": {"data": {"state": {
            "index": grid_states(r["steps"], s), "values": list(STATES)}}}},
        "score-keys": {"rows": [token_label(tokens, c) for c in range(*step["cols"])]},
        "scores": score_rows(step, tokens),
        "queries": query_rows(step, tokens),
        "max-error": ({"value": f"{error:.3e}", "hidden": False, "text": error_text} if s == len(computed) - 1
                      else {"value": "", "hidden": True, "text": ""}),
    }


def count(x: int) -> dict:
    """A count as its slot: the number (data-value) and its text, 1,234."""
    return {"value": str(x), "text": f"{x:,}"}


def count_slots(c: dict, n: int, block: int) -> dict:
    """What the two computations hold and move, as flash_counts counts them."""
    side = min(block, n)
    return {
        "held": count(c["held"]), "held-shape": f"one tile, {side} × {side}",
        "full": count(c["full"]), "full-shape": f"{n} × {n}, and as many weights",
        "tiles": count(c["tiles"]), "tiles-skipped": count(c["skipped"]), "tiles-note": f"of {c['tiles'] + c['skipped']:,}",
        "block-text": f"tiles of {side} queries × {side} keys",
        **{f"{io}-{way}": count(c[way][io]) for way in ("ordinary", "tiled") for io in ("reads", "writes")},
    }


def grid_slot(r: dict) -> dict:
    """The grid of tiles: a row per query block, a cell per tile, named by its positions, as the first step has it
    (the template renders the rows; each step's slots then set the cells' states)."""
    states = iter(grid_states(r["steps"], 0))
    return {"vars": {"--cols": str(len(r["grid_cols"]))}, "rows": [
        {"rows": [{"title": f"{span(QUERIES, *rows)}, {span(KEYS, *cols)}", "data": {"state": STATES[next(states)]}}
                  for cols in r["grid_cols"]]} for rows in r["grid_rows"]]}


@arguments(_blocks_fit, text_or_tokens=TextOrTokens(MAX_TEXT_CHARS), d_head=Choice(D_HEADS), block=Whole(1, MAX_TOKENS),
           causal=Flag())
def tiling_view(text_or_tokens, d_head: int = 4, block: int = BLOCK, causal: bool = True) -> dict:
    """The widget's view: one head on the sentence (its first MAX_TOKENS tokens), blocks of block queries and keys."""
    head = sentence_head.fn(text_or_tokens, d_head)
    tokens, q, k, v = head["tokens"], head["q"], head["k"], head["v"]
    n = len(tokens)
    r = flash_attention_steps.fn(q, k, v, block, block, causal)
    r["grid_rows"] = sorted({step["rows"] for step in r["steps"]})
    r["grid_cols"] = sorted({step["cols"] for step in r["steps"]})
    c = flash_counts.fn(n, n, d_head, d_head, block, block, causal)
    r["skipped"] = c["skipped"]
    ordinary, _ = scaled_dot_product_attention.fn(q, k, v, causal=causal)
    error = float(np.abs(r["out"] - ordinary).max())
    computed = [step for step in r["steps"] if not step["skipped"]]
    steps = [step_slots(r, computed, s, tokens, error) for s in range(len(computed))]
    first = steps[0]
    outputs = count_slots(c, n, block) | first | {"grid": grid_slot(r) | first["grid"]}
    return {"data": {"n": n, "block": block, "causal": "true" if causal else "false", "d-head": d_head,
                     "steps": len(steps), "min-block": smallest_block(n)},
            "outputs": outputs, "steps": steps}
