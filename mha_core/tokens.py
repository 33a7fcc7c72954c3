"""Text into tokens, the one tokenizer of every widget: the heads widget's sentences and the training widget's
reader text.

A token is a word (letters, digits and their marks), an abbreviation of single letters ("U.S.A."),
one CJK ideograph or kana (scripts written without spaces), or any other grapheme cluster alone: a
punctuation mark, an emoji with its modifiers and joins, a flag. One regular expression finds the
pieces; _joins then glues a piece to the token right before it where Unicode's grapheme-cluster rules
(UAX #29) keep them together. Standard library only: the code runs in Pyodide too.
"""

from __future__ import annotations

import functools
import re
import unicodedata

MAX_TEXT_CHARS = 100_000  # the longest text a function that tokenizes accepts: it bounds the work a text causes

IDEOGRAPH_RANGES = (("\u3005", "\u3007"), ("\u3021", "\u3029"), ("\u3031", "\u3035"), ("\u3040", "\u30ff"),
                    ("\u31f0", "\u31ff"), ("\u3400", "\u4dbf"), ("\u4e00", "\u9fff"), ("\uf900", "\ufaff"),
                    ("\uff66", "\uff9d"), ("\U00020000", "\U000323af"))  # CJK ideographs, kana
IDEOGRAPHS = "".join(f"{first}-{last}" for first, last in IDEOGRAPH_RANGES)  # as a character class has them


@functools.cache
def _pieces() -> re.Pattern:
    """The tokens and the spaces between them. Compiled at the first use rather than at import: Python's
    compiler walks a class that spans the CJK blocks code point by code point (about 75 ms in Pyodide)."""
    letter = rf"[^\W\d_{IDEOGRAPHS}]"
    return re.compile(
        rf"(?<!\w){letter}(?:\.{letter}(?!\w))+\.?"  # an abbreviation: U.S.A. / e.g. / U.S.A
        rf"|[{IDEOGRAPHS}]"  # one ideograph or kana
        rf"|[^\W{IDEOGRAPHS}]+"  # a word: \w characters that are not ideographs
        r"|[^\w\s]"  # any other character, alone (marks and joiners are glued on by _joins)
        r"|\s+")  # the spaces between tokens


ZWJ = "\u200d"


def _is_regional_indicator(ch: str) -> bool:  # two of them make a flag
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _extends(ch: str) -> bool:
    """Continues the cluster before it: a combining mark, ZWJ, a variation selector, a skin-tone modifier, a tag."""
    return (unicodedata.category(ch)[0] == "M" or ch == ZWJ or "\ufe00" <= ch <= "\ufe0f"
            or "\U000e0100" <= ch <= "\U000e01ef" or "\U0001f3fb" <= ch <= "\U0001f3ff" or "\U000e0020" <= ch <= "\U000e007f")


def _is_pictographic(ch: str) -> bool:
    """Extended_Pictographic, near enough: emoji and other symbols, what a ZWJ joins."""
    return (unicodedata.category(ch) == "So" and not _is_regional_indicator(ch)) or ch in "\u00a9\u00ae\u203c\u2049"


def _is_ideograph(ch: str) -> bool:
    return any(first <= ch <= last for first, last in IDEOGRAPH_RANGES)


def _is_word(token: str) -> bool:
    return (token[0].isalnum() or token[0] == "_") and not _is_ideograph(token[0])


def _joins(token: str, piece: str) -> bool:
    """Whether piece, found right after token, belongs to it. Hangul needs no rule of its own: its
    syllables and conjoining jamo are all word characters, so a Korean word is never cut."""
    if _extends(piece[0]):  # GB9: marks and the like stay with their base (é, 👍🏽, ❤️, 1️⃣)
        return True
    if token[-1] == ZWJ:  # GB11: pictograph ZWJ × pictograph (👨‍👩‍👧‍👦)
        return _is_pictographic(piece[0]) and _is_pictographic(token[0])
    if _is_regional_indicator(piece[0]):  # GB12/13: regional indicators pair up into a flag (🇫🇷)
        return len(token) == 1 and _is_regional_indicator(token)
    return _is_word(piece) and _is_word(token) and _extends(token[-1])  # a word goes on after a mark


def first_tokens(text: str, limit: int) -> tuple[list[str], int]:
    """(the text's first limit tokens, how many tokens the whole text has); linear in len(text)."""
    if text.isascii():  # every character is a cluster of its own: nothing to glue
        tokens = [piece for piece in _pieces().findall(text) if not piece[0].isspace()]
        return tokens[:limit], len(tokens)
    glue = {ch for ch in set(text) if _extends(ch) or _is_regional_indicator(ch)}  # what _joins looks at
    tokens, token = [], ""
    for piece in _pieces().findall(text):
        if token and (piece[0] in glue or token[-1] in glue) and _joins(token, piece):
            token += piece
            continue
        if token:
            tokens.append(token)
        token = "" if piece[0].isspace() else piece
    if token:
        tokens.append(token)
    return tokens[:limit], len(tokens)


def token_key(token: str) -> str:
    """What makes two tokens the same token: their text, case-insensitive ("The" and "the")."""
    return token.casefold()
