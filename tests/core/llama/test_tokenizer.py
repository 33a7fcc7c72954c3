"""tokenizer.py against transformers' tokenizer loaded from the same GGUF: the same ids on the 15,000 lines of
CPython's pydoc_data/topics.py and on unusual texts; the pre-tokenizer's classes against Hugging Face's own
regular expression on every assigned character of Unicode's first two planes; the texts the real model's page
shows, and each token as the real model's widget reads it; decoding; refusals."""
from __future__ import annotations

import unicodedata
from pathlib import Path

import pydoc_data.topics
import pytest

from mha_core.llama.tokenizer import byte_alphabet, pre_tokenize
from mha_page.views.real_model import token_texts
from sitebuild.widgets import widget_module

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # man ZWJ woman ZWJ girl ZWJ boy

UNUSUAL = [
    "", " ", "  leading spaces", "trailing spaces   ", "tabs\tand\u000bvertical\u000ctabs", "\r\n\r\n  \n",
    "<b>bold</b> &amp; <script>alert('x')</script> <!-- a comment -->",
    "<|im_start|>user\nhi<|im_end|><|endoftext|><|im_start|", "<|im_start|><|im_start|>x<|im_end|", "<file_sep><filename>",
    "control: \x00\x01\x04\x06\x07\x1b[31m red \x1c\x1d\x1e\x1f \x7f", "a.\x04.b x\x06\x06y ..\x1d.. \x04\x04 \x1d",
    " " * 40 + "x" + " " * 41, "\n" * 12 + "\t" * 7, "0" * 100, "1234567890" * 12, "3.14159 -2.5e-10 0x1F 1_000_000",
    "naïve café 日本語のテキスト 한국어 Ελληνικά русский عربى हिन्दी ไทย עברית", "我爱Python3 和 JavaScript。",
    f"a {FAMILY} b 👍🏽 🏳️‍🌈 🇫🇷🇩🇪 ❤️ 1️⃣ 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "e\u0301 cafe\u0301, nai\u0308ve, \u0301x, Z\u0351\u0352\u0353a\u0308\u0308\u0308lgo",
    "x\u2028y\u2029z\u00a0w\u3000v\x85u\u200bt\u2060s\ufeffr \u202f \u205f \u1680 \u2003 q",
    "I'm we'll they've He's IT'S don't 'tis O'Neil ''s' 's 'S", "’s ’ll ‘quoted’ «guillemets» „low“",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛 Ⅻ ½ ² ① 𝓈𝒸𝓇𝒾𝓅𝓉", "\ud55c\u1112\u1161\u11ab 葛\U000e0100城", "ﬁ ﬀ Å Å Ω Ω",
    "https://example.org/a/b?q=1&r=two#frag someone@example.com C:\\Users\\x",
    "def f(x):\n\treturn {'a': [1, 2], \"b\": None}  # ok\n\n\n",
    "\U0010ffff\U000f0000\ue000 private use", "mixedCASE_snake_case kebab-case CONSTANT_CASE",
    "The quick brown fox " * 500,  # 10,000 characters
    "ab" * 5000, "a" * 10000, "🙂" * 300,
]


@pytest.fixture(scope="module")
def reference(gguf_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)


@pytest.mark.transformers
def test_a_thousand_lines_of_cpython_s_documentation_tokenize_as_transformers(tokenizer, reference):
    lines = Path(pydoc_data.topics.__file__).read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 1000
    expected = reference(lines)["input_ids"]
    mismatched = [line for line, ids in zip(lines, expected) if tokenizer.encode(line) != ids]
    assert mismatched == []


@pytest.mark.transformers
@pytest.mark.parametrize("text", UNUSUAL, ids=range(len(UNUSUAL)))
def test_unusual_texts_tokenize_as_transformers(text, tokenizer, reference):
    assert tokenizer.encode(text) == reference(text)["input_ids"]


@pytest.mark.transformers
def test_the_real_model_page_s_texts_tokenize_and_decode_as_transformers(gguf_path, tokenizer, reference):
    """The tokens the page shows are mha_core's (tests/site/test_real_model.py), so transformers' too."""
    for text in widget_module("real_model").texts().values():
        ids = tokenizer.encode(text)
        assert ids == reference(text)["input_ids"]
        assert [tokenizer.decode([i]) for i in ids] == [reference.decode([i]) for i in ids]


@pytest.mark.transformers
def test_the_real_model_widget_reads_each_token_as_transformers_decodes_it_alone(tokenizer, reference):
    """The tokens the real model's widget shows (mha_page.views.real_model.token_texts)."""
    text = "Tokens read as text: a café,\n\tindented; 注意 and 🍕 (cut in bytes)."
    ids = tokenizer.encode(text)
    assert ids == reference(text)["input_ids"]
    shown = token_texts(tokenizer, ids)
    assert shown == [reference.decode([i]) for i in ids]
    assert shown[:5] == ["To", "kens", " read", " as", " text"] and "\n" in shown and " café" in shown
    assert "\ufffd" in shown  # a token holding part of a character's bytes (注, 🍕) reads as U+FFFD


def test_the_pre_tokenizer_classes_every_character_as_hugging_face_s_regex():
    """Every character Python's Unicode database assigns in planes 0 and 1 (Hugging Face's tokenizers follow a
    newer Unicode: characters assigned since are "other" here), placed so that its class shows in the split."""
    from tokenizers import Regex, pre_tokenizers

    gpt2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
    split = pre_tokenizers.Split(Regex(gpt2), behavior="isolated")
    chars = [chr(c) for c in range(0x20000) if unicodedata.category(chr(c)) not in ("Cn", "Cs")]
    for start in range(0, len(chars), 4000):
        text = "".join(f"a{c}1{c} {c}{c}.{c}'s{c}\n" for c in chars[start:start + 4000])
        assert pre_tokenize(text) == [word for word, _ in split.pre_tokenize_str(text)], start


def test_no_token_is_added_and_special_tokens_stay_whole(tokenizer, gguf):
    assert gguf.metadata["tokenizer.ggml.add_bos_token"] is False
    assert tokenizer.encode("Hello") == [19556]
    assert tokenizer.encode("<|im_start|>user") == [1, 4093]
    assert len(tokenizer.specials) == 17


def test_decoding_gives_the_text_back(tokenizer):
    for text in UNUSUAL:
        if not set(text.encode("utf-8")) & {4, 6, 19, 20, 22, 29}:  # bytes the vocabulary lacks are dropped
            assert tokenizer.decode(tokenizer.encode(text)) == text
    assert tokenizer.decode(tokenizer.encode("🙂")[:1]) == "\ufffd"  # a character cut in two
    assert tokenizer.token_bytes(216) == b" "
    assert sorted(map(ord, byte_alphabet())) == sorted(set(map(ord, byte_alphabet())))  # 256 distinct characters


def test_nonsense_is_refused_with_the_argument_named(tokenizer):
    for text, said in [(b"bytes", "text must be a str"), (None, "text must be a str"),
                       ("lone \ud800 surrogate", "text is not valid Unicode")]:
        with pytest.raises(ValueError, match=said):
            tokenizer.encode(text)
    for token_id in (-1, 49152, 1.0, True):
        with pytest.raises(ValueError, match=r"token_id must be an integer in \[0, 49152\)"):
            tokenizer.token_bytes(token_id)
    from mha_core.llama.tokenizer import tokenizer_from_gguf
    with pytest.raises(ValueError, match="gguf must be a GGUFFile"):
        tokenizer_from_gguf("model.gguf")
