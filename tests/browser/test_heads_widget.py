"""The heads widget in Chromium. Each head's pattern, read from the DOM after a real sentence change,
follows its rule as stated by tests/oracles.py (not mha_core's code), on the test's own sentence;
the knock-out removes the induction stripe; reader text stays text; text past 64 tokens is capped with
a notice, and whatever the sentence, the answer comes within a second. conftest fails a test on any page
error, console error, CSP violation or request off 127.0.0.1. Most tests share one page (live_widget), so
that Python starts once for them."""
from __future__ import annotations

import mha_core
import pytest
from playwright.sync_api import expect

import conftest
from conftest import on_widget_page, wait_ready
from tests.helpers import READ, SENTENCE, check_layout, heatmap, show_sentence, tokens_of
from tests.oracles import rule_rows

KINDS = ("previous_token", "positional", "induction", "content", "averaged")
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b> & "quotes"'
ANSWER_MS = 1000  # a sentence is answered within a second



# ---------------------------------------------------------------- the oracle: each head's rule, stated directly

def check_rule(kind: str, W, tokens: list[str], others=None) -> int:
    """Assert kind's rule on W; return how many rows it spoke of."""
    if kind == "averaged":
        mean = [[sum(others[h][q][k] for h in KINDS[:4]) / 4 for k in range(q + 1)] for q in range(len(W))]
        assert all(W[q][k] == pytest.approx(mean[q][k], abs=2e-4) for q in range(len(W)) for k in range(q + 1))
        return len(W)
    rows = rule_rows(kind, tokens)
    for q, keys in rows.items():
        assert sum(W[q][k] for k in keys) >= 0.9, (kind, q, tokens[q], keys, W[q])
    return len(rows)


# ---------------------------------------------------------------- driving the widget

def open_widget(page, site_url, path, query=""):
    return conftest.open_widget(page, site_url + path + query, "heads")


def select_head(widget, kind: str) -> dict:
    widget.locator(f'button[data-head="{kind}"]').click()
    expect(widget.locator(f'button[data-head="{kind}"]')).to_have_attribute("aria-pressed", "true")
    expect(widget).to_have_attribute("data-head", kind)
    return widget.evaluate(READ)


@pytest.fixture(scope="module")
def shown(module_page, site_url, heads_path) -> dict:
    """{kind: [n, n] weights} as the widget draws them for SENTENCE, on the module's page."""
    page, log = module_page
    log.clear()
    widget = on_widget_page(page, site_url + heads_path, "heads")
    show_sentence(widget, SENTENCE)
    tokens = tokens_of(SENTENCE)
    patterns = {kind: check_layout(select_head(widget, kind), tokens) for kind in KINDS}
    assert [b.get_attribute("aria-pressed") for b in widget.locator("button[data-head]").all()].count("true") == 1
    log.check()
    return patterns


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("kind", KINDS)
def test_each_head_follows_its_rule_on_a_sentence_of_its_own(shown, kind):
    assert check_rule(kind, shown[kind], tokens_of(SENTENCE), shown) >= 2


def test_first_paint_is_the_default_sentence_where_every_head_shows(page, site_url, heads_path):
    widget = open_widget(page, site_url, heads_path)
    assert widget.get_attribute("data-state") == "initial"
    sentence = widget.locator('textarea[name="sentence"]').input_value()
    tokens = tokens_of(sentence)
    core = mha_core.head_patterns(sentence)
    for kind in KINDS:  # before Python has started, from the pre-rendered data
        W = check_layout(select_head(widget, kind), tokens)
        assert all(W[q][k] == pytest.approx(core["heads"][kind][q][k], abs=1e-4)
                   for q in range(len(tokens)) for k in range(q + 1))
    drawn = {kind: heatmap(select_head(widget, kind), len(tokens)) for kind in KINDS}
    for kind in KINDS:  # every head has rows to show its rule on, and follows it
        assert check_rule(kind, drawn[kind], tokens, drawn) >= 1, kind
    assert any(keys != {0} for keys in rule_rows("positional", tokens).values())  # a delimiter after the first token


def test_ablating_the_previous_token_head_removes_the_induction_stripe(live_widget):
    widget = live_widget("heads")
    show_sentence(widget, SENTENCE)
    tokens = tokens_of(SENTENCE)
    rows = rule_rows("induction", tokens)
    box = widget.locator('input[type="checkbox"][name="ablate"][value="previous_token"]')
    box.check()
    expect(widget).to_have_attribute("data-ablate", "true")
    expect(widget).to_have_attribute("data-state", "live")
    W = check_layout(select_head(widget, "induction"), tokens)
    for q, keys in rows.items():
        assert sum(W[q][k] for k in keys) <= 0.1, (q, W[q])
        assert W[q][q] >= 0.9  # with nothing to match, the query rests on itself
    check_rule("previous_token", heatmap(select_head(widget, "previous_token"), len(tokens)), tokens)
    expect(widget.locator('[data-output="ablated"]')).to_be_visible()
    box.uncheck()
    expect(widget).to_have_attribute("data-ablate", "false")
    check_rule("induction", heatmap(select_head(widget, "induction"), len(tokens)), tokens)


@pytest.mark.parametrize("text", [HOSTILE, "שלום עולם, שלום 😀 🇫🇷 e\u0301 !!! ¿?", "!!! ... ???"])
def test_reader_text_is_shown_as_plain_text(live_widget, text):
    widget = live_widget("heads")
    assert show_sentence(widget, text) <= ANSWER_MS
    check_layout(widget.evaluate(READ), tokens_of(text))
    assert widget.page.evaluate("window.__pwned") is None
    assert widget.locator("img, b, script:not([data-heads-data])").count() == 0
    assert widget.locator('textarea[name="sentence"]').input_value() == text


def test_html_in_the_link_is_text_and_junk_is_ignored_with_a_note(page, site_url, heads_path):
    query = "?" + "&".join(["sentence=%3Cscript%3Ewindow.__pwned%3D1%3C%2Fscript%3E%20hi%20hi",
                            "head=%3Cb%3Ex%3C%2Fb%3E", "ablate=maybe"])
    widget = open_widget(page, site_url, heads_path, query)
    expect(widget).to_have_attribute("data-state", "live")
    check_layout(widget.evaluate(READ), tokens_of("<script>window.__pwned=1</script> hi hi"))
    expect(widget.locator('[data-output="note"]')).to_have_text("Ignored in the link: head=<b>x</b>, ablate=maybe.")
    assert page.evaluate("window.__pwned") is None
    assert widget.get_attribute("data-head") == "induction"


def test_state_is_kept_in_the_link(page, site_url, heads_path):
    widget = open_widget(page, site_url, heads_path)
    wait_ready(page)
    show_sentence(widget, SENTENCE)
    select_head(widget, "content")
    widget.locator('input[name="ablate"]').check()
    expect(widget).to_have_attribute("data-ablate", "true")
    page.reload()
    widget = page.locator('[data-mha-widget="heads"]').first
    expect(widget).to_have_attribute("data-state", "live")
    assert widget.get_attribute("data-head") == "content"
    assert widget.locator('input[name="ablate"]').is_checked()
    assert widget.locator('textarea[name="sentence"]').input_value() == SENTENCE


@pytest.mark.parametrize("words", [100, 2000])  # 2,000 words: 10,000 characters
def test_text_past_64_tokens_is_cut_with_a_notice(live_widget, words):
    widget = live_widget("heads")
    text = " ".join(f"w{i % 50:03d}" for i in range(words))
    assert show_sentence(widget, text) <= ANSWER_MS
    notice = widget.locator('[data-output="notice"]')
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(f"first 64 of the {words:,} tokens")
    check_layout(widget.evaluate(READ), tokens_of(text)[:64])
    show_sentence(widget, SENTENCE)
    expect(notice).to_be_hidden()


def test_hover_keyboard_and_the_query_row_in_the_sentence(live_widget):
    widget = live_widget("heads")
    page = widget.page
    show_sentence(widget, SENTENCE)
    tokens = tokens_of(SENTENCE)
    select_head(widget, "induction")
    readout = widget.locator('[data-output="cell"]')

    def expect_cell(q, k):
        weight = widget.locator(f'td[data-q="{q}"][data-k="{k}"]').get_attribute("data-weight")
        expect(readout).to_have_text(f"“{tokens[q]}” ({q}) → “{tokens[k]}” ({k}): {weight}")

    widget.locator('td[data-q="5"][data-k="2"]').hover()
    expect_cell(5, 2)
    widget.locator('td[data-q="8"][data-k="0"]').click()  # choosing a cell chooses its query row
    expect_cell(8, 0)
    expect(widget).to_have_attribute("data-query", "8")
    for key, (q, k) in [("ArrowRight", (8, 1)), ("ArrowDown", (9, 1)), ("End", (9, 9)), ("ArrowRight", (9, 9)),
                        ("ArrowUp", (8, 8)), ("Home", (8, 0))]:
        page.keyboard.press(key)
        expect_cell(q, k)
        expect(widget.locator(f'td[data-q="{q}"][data-k="{k}"]')).to_be_focused()
    assert widget.locator('td[tabindex="0"]').count() == 1  # roving tabindex
    sentence = widget.locator('[data-output="sentence"]')
    expect(sentence.locator("[data-query]")).to_have_attribute("data-token-index", "8")
    assert sentence.locator("[data-future]").count() == len(tokens) - 9
    # Mary (8) follows Mary (0): the induction head sends it to "gave" (1), which the sentence highlights
    strongest = sentence.evaluate("el => [...el.children].map(s => +s.style.getPropertyValue('--w'))")
    assert max(range(len(strongest)), key=strongest.__getitem__) == 1


def test_how_this_head_works_comes_from_its_data_and_shows_the_matrices(live_widget):
    widget = live_widget("heads")
    info = mha_core.HEAD_INFO
    for kind in KINDS:
        select_head(widget, kind)
        expect(widget.locator('[data-output="explanation"]')).to_have_text(info[kind]["explanation"])
        expect(widget.locator('[data-output="k_reads"]')).to_have_text(info[kind]["k_reads"])
        expect(widget.locator('[data-output="averaged"]')).to_be_visible(visible=kind == "averaged")
    select_head(widget, "previous_token")
    widget.locator('[data-output="weights-details"] summary').click()
    weights = widget.locator('[data-output="weights"]')
    expect(weights.locator("table")).to_have_count(4)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        expect(weights.locator("caption", has_text=name)).to_have_count(1)
    assert "position:1" in weights.locator("table").first.inner_text()  # W_Q reads positions
    select_head(widget, "averaged")
    expect(weights).to_contain_text("no weights of its own")


def test_a_blank_sentence_gets_a_message_other_text_is_a_sentence_and_it_recovers(live_widget):
    """The sentence field's bad input: blank text is refused with a message (the patterns shown stay);
    numbers, signs and letters are words and punctuation like any other; each is answered within a second."""
    widget = live_widget("heads")
    field, error = widget.locator('textarea[name="sentence"]'), widget.locator('[data-output="error"]')
    show_sentence(widget, SENTENCE)
    shown_before = widget.evaluate(READ)
    for blank in ["", "  \n\t "]:
        field.fill(blank)
        field.press("Tab")
        expect(error).to_have_text("Type a sentence: at least one word or punctuation mark.")
        assert widget.evaluate(READ) == shown_before and widget.get_attribute("data-state") == "live"
    show_sentence(widget, SENTENCE)  # the same sentence as before: nothing to compute, the message goes
    expect(error).to_be_hidden()
    for text in ["-5", "0", "3.5", "1e12", "12345678901234567890", "abc def abc"]:
        assert show_sentence(widget, text) <= ANSWER_MS
        check_layout(widget.evaluate(READ), tokens_of(text))
        expect(error).to_be_hidden()
