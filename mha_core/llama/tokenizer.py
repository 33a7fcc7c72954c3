"""The model's byte-level BPE tokenizer (GPT-2's kind), read from its GGUF's vocabulary and merges.

Text -> ids in four steps, as Hugging Face's tokenizer built from the same GGUF does it:
    1. the special tokens written in the text (<|endoftext|>, <|im_start|>, ...) are cut out whole
       (leftmost, then longest); the text between them goes on;
    2. it is split into words by GPT-2's pattern (below), so that no merge crosses a word's edge;
    3. each word's UTF-8 bytes are spelled one character per byte (GPT-2's printable alphabet: a space is "Ġ");
    4. within a word, the adjacent pair whose merge comes first in the file's list is merged, again and
       again; the pieces left are the tokens (a byte the vocabulary lacks is dropped first).
No token is added at the start (tokenizer.ggml.add_bos_token is false).

GPT-2's pattern is  's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+  in the
Oniguruma regular expressions of Hugging Face's tokenizers. Python's re has no \\p{L} and its \\s is wider
(it takes U+001C..U+001F), so each character is first replaced by one ASCII character of its class (a letter
by "a", a number by "0", a space by "\\t", anything else by "!", ASCII as it is: the contractions and the
optional space are spelled with ASCII) and the pattern runs, ASCII only, on that string of the same length.
The classes come from Python's unicodedata (Unicode 14.0 in CPython 3.11, 15.0 in Pyodide's 3.12): a character
assigned since, which Hugging Face's newer tables may call a letter or a number, counts as "other" here.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ..fields import Text, arguments
from .gguf import GGUFFile
from .model import TokenIds

CONTROL, USER_DEFINED = 3, 4  # tokenizer.ggml.token_type of the tokens matched whole in a text

# GPT-2's pattern over the class string: letters, numbers, spaces and the rest as ASCII stands for them.
WORD = re.compile(r"'s|'t|'re|'ve|'m|'ll|'d| ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+", re.ASCII)
# Oniguruma's Unicode \s: U+0009..U+000D, U+0085 and the separators (Zs, Zl, Zp).
SPACE_CONTROLS = frozenset("\t\n\x0b\x0c\r\x85")


@functools.cache
def byte_alphabet() -> tuple[str, ...]:
    """GPT-2's bytes_to_unicode: byte b -> one printable character (printable Latin-1 bytes stand for
    themselves, the others are moved to U+0100 and up, in order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = iter(range(256, 512))
    return tuple(chr(b) if b in printable else chr(next(moved)) for b in range(256))


def _char_class(char: str) -> str:
    """The ASCII stand-in of a non-ASCII character: "a" letter, "0" number, "\\t" space, "!" anything else."""
    category = unicodedata.category(char)
    if category[0] == "L":
        return "a"
    if category[0] == "N":
        return "0"
    if char in SPACE_CONTROLS or category in ("Zs", "Zl", "Zp"):
        return "\t"
    return "!"


MAX_CHARS = 10**7  # a text longer than this is refused rather than tokenized (10 MB of it)


@arguments(text=Text(MAX_CHARS, blank=True))
def pre_tokenize(text: str) -> list[str]:
    """text -> its words by GPT-2's pattern, which join back to text (["Hello", " world", "!"])."""
    table = {ord(c): _char_class(c) for c in set(text) if c > "\x7f"}
    classes = text.translate(table)  # one ASCII character per character of text
    return [text[m.start():m.end()] for m in WORD.finditer(classes)]


class Tokenizer:
    """A byte-level BPE tokenizer: tokens[id] spelled in byte_alphabet(), merges ranked by their order."""

    def __init__(self, tokens: list[str], merges: list[str], specials: list[str]):
        self.tokens = tokens
        self.ids = {token: i for i, token in enumerate(tokens)}
        self.ranks = {tuple(merge.split(" ")): rank for rank, merge in enumerate(merges)}
        self.specials = {token: self.ids[token] for token in specials}
        longest_first = sorted(specials, key=len, reverse=True)
        self.special_pattern = re.compile("|".join(map(re.escape, longest_first))) if specials else None
        self.byte_of = {char: b for b, char in enumerate(byte_alphabet())}
        self._bpe = functools.lru_cache(maxsize=65536)(self._merge)

    def encode(self, text: str) -> list[int]:
        """text -> token ids, nothing added at the start."""
        if not isinstance(text, str):
            raise ValueError(f"text must be a str, got {type(text).__name__}")
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise ValueError(f"text is not valid Unicode: {error.reason} at index {error.start}") from None
        ids = []
        for piece, special in self._split_specials(text):
            if special:
                ids.append(self.specials[piece])
            else:
                for word in pre_tokenize(piece):
                    ids.extend(self._bpe(word))
        return ids

    def _split_specials(self, text: str):
        """Yield (piece, is_special): text cut at the special tokens written in it."""
        start = 0
        for match in self.special_pattern.finditer(text) if self.special_pattern else ():
            if match.start() > start:
                yield text[start:match.start()], False
            yield match.group(), True
            start = match.end()
        if start < len(text):
            yield text[start:], False

    def _merge(self, word: str) -> tuple[int, ...]:
        """One word -> its token ids: its bytes as symbols, the best-ranked adjacent pair merged until none is left."""
        alphabet = byte_alphabet()
        # A byte the vocabulary lacks (21 of them here, control characters among them) is dropped, as Hugging
        # Face's BPE drops it when there is no unknown token; its neighbours then meet and may merge.
        symbols = [alphabet[b] for b in word.encode("utf-8") if alphabet[b] in self.ids]
        while len(symbols) > 1:
            ranked = [(self.ranks.get(pair, len(self.ranks)), i) for i, pair in enumerate(zip(symbols, symbols[1:]))]
            rank, at = min(ranked)
            if rank == len(self.ranks):
                break
            best = (symbols[at], symbols[at + 1])
            merged, i = [], 0
            while i < len(symbols):  # every occurrence of the best pair, left to right
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        return tuple(self.ids[symbol] for symbol in symbols)

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes token_id stands for (a special token: its own spelling in UTF-8)."""
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < len(self.tokens):
            raise ValueError(f"token_id must be an integer in [0, {len(self.tokens)}), got {token_id!r}")
        token = self.tokens[token_id]
        if token in self.specials:
            return token.encode("utf-8")
        return bytes(self.byte_of[char] for char in token)

    @arguments(ids=TokenIds(empty=True))
    def decode(self, ids) -> str:
        """token ids -> text (a byte sequence cut inside a character reads as U+FFFD)."""
        return b"".join(self.token_bytes(int(i)) for i in ids).decode("utf-8", "replace")


def tokenizer_from_gguf(gguf) -> Tokenizer:
    """The tokenizer of a GGUF whose tokenizer.ggml.model is "gpt2" (byte-level BPE)."""
    if not isinstance(gguf, GGUFFile):
        raise ValueError(f"gguf must be a GGUFFile (read_gguf's result), got {type(gguf).__name__}")
    meta = gguf.metadata
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise ValueError(f"gguf's tokenizer is {meta.get('tokenizer.ggml.model')!r}, not byte-level BPE ('gpt2')")
    alphabet = set(byte_alphabet())
    stored = meta["tokenizer.ggml.tokens"]
    # A token spelled outside the byte alphabet is respelled from its UTF-8 bytes, as Hugging Face does; a control
    # token so spelled is a mislabel it does not match whole.
    tokens = [t if set(t) <= alphabet else "".join(byte_alphabet()[b] for b in t.encode("utf-8")) for t in stored]
    specials = [t for t, kind in zip(stored, meta["tokenizer.ggml.token_type"])
                if (kind == CONTROL and set(t) <= alphabet) or kind == USER_DEFINED]
    return Tokenizer(tokens, meta["tokenizer.ggml.merges"], specials)
