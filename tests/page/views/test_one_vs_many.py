"""The one-head-against-several view: each number it shows is mha_core.one_vs_many's, formatted once; the verb's
form follows the number's sign; the browser gets the view through the bridge."""

import json

import pytest

from mha_page import bridge
from mha_core.one_vs_many import RELATIONSHIPS, TOKENS, one_vs_many
from mha_page.views import css_number, fraction, plural
from mha_page.views.one_vs_many import one_vs_many_view, verb_form


def test_fractions_are_formatted_once_with_a_minus_sign_and_never_minus_zero():
    assert fraction(1 / 3) == {"value": "0.3333", "text": "0.33"}
    assert fraction(-1 / 24, signed=True) == {"value": "-0.0417", "text": "−0.04"}
    assert fraction(1.0, signed=True) == {"value": "1.0000", "text": "+1.00"}
    assert fraction(-1e-12) == {"value": "0.0000", "text": "0.00"}
    assert (plural(1, "head"), plural(2, "head"), plural(1000, "head")) == ("1 head", "2 heads", "1,000 heads")
    assert (css_number(9.357622968838429e-14), css_number(1 / 3), css_number(1)) == ("0.000000", "0.333333", "1.000000")


@pytest.mark.parametrize("weights", [(1, 1, 1), (1, 0, 0), (0, 0, 3), (50, 25, 25), (1, 0, 1)])
@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("heads,alone", [(3, "subject"), (2, "subject"), (2, "clause"), (2, "previous"), (1, "clause")])
def test_each_number_shown_is_mha_core_s(weights, wide, heads, alone):
    args = {"wide": wide, "heads": heads, "alone": alone}
    r, view = one_vs_many(*weights, **args), one_vs_many_view(*weights, **args)
    out = view["outputs"]
    for i, rel in enumerate(RELATIONSHIPS):
        assert float(out[f"share-{rel}"]["value"]) == pytest.approx(r["shares"][i], abs=5e-5)
        for name in ("one", "many"):
            assert float(out[f"{name}-{rel}"]["value"]) == pytest.approx(r[name]["arrives"][i], abs=5e-5)
            for b in range(3):
                assert float(out[f"{name}-{b}-{rel}"]["vars"]["--v"]) == pytest.approx(min(max(r[name]["blocks"][b][i], 0), 1), abs=5e-7)
    for name in ("one", "many"):
        looks = out[f"{name}-looks"]["rows"]
        assert len(looks) == r[name]["n_heads"]
        assert [[float(cell["vars"]["--w"]) for cell in row["rows"]] for row in looks] == pytest.approx(r[name]["weights"], abs=5e-7)
        assert all(row["label"].startswith(f"Head {h + 1} attends") for h, row in enumerate(looks))
        assert float(out[f"{name}-number"]["value"]) == pytest.approx(r[name]["number"], abs=5e-5)
        assert out[f"{name}-verb"]["text"] == verb_form(r[name]["number"])
    assert view["data"] == {"wide": "true" if wide else "false", "heads": str(heads), "alone": alone}
    assert out["many-label"]["value"] == str(heads)


def test_the_verb_agrees_with_the_number_it_reads():
    assert verb_form(1.0) == "was" and verb_form(-0.04) == "were" and verb_form(1e-12) == "was or were?"
    out = one_vs_many_view(1, 1, 1)["outputs"]
    assert (out["one-verb"]["text"], out["many-verb"]["text"]) == ("were", "was")
    assert "so “were”" in out["summary"] and "so “was”" in out["summary"]
    assert out["verdict"] == {"text": "The subject's number at “was”: one head (d_k = 18) −0.04, so “were”; three heads "
                                      "(d_k = 18 each) +1.00, so “was”.", "value": "were|was"}


def test_the_label_says_how_wide_each_head_is():
    assert one_vs_many_view(1, 1, 1)["outputs"]["one-label"]["text"] == "One head, d_k = 18"
    assert one_vs_many_view(1, 1, 1, wide=True)["outputs"]["one-label"]["text"] == "One wide head, d_k = 54 = d_model"
    assert one_vs_many_view(1, 1, 1)["outputs"]["many-label"]["text"] == "Three heads, d_k = 18 each"


def test_two_heads_say_which_two_relationships_share_one():
    out = one_vs_many_view(1, 1, 1, heads=2, alone="clause")["outputs"]
    assert out["many-label"]["text"] == "Two heads, d_k = 18 each"
    assert out["many-title"] == "two softmaxes for three relationships: the subject and the previous token share one, half each"
    assert out["many-note"] == "Block 1 holds the subject and the previous token, half each; block 2 holds only the clause; block 3 is empty."
    assert (out["many-subject"]["text"], out["many-clause"]["text"], out["many-previous"]["text"]) == ("0.50", "1.00", "0.50")
    assert (out["many-number"]["text"], out["many-verb"]["text"]) == ("0.00", "was or were?")
    assert out["verdict"]["text"].endswith("; two heads (d_k = 18 each) 0.00, so “was or were?”.")
    assert ("the subject and the previous token share one softmax and arrive at 0.50 and 0.50; the clause arrives whole "
            "(1.00) in a block of its own: number 0.00, so “was or were?”.") in out["summary"]
    three = one_vs_many_view(1, 1, 1)["outputs"]
    assert three["many-note"] == "Block 1 holds only the subject; block 2 holds only the clause; block 3 holds only the previous token."
    one = one_vs_many_view(1, 1, 1, heads=1)["outputs"]
    assert one["many-title"] == "one softmax for three relationships: the subject, the clause and the previous token share it, a third each"
    assert one["many-note"].endswith("a third each; block 2 is empty; block 3 is empty.")


def test_the_fixed_words_come_from_the_sentence():
    fixed = one_vs_many_view()["fixed"]
    assert fixed["tokens"] == list(TOKENS)
    assert [r["words"] for r in fixed["relationships"]] == ["report", " ".join(TOKENS[2:10]), "rules"]
    assert [h["label"] for h in fixed["heads"]] == ["1 head", "2 heads", "3 heads"]
    assert fixed["roles"][1] == "subject" and fixed["roles"][9] == "previous" and fixed["roles"][0] == "none"


def test_through_the_bridge_the_browser_gets_the_view():
    reply = json.loads(bridge.call("one_vs_many_view", json.dumps({"subject": 50, "clause": 25, "previous": 25, "wide": True,
                                                                "heads": 2, "alone": "previous"})))
    assert reply["ok"]
    assert reply["result"] == json.loads(json.dumps(one_vs_many_view(50, 25, 25, wide=True, heads=2, alone="previous")))
