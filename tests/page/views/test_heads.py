"""The heads widget's view: each weight it shows is mha_core.heads', formatted once; every head has its words and its
knock-out line; the matrices are head_weights' own; bad input is refused as head_patterns refuses it."""

import json
import re

import pytest

from mha_page import bridge
from mha_core.heads import HEAD_KINDS, HEAD_LAYER, head_patterns, head_weights
from mha_page.views import heads as views_heads
from mha_page.views.heads import KNOCKED_OUT, LAYERS, WORDS, heads_view, heads_weights_view, matrix_text
from mha_page.views.palette import colour

SENTENCE = "Mary gave John a book, and Mary gave John a pen."


def cells(view: dict, kind: str) -> dict[tuple[int, int], tuple[str, str, str]]:
    """{(q, k): (weight's text, colour, name)} of head kind's drawn cells, read from the view's lists as the
    template and the binding read them (row by row, k <= q)."""
    names, lists = view["names"], view["heads"][kind]["cells"]
    places = [(q, k) for q in range(view["data"]["tokens"]) for k in range(q + 1)]
    assert len(lists["weight"]) == len(lists["shade"]) == len(places)
    return {(q, k): (w, view["colours"][s], names["from"][q] + names["to"][k] + w)
            for (q, k), w, s in zip(places, lists["weight"], lists["shade"])}


@pytest.mark.parametrize("ablate", [(), ("previous_token",)])
def test_each_weight_shown_is_mha_core_s_with_its_colour_and_its_name(ablate):
    core, view = head_patterns(SENTENCE, ablate=ablate), heads_view(SENTENCE, ablate=ablate)
    tokens = core["tokens"]
    n = len(tokens)
    for kind in HEAD_KINDS:
        for (q, k), (text, shade, name) in cells(view, kind).items():
            w = core["heads"][kind][q][k]
            assert float(text) == pytest.approx(w, abs=5e-5) and re.fullmatch(r"[01]\.\d{4}", text)
            assert shade == "rgb({}, {}, {})".format(*bytes.fromhex(colour(w)[1:]))
            assert name == f"“{tokens[q]}” ({q}) → “{tokens[k]}” ({k}): {text}"
    names = view["names"]
    assert names["from"][1] + names["to"][3] + names["masked"] == f"“{tokens[1]}” (1) → “{tokens[3]}” (3): masked, a later token"
    assert [row["count"] for row in view["outputs"]["grid"]["rows"]] == [n] * n
    assert view["query"] == core["first_query"]
    assert view["data"] == {"tokens": n, "ablate": "true" if ablate else "false"}


def test_a_40_token_view_is_small():
    """Every head's cells travel as two flat lists, not a slot per cell: the view of a 40-token sentence with its
    five heads stays under 100 KB of JSON (a slot per cell made it 0.68 MB)."""
    text = " ".join((["the", "old", "keeper", "of", "the", "light", "waved", ","] * 5)[:39] + ["w1"])
    view = heads_view(text)
    size = len(json.dumps(view, ensure_ascii=False).encode())
    assert view["data"]["tokens"] == 40
    print(f"heads_view of 40 tokens: {size:,} bytes of JSON")
    assert size <= 100_000, size


def test_the_tokens_label_both_axes_the_sentence_and_the_picker():
    view = heads_view(SENTENCE)
    tokens, out = head_patterns(SENTENCE)["tokens"], view["outputs"]
    assert [r["outputs"]["key-token"] for r in out["keys"]["rows"]] == [
        {"text": t, "data": {"token-index": i}} for i, t in enumerate(tokens)]
    assert [r["outputs"]["query-token"]["text"] for r in out["grid"]["rows"]] == tokens
    assert [r["text"] for r in out["sentence"]["rows"]] == tokens
    assert [r["text"] for r in out["queries"]["rows"]] == [f"{i}: {t}" for i, t in enumerate(tokens)]
    assert out["grid"]["rows"][2]["data"]["attends"].startswith(f"Where the query “{tokens[2]}” (position 2)")


def test_every_head_has_its_words_and_what_the_knock_out_does_to_it():
    plain, knocked = heads_view(SENTENCE), heads_view(SENTENCE, ablate=["previous_token"])
    for kind in HEAD_KINDS:
        head = plain["heads"][kind]["outputs"]
        for slot in ("label", "how-label", "q_reads", "k_reads", "explanation"):
            assert head[slot] and head[slot] == WORDS[kind][slot.replace("how-", "")]
        assert head["layer"] == LAYERS[HEAD_LAYER[kind]]
        assert head["averaged"] == {"hidden": kind != "averaged"}
        assert head["ablation"] == {"text": "", "hidden": True} and head["ablated"] == {"hidden": True}
        assert knocked["heads"][kind]["outputs"]["ablation"] == {"text": KNOCKED_OUT[kind], "hidden": False}
        assert knocked["heads"][kind]["outputs"]["ablated"] == {"hidden": kind != "previous_token"}


def test_a_cut_text_says_so_and_a_long_token_is_clipped_where_sentences_name_it():
    out = heads_view(" ".join(["w"] * 70))["outputs"]
    assert out["notice"] == {"text": "Only the first 64 of the 70 tokens are shown: these heads take at most 64.",
                             "hidden": False}
    assert heads_view("a b")["outputs"]["notice"] == {"text": "", "hidden": True}
    long = "x" * 40
    view = heads_view([long, "y"])
    assert view["outputs"]["sentence"]["rows"][0]["text"] == long  # the token itself, whole
    assert cells(view, "induction")[1, 0][2].startswith(f"“y” (1) → “{'x' * 29}…” (0): ")


def test_matrices_show_two_decimals_at_most():
    assert [matrix_text(v) for v in (0.0, 1.0, 12.0, -40.0, 0.126, 4.2426)] == ["·", "1", "12", "−40", "0.13", "4.24"]


def test_the_matrices_are_head_weights_own_non_zero_rows_and_columns():
    core, view = head_weights("a b a b"), heads_weights_view("a b a b")
    head = core["heads"]["previous_token"]
    out = view["heads"]["previous_token"]
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        M = head[name]
        table = out[f"{name}-table"]["outputs"]
        rows, cols = [i for i in range(M.shape[0]) if M[i].any()], [j for j in range(M.shape[1]) if M[:, j].any()]
        assert len(table["rows"]["rows"]) == len(rows) and len(table["cols"]["rows"]) == len(cols)
        for r, i in zip(table["rows"]["rows"], rows):
            assert [float(t.replace("·", "0").replace("−", "-")) for t in r["rows"]] == pytest.approx(M[i, cols], abs=5e-3)
    assert "position:1" in out["W_Q-table"]["outputs"]["rows"]["rows"][0]["outputs"]["row-label"]
    ablated = heads_weights_view("a b a b", ablate=["previous_token"])["heads"]["previous_token"]
    assert ablated["W_O-table"] == {"hidden": True} and "all zero" in ablated["W_O-zero"]["outputs"]["zero-text"]
    assert "no weights of its own" in view["heads"]["averaged"]["intro"]


@pytest.mark.parametrize("fn", ["heads_view", "heads_weights_view"])
@pytest.mark.parametrize("args, message", [
    ({"text_or_tokens": "   "}, "text is empty."),
    ({"text_or_tokens": ["a", ""]}, "text_or_tokens must be a string or a list of 1 to 100,000"),
    ({"text_or_tokens": "a b", "ablate": ["averaged"]}, "ablate[0] must be one of previous_token"),
    ({"text_or_tokens": "a b", "ablate": "induction"}, "ablate must be a list, got 'induction'."),
])
def test_bad_input_is_refused_in_python_and_through_the_bridge(fn, args, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")) as refused:
        {"heads_view": heads_view, "heads_weights_view": heads_weights_view}[fn](**args)
    answer = json.loads(bridge.call(fn, json.dumps(args)))
    _, why = str(refused.value).split(" ", 1)  # the same reason, after the name the reader knows (bridge.worded)
    assert answer["ok"] is False and answer["error"].endswith(f" {why}")


def test_the_bridge_answers_the_view_itself():
    answer = json.loads(bridge.call("heads_view", json.dumps({"text_or_tokens": SENTENCE, "ablate": ["previous_token"]})))
    assert answer == {"ok": True, "result": json.loads(json.dumps(heads_view(SENTENCE, ablate=["previous_token"])))}


def test_the_caption_names_each_pattern_once_and_calls_the_mean_no_head():
    heads = heads_view(SENTENCE)["heads"]
    assert heads["induction"]["outputs"]["shown"] == "induction head"
    shown = heads["averaged"]["outputs"]["shown"]
    assert "averaged" in shown and not shown.endswith("head")  # the mean of four heads is not a head of the model


def test_a_stale_line_for_every_case_the_widget_picks():
    """widgets/heads/stale.js picks "{instead} {waits}": every pair has its line, which says both."""
    lines = views_heads.stale_lines()
    assert len(lines) == len(views_heads.INSTEAD) * len(views_heads.WAITS) == 16
    assert lines["example waiting"] == ("Shown: the patterns of the built-in example sentence, not of the sentence in "
                                        "the box. Waiting for Python to start in your browser to compute them.")
    assert lines["clean computing"] == "Shown: the patterns without the knock-out, not with it. Computing them…"
    assert lines["before blank"].endswith("not of the sentence in the box. Type a sentence to see its own.")
