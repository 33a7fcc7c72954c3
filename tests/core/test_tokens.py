"""The tokenizer: words, punctuation and whole grapheme clusters, and what makes two tokens the same."""

import pytest

from mha_core.tokens import first_tokens, token_key


def tokenize(text):
    return first_tokens(text, 64)[0]


def test_tokenize_words_and_punctuation():
    assert tokenize("Hello, world! It's 3.5") == ["Hello", ",", "world", "!", "It", "'", "s", "3", ".", "5"]
    assert tokenize("שלום עולם!!") == ["שלום", "עולם", "!", "!"]


FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"  # man ZWJ woman ZWJ girl ZWJ boy


@pytest.mark.parametrize("text, tokens", [
    (f"a {FAMILY} b", ["a", FAMILY, "b"]),  # a ZWJ sequence is one token, no invisible U+200D token
    ("\U0001f468\U0001f3fd\u200d\U0001f4bb!", ["\U0001f468\U0001f3fd\u200d\U0001f4bb", "!"]),  # skin tone inside a ZWJ sequence
    ("\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea", ["\U0001f1eb\U0001f1f7", "\U0001f1e9\U0001f1ea"]),  # two flags, paired in order
    ("\U0001f1eb\U0001f1f7\U0001f1e9", ["\U0001f1eb\U0001f1f7", "\U0001f1e9"]),  # an odd one out stays alone
    ("\U0001f44d\U0001f3fd ok", ["\U0001f44d\U0001f3fd", "ok"]),  # a skin-tone modifier
    ("\u2764\ufe0f 1\ufe0f\u20e3", ["\u2764\ufe0f", "1\ufe0f\u20e3"]),  # variation selector, keycap
    ("\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f.",  # a flag spelled with tags
     ["\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f", "."]),
    ("e\u0301 cafe\u0301, nai\u0308ve", ["e\u0301", "cafe\u0301", ",", "nai\u0308ve"]),  # combining marks
    ("नमस्ते दुनिया", ["नमस्ते", "दुनिया"]),  # vowel signs and virama (spacing and non-spacing marks)
    ("\u0301x", ["\u0301", "x"]),  # a mark with no base before it stands alone
    ("我爱北京。今天很好", ["我", "爱", "北", "京", "。", "今", "天", "很", "好"]),  # Chinese: one ideograph each
    ("東京に行きました、カメラ", ["東", "京", "に", "行", "き", "ま", "し", "た", "、", "カ", "メ", "ラ"]),  # kana too
    ("我爱Python3", ["我", "爱", "Python3"]),
    ("葛\U000e0100城", ["葛\U000e0100", "城"]),  # an ideographic variation sequence stays whole
    ("안녕하세요, 세계", ["안녕하세요", ",", "세계"]),  # Hangul syllables: spaced words, whole
    ("\u1112\u1161\u11ab\u1100\u116e\u11a8 \ud55c", ["\u1112\u1161\u11ab\u1100\u116e\u11a8", "\ud55c"]),  # conjoining jamo
    ("the U.S.A. and e.g. this", ["the", "U.S.A.", "and", "e.g.", "this"]),  # abbreviations
    ("(U.S.A) U.S.Army", ["(", "U.S.A", ")", "U.S.", "Army"]),
    ("3.5 x.y B.Then", ["3", ".", "5", "x.y", "B", ".", "Then"]),  # numbers and words around a period are not
])
def test_tokens_are_whole_grapheme_clusters(text, tokens):
    assert tokenize(text) == tokens
    assert "".join(tokens) == "".join(text.split())  # nothing lost, nothing invented


def test_the_first_tokens_and_how_many_there_are():
    assert first_tokens("a b, c d", 3) == (["a", "b", ","], 5)
    assert first_tokens("我爱北京。" * 20, 64)[1] == 100
    assert first_tokens("", 5) == ([], 0)


def test_tokens_are_the_same_whatever_their_case():
    assert token_key("The") == token_key("the") == token_key("THE")
    assert token_key("Straße") == token_key("STRASSE")
