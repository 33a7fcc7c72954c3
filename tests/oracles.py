"""The constructed heads' rules, written from the issue's words and not from mha_core's code.

Tokens compare case-insensitively; a delimiter is a punctuation token (every character in a Unicode
punctuation category: "$" and emoji are symbols, not punctuation). For each head, rule_rows gives
{query: the keys that must hold ≥ 0.9 of its attention in total} for the rows its rule speaks of.
"""
from __future__ import annotations

import unicodedata


def is_delimiter(token: str) -> bool:
    return all(unicodedata.category(c).startswith("P") for c in token)


def _previous_token(low: list[str], tokens: list[str], i: int) -> set[int] | None:
    return {i - 1} if i > 0 else None  # the first token has no token before it


def _positional(low: list[str], tokens: list[str], i: int) -> set[int] | None:
    return {max([j for j in range(i + 1) if is_delimiter(tokens[j])], default=0)}


def _content(low: list[str], tokens: list[str], i: int) -> set[int] | None:
    return {j for j in range(i) if low[j] == low[i]} or None


def _induction(low: list[str], tokens: list[str], i: int) -> set[int] | None:
    earlier = [j for j in range(i) if low[j] == low[i]]
    if not any(j < i - 1 for j in earlier):  # not seen before, or only immediately before
        return None
    return {j + 1 for j in earlier}


RULES = {"previous_token": _previous_token, "positional": _positional,
         "content": _content, "induction": _induction}


def rule_rows(kind: str, tokens: list[str]) -> dict[int, set[int]]:
    """{query: keys holding ≥ 0.9 of its attention} for every row the rule of head `kind` speaks of."""
    low = [t.lower() for t in tokens]
    rows = {i: RULES[kind](low, tokens, i) for i in range(len(tokens))}
    return {i: keys for i, keys in rows.items() if keys is not None}
