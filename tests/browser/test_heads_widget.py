"""The heads widget in Chromium. Each head's pattern, read from the DOM after a real sentence change,
follows its rule as stated by tests/oracles.py (not mha_core's code), on the test's own sentence;
the knock-out removes the induction stripe; reader text stays text; text past 64 tokens is capped with
a notice (how fast any of it is answered is bench/browser_budget.py's to say). conftest fails a test on any page
error, console error, CSP violation or request off 127.0.0.1. Most tests share one page (live_widget), so
that Python starts once for them."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import mha_core
import pytest
from playwright.sync_api import expect

import conftest
from conftest import WORKER, hold_worker, on_widget_page, resize, wait_ready
from sitevisit.page import show_sentence, type_sentence
from tests.helpers import READ, SENTENCE, check_layout, contrast, heatmap, over, tokens_of
from tests.oracles import rule_rows
from mha_page.views.heads import WORDS

KINDS = ("previous_token", "positional", "induction", "content", "averaged")
HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b> & "quotes"'



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


def open_weights(widget):
    """Open the head's weight matrices (left open, or not, by an earlier test on the shared page); return their
    details."""
    details = widget.locator('[data-output="weights-details"]')
    if not details.evaluate("d => d.open"):
        details.locator("summary").click()
    return details


def holding(params: dict) -> re.Pattern:
    """A URL whose query holds each of params (as the page's URLSearchParams writes them), in any order."""
    return re.compile("".join(rf"(?=.*[?&]{re.escape(urlencode({k: v}))}(&|#|$))" for k, v in params.items()))


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


@pytest.mark.before_python
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
    assert page.locator("html").get_attribute("data-mha-runtime") == "loading"  # all of it before Python


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


def test_ticking_the_knock_out_shows_the_induction_head_and_says_it_is_ablated(live_widget):
    widget = live_widget("heads")
    show_sentence(widget, SENTENCE)
    tokens = tokens_of(SENTENCE)
    box, note = widget.locator('input[name="ablate"]'), widget.locator('[data-output="ablation"]')
    select_head(widget, "content")
    expect(note).to_be_hidden()
    box.check()
    expect(widget).to_have_attribute("data-head", "induction")  # the head the knock-out breaks, shown at once
    expect(widget.locator('button[data-head="induction"]')).to_have_attribute("aria-pressed", "true")
    expect(widget).to_have_attribute("data-ablate", "true")
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget.locator('[data-output="shown"]')).to_have_text("induction head")
    expect(note).to_be_visible()
    expect(note).to_contain_text("Ablated pattern: the previous-token head is knocked out")
    W = heatmap(widget.evaluate(READ), len(tokens))
    assert all(W[q][q] >= 0.9 for q in rule_rows("induction", tokens))  # the stripe is gone: what the note says
    select_head(widget, "content")
    expect(note).to_contain_text("Unchanged by the knock-out")
    box.uncheck()
    expect(widget).to_have_attribute("data-ablate", "false")
    expect(note).to_be_hidden()
    assert widget.get_attribute("data-head") == "content"  # unticking leaves the head the reader chose


def test_enter_applies_the_sentence_and_shift_enter_starts_a_new_line(live_widget):
    widget = live_widget("heads")
    show_sentence(widget, SENTENCE)
    field = widget.locator('textarea[name="sentence"]')
    expect(widget.locator(f'label[for="{field.get_attribute("id")}"]')).to_contain_text(
        "Enter shows it, Shift+Enter starts a new line")
    field.fill("one two one two")
    field.press("Enter")  # applied, and no newline typed
    expect(widget).to_have_attribute("data-tokens", "4")
    expect(widget).to_have_attribute("data-state", "live")
    assert field.input_value() == "one two one two"
    assert widget.get_attribute("data-query") == str(mha_core.head_patterns("one two one two")["first_query"]) == "2"
    expect(field).to_be_focused()
    field.press("End")
    field.press("Shift+Enter")
    field.press_sequentially("three")
    assert field.input_value() == "one two one two\nthree"
    assert widget.get_attribute("data-tokens") == "4"  # a new line is not applied by itself
    field.press("Enter")
    expect(widget).to_have_attribute("data-tokens", "5")
    check_layout(widget.evaluate(READ), ["one", "two", "one", "two", "three"])
    show_sentence(widget, SENTENCE)  # the text applied by a change before: the browser fires no change for it
    expect(widget).to_have_attribute("data-tokens", str(len(tokens_of(SENTENCE))))


def test_a_sentence_typed_by_the_benchmark_s_hands_is_answered(live_widget):
    """sitevisit.page.type_sentence, as bench/training_speed.py gives its sentences: from far below the field, the
    wheel brings it on screen, the keys replace its text, Tab applies it; the time it returns is that answer's."""
    widget = live_widget("heads")
    field = widget.locator('textarea[name="sentence"]')
    field.evaluate("el => { el.scrollIntoView(); window.scrollBy(0, 1500); }")  # the field 1,500 px above the screen
    assert field.evaluate("el => el.getBoundingClientRect().bottom") < 0
    text = "a b c d one a b c d one"
    ms = type_sentence(widget, text)
    assert field.input_value() == text and not field.evaluate("el => el === document.activeElement")
    assert widget.get_attribute("data-state") == "live" and 0 < ms < 30_000
    check_layout(widget.evaluate(READ), tokens_of(text))


@pytest.mark.parametrize("text", [HOSTILE, "שלום עולם, שלום 😀 🇫🇷 e\u0301 !!! ¿?", "!!! ... ???"])
def test_reader_text_is_shown_as_plain_text(live_widget, text):
    widget = live_widget("heads")
    show_sentence(widget, text)
    check_layout(widget.evaluate(READ), tokens_of(text))
    assert widget.page.evaluate("window.__pwned") is None
    assert widget.locator("img, b, script").count() == 0
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


def test_state_is_kept_in_the_link(live_widget):
    """On the shared page: reloaded, it has Python ready again, and the knock-out is undone for the later tests."""
    widget = live_widget("heads")
    page = widget.page
    show_sentence(widget, SENTENCE)
    widget.locator('input[name="ablate"]').check()
    expect(widget).to_have_attribute("data-ablate", "true")
    select_head(widget, "content")
    kept = {"sentence": SENTENCE, "head": "content", "ablate": "1"}
    expect(page).to_have_url(holding(kept))  # written once the reader pauses: all of it, not an earlier test's head
    page.reload()
    widget = page.locator('[data-mha-widget="heads"]').first
    expect(widget).to_have_attribute("data-state", "live")
    assert widget.get_attribute("data-head") == "content"
    assert widget.locator('input[name="ablate"]').is_checked()
    assert widget.locator('textarea[name="sentence"]').input_value() == SENTENCE
    widget.locator('input[name="ablate"]').uncheck()
    expect(widget).to_have_attribute("data-ablate", "false")


@pytest.mark.parametrize("words", [100, 2000])  # 2,000 words: 10,000 characters
def test_text_past_64_tokens_is_cut_with_a_notice(live_widget, words):
    widget = live_widget("heads")
    text = " ".join(f"w{i % 50:03d}" for i in range(words))
    show_sentence(widget, text)
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
    prompt = "Point at or tap a cell, or Tab to the grid and use the arrow keys, to read query → key: weight."
    show_sentence(widget, "a b a b")  # another text: the readout keeps no token of the one before
    expect(readout).to_have_text(prompt)
    stops = sentence.evaluate("el => [...el.querySelectorAll('button')].map(b => b.tabIndex)")
    assert sorted(stops) == [-1, -1, -1, 0], stops  # the shorter sentence's tokens: still one tab stop


@pytest.mark.before_python
def test_the_sentence_is_one_tab_stop_and_the_arrow_keys_move_along_its_tokens(page, site_url, heads_path):
    widget = open_widget(page, site_url, heads_path)
    tokens = widget.locator('[data-output="sentence"] button')
    n, q = tokens.count(), int(widget.get_attribute("data-query"))
    assert n >= 3
    readout = widget.locator('[data-output="cell"]')
    widget.locator('select[name="query"]').focus()
    page.keyboard.press("Tab")
    expect(tokens.first).to_be_focused()
    for key, at in [("ArrowRight", 1), ("ArrowRight", 2), ("ArrowLeft", 1), ("End", n - 1), ("ArrowRight", n - 1),
                    ("Home", 0), ("ArrowLeft", 0), ("ArrowRight", 1)]:
        page.keyboard.press(key)
        expect(tokens.nth(at)).to_be_focused()
    page.keyboard.press("Enter")  # what a click on a token does: the query row's cell of that key, read out
    expect(readout).to_have_text(widget.locator("tbody tr").nth(q).locator("td").nth(1).get_attribute("aria-label"))
    page.keyboard.press("Tab")  # out of the sentence at once, whatever its length
    assert not widget.evaluate("root => root.querySelector('[data-output=\"sentence\"]').contains(document.activeElement)")
    page.keyboard.press("Shift+Tab")  # back to the token last reached
    expect(tokens.nth(1)).to_be_focused()
    assert widget.locator('[data-output="sentence"] button[tabindex="0"]').count() == 1


def test_how_this_head_works_comes_from_its_data_and_shows_the_matrices(live_widget):
    widget = live_widget("heads")
    info = WORDS
    for kind in KINDS:
        select_head(widget, kind)
        expect(widget.locator('[data-output="explanation"]')).to_have_text(info[kind]["explanation"])
        expect(widget.locator('[data-output="k_reads"]')).to_have_text(info[kind]["k_reads"])
        expect(widget.locator('[data-output="averaged"]')).to_be_visible(visible=kind == "averaged")
    select_head(widget, "previous_token")
    open_weights(widget)
    weights = widget.locator('[data-output="weights"]')
    expect(weights.locator("table")).to_have_count(4)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        expect(weights.locator("caption", has_text=name)).to_have_count(1)
    expect(weights.locator("table").first).to_contain_text("position:1")  # W_Q reads positions (once Python replies)
    select_head(widget, "averaged")
    expect(weights).to_contain_text("no weights of its own")


def test_a_blank_sentence_gets_a_message_other_text_is_a_sentence_and_it_recovers(live_widget):
    """The sentence field's bad input: blank text is refused with a message (the patterns shown stay);
    numbers, signs and letters are words and punctuation like any other."""
    widget = live_widget("heads")
    field, error = widget.locator('textarea[name="sentence"]'), widget.locator('[data-message="error"]')
    show_sentence(widget, SENTENCE)
    shown_before = widget.evaluate(READ)
    for blank in ["", "  \n\t "]:
        field.fill(blank)
        field.press("Tab")
        expect(error).to_have_text("Your sentence is empty.")  # Python's refusal, said as it is: no Retry
        expect(widget.get_by_role("button", name="Retry")).to_be_hidden()
        expect(widget).to_have_attribute("data-state", "error")  # refused, as every widget's life cycle refuses input
        assert widget.evaluate(READ) == shown_before
        expect_stale(widget, "Shown: the patterns of the sentence before, not of the sentence in the box. "
                             "Type a sentence to see its own.")  # the old grid is not the box's
    show_sentence(widget, SENTENCE)  # the same sentence as before: nothing to compute, the message goes
    expect(error).to_be_hidden()
    expect_stale(widget, None)
    for text in ["-5", "0", "3.5", "1e12", "12345678901234567890", "abc def abc"]:
        show_sentence(widget, text)
        check_layout(widget.evaluate(READ), tokens_of(text))
        expect(error).to_be_hidden()


# ---------------------------------------------------------------- honest states: what is shown before Python answers

EXAMPLE_SHOWN = "Shown: the patterns of the built-in example sentence, not of the sentence in the box. "
WAITING = "Waiting for Python to start in your browser to compute them."


def expect_stale(widget, line: str | None) -> None:
    """The outputs are marked stale with line (or, for None, not marked); marked means visible and readable:
    a dashed frame and the line at full opacity, not faded text."""
    stale = widget.locator('[data-output="stale"]')
    marked = widget.locator("[data-stale]")
    expect(marked).to_have_count(5)  # the heads, the heatmap, the sentence's highlights, the notice, the matrices
    for section in marked.all():
        expect(section).to_have_attribute("data-stale", "true" if line else "false")
    if not line:
        expect(stale).to_be_hidden()
        return
    expect(stale).to_have_text(line)
    expect(stale).to_be_visible()
    styles = widget.evaluate("""root => [root.querySelector('[data-output="stale"]'), ...root.querySelectorAll("[data-stale]")]
      .map(el => { const s = getComputedStyle(el); return [s.opacity, s.outlineStyle, s.color]; })""")
    body = widget.evaluate("root => getComputedStyle(root).color")
    assert styles[0] == ["1", "none", body], styles  # the line: full strength, the widget's text colour
    assert all(opacity == "1" and outline == "dashed" for opacity, outline, _ in styles[1:]), styles


def test_an_edit_before_python_shows_the_example_marked_as_such_then_its_own_patterns(page, site_url, heads_path):
    release = hold_worker(page)
    widget = open_widget(page, site_url, heads_path)
    example = widget.evaluate(READ)
    expect_stale(widget, None)
    field = widget.locator('textarea[name="sentence"]')
    field.fill(SENTENCE)
    field.press("Tab")
    expect(widget).to_have_attribute("data-state", "busy")
    expect_stale(widget, EXAMPLE_SHOWN + WAITING)
    assert widget.evaluate(READ) == example  # the example still, and said to be
    assert field.input_value() == SENTENCE
    assert page.locator("html").get_attribute("data-mha-runtime") != "ready"
    release()
    expect(widget).to_have_attribute("data-state", "live")
    expect_stale(widget, None)
    check_layout(widget.evaluate(READ), tokens_of(SENTENCE))
    widget.locator('input[name="ablate"]').check()  # with Python ready, nothing stale is shown for an answer this quick
    expect(widget).to_have_attribute("data-ablate", "true")
    expect_stale(widget, None)


def test_a_shared_link_shows_the_example_labelled_until_its_sentence_is_computed(page, site_url, heads_path):
    release = hold_worker(page)
    widget = open_widget(page, site_url, heads_path, "?sentence=a%20b%20c%20a%20b&head=content&ablate=1")
    expect(widget.locator('textarea[name="sentence"]')).to_have_value("a b c a b")
    expect(widget).to_have_attribute("data-head", "content")
    expect_stale(widget, EXAMPLE_SHOWN + WAITING)
    example = mha_core.head_patterns(widget.evaluate("root => JSON.parse(root.querySelector('[data-heads-data]').content.textContent).sentence"))
    check_layout(widget.evaluate(READ), example["tokens"])
    release()
    expect(widget).to_have_attribute("data-state", "live")
    expect_stale(widget, None)
    check_layout(widget.evaluate(READ), ["a", "b", "c", "a", "b"])
    assert widget.get_attribute("data-ablate") == "true"


def test_after_a_failed_start_an_edit_is_marked_stale_with_the_reason(page, page_log, site_url, heads_path):
    page_log.allow(r"this worker is broken")
    page.context.route(WORKER, lambda route: route.fulfill(body='throw new Error("this worker is broken");',
                                                            content_type="text/javascript"))
    widget = open_widget(page, site_url, heads_path)
    example = widget.evaluate(READ)
    field = widget.locator('textarea[name="sentence"]')
    field.fill(SENTENCE)
    field.press("Tab")
    expect(widget).to_have_attribute("data-state", "error")
    expect_stale(widget, EXAMPLE_SHOWN + "Python could not compute them: see the message above.")
    assert widget.evaluate(READ) == example
    page.context.unroute(WORKER)
    page.locator("[data-mha-status]").first.get_by_role("button", name="Retry").click()
    expect(widget).to_have_attribute("data-state", "live")
    expect_stale(widget, None)
    check_layout(widget.evaluate(READ), tokens_of(SENTENCE))


# ---------------------------------------------------------------- layout: a desktop, a phone, other scripts

FIT = """root => {
  const box = root.querySelector(".mha-heads__scroll--grid"), table = box.querySelector("table");
  const column = root.closest(".md-content__inner") || root.parentElement;
  const sentence = root.querySelector("textarea").getBoundingClientRect();
  return { scroll: box.scrollWidth, client: box.clientWidth, tableRight: table.getBoundingClientRect().right,
           columnRight: column.getBoundingClientRect().right, pageWidth: document.documentElement.scrollWidth,
           gap: table.getBoundingClientRect().top - sentence.bottom };
}"""
TARGETS = """root => [root.querySelector('select[name="query"]'), ...root.querySelectorAll('[data-output="sentence"] button')]
  .map(el => { const r = el.getBoundingClientRect(); return [el.textContent, r.width, r.height]; })"""
LABELS = """root => [...root.querySelectorAll("table [data-token-index]")].map(el => {
  const s = getComputedStyle(el);
  return { axis: el.dataset.axis, text: el.textContent, mode: s.writingMode, orientation: s.textOrientation,
           transform: s.transform, overflowX: s.overflowX, scrollW: el.scrollWidth, clientW: el.clientWidth,
           scrollH: el.scrollHeight, clientH: el.clientHeight };
})"""


def test_a_64_token_heatmap_fits_the_content_column_on_a_desktop(live_widget):
    widget = live_widget("heads")
    resize(widget.page, {"width": 1280, "height": 800})
    text = " ".join(f"w{i % 40}" for i in range(64))
    show_sentence(widget, text)
    check_layout(widget.evaluate(READ), tokens_of(text))
    fit = widget.evaluate(FIT)
    assert fit["scroll"] <= fit["client"], fit  # nothing hidden in a horizontal scroll
    assert fit["tableRight"] <= fit["columnRight"] + 0.5 and fit["pageWidth"] <= 1280, fit


@pytest.fixture
def phone(browser, site_url, heads_path):
    """The heads widget's page on a phone (390 × 844, touch), checked like the `page` fixture."""
    log = conftest.PageLog()
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    log.watch(context, page)
    page.set_default_timeout(conftest.READY_TIMEOUT_MS)
    conftest.hold_python(page)  # its one test needs no Python: none starts
    yield page
    context.close()
    log.check()


def test_on_a_phone_the_heatmap_follows_the_sentence_and_tokens_are_touch_targets(phone, site_url, heads_path):
    widget = open_widget(phone, site_url, heads_path)  # the built-in example: no Python needed for any of this
    fit = widget.evaluate(FIT)
    assert 0 < fit["gap"] <= 300 and fit["pageWidth"] <= 390, fit  # the heatmap right under the sentence box
    assert "hover" not in widget.inner_text().lower()
    targets = widget.evaluate(TARGETS)
    assert len(targets) == int(widget.get_attribute("data-tokens")) + 1
    assert all(width >= 24 and height >= 24 for _, width, height in targets), targets  # WCAG 2.5.8
    tokens = tokens_of(widget.locator('textarea[name="sentence"]').input_value())
    widget.locator('select[name="query"]').select_option("3")  # the row picker: a query without a 10-px cell
    expect(widget).to_have_attribute("data-query", "3")
    expect(widget.locator("tr[data-selected] th")).to_have_text(tokens[3])
    readout = widget.locator('[data-output="cell"]')
    widget.locator('[data-output="sentence"] button[data-token-index="1"]').tap()  # the key, by its token
    weight = widget.locator('td[data-q="3"][data-k="1"]').get_attribute("data-weight")
    expect(readout).to_have_text(f"“{tokens[3]}” (3) → “{tokens[1]}” (1): {weight}")
    widget.locator('[data-output="sentence"] button[data-token-index="5"]').tap()
    expect(readout).to_have_text(f"“{tokens[3]}” (3) → “{tokens[5]}” (5): masked, a later token")


PHONE_GRID = """root => {
  const box = root.querySelector(".mha-heads__scroll--grid").getBoundingClientRect();
  const cell = root.querySelector('td[data-q="0"][data-k="0"]').getBoundingClientRect();
  const keys = [...root.querySelectorAll('table [data-axis="key"]')].map(el => el.getBoundingClientRect());
  const label = getComputedStyle(root.querySelector('table [data-axis="key"]'));
  const focused = document.activeElement.getBoundingClientRect();
  return { cell: [cell.width, cell.height], font: parseFloat(label.fontSize), pageWidth: document.documentElement.scrollWidth,
           overlaps: keys.slice(1).filter((r, i) => r.left < keys[i].right - 0.5).length,
           focusedInBox: focused.left >= box.left - 0.5 && focused.right <= box.right + 0.5,
           focused: document.activeElement.dataset.k ?? null };
}"""


def test_on_a_phone_a_30_token_heatmap_keeps_readable_cells_and_labels_and_scrolls_by_keyboard(browser, site_url, heads_path):
    """At 390 px a 30-token grid used to shrink to 7 × 8 px cells under 8 px labels that ran together: its cells keep
    24 px, its labels 12 px or more and apart, and the box scrolls to the cell the arrow keys focus."""
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    log = conftest.PageLog()
    page = context.new_page()
    log.watch(context, page)
    page.set_default_timeout(conftest.READY_TIMEOUT_MS)
    try:
        widget = open_widget(page, site_url, heads_path)
        wait_ready(page)
        text = " ".join(f"w{i % 20}" for i in range(30))
        show_sentence(widget, text)
        check_layout(widget.evaluate(READ), tokens_of(text))
        widget.locator('td[data-q="29"][data-k="0"]').focus()
        grid = widget.evaluate(PHONE_GRID)
        assert grid["cell"][0] >= 24 and grid["cell"][1] >= 24, grid
        assert grid["font"] >= 12 and grid["overlaps"] == 0 and grid["pageWidth"] <= 390, grid
        box = widget.locator(".mha-heads__scroll--grid")
        assert box.evaluate("el => [el.scrollWidth > el.clientWidth, el.scrollLeft]") == [True, 0]  # wider than the box, at its left
        expect(box).to_have_attribute("tabindex", "0")  # a named box that Tab reaches, scrolled by the arrow keys
        expect(box).to_have_attribute("role", "group")
        expect(box).to_have_attribute("aria-label", "Attention weights (scrolls sideways)")
        page.keyboard.press("End")  # the last cell of row 29, far right
        grid = widget.evaluate(PHONE_GRID)
        assert grid["focused"] == "29" and grid["focusedInBox"], grid
        assert box.evaluate("el => el.scrollLeft") > 0
    finally:
        context.close()
    log.check()


@pytest.mark.parametrize("text", ["我爱北京天安门。我爱你", "東京に行きました、東京 👨‍👩‍👧‍👦 🇫🇷 U.S.A. a"])
def test_labels_in_other_scripts_are_upright_and_whole(live_widget, text):
    widget = live_widget("heads")
    show_sentence(widget, text)
    check_layout(widget.evaluate(READ), tokens_of(text))
    labels = widget.evaluate(LABELS)
    for label in labels:
        if label["axis"] == "key":  # vertical, CJK upright, not turned upside down
            assert label["mode"] == "vertical-rl" and label["orientation"] in ("mixed", "upright"), label
            assert label["transform"] == "none" and label["overflowX"] == "visible", label
            assert label["scrollH"] <= label["clientH"], label  # the whole character along the column
        elif len(label["text"]) == 1:
            assert label["scrollW"] <= label["clientW"], label  # a one-character query label is not cut


# ---------------------------------------------------------------- accessibility of the heatmap

RAMP = """root => {
  const data = JSON.parse(root.querySelector("[data-heads-data]").content.textContent);
  const probe = document.createElement("i");
  root.append(probe);
  const colours = data.view.colours.map((rgb) => { probe.style.color = rgb; return getComputedStyle(probe).color; });
  probe.remove();
  return colours.concat([...root.querySelectorAll("td[data-q]")].map((td) => getComputedStyle(td).backgroundColor));
}"""
SHADOW_COLOURS = r"rgba?\([^)]*\)"


@pytest.mark.before_python
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_focus_ring_and_the_selected_row_show_on_every_cell_colour(page, site_url, heads_path, scheme):
    widget, _ = conftest.open_in_scheme(page, site_url + heads_path, "heads", scheme)
    widget.locator('button[data-head="averaged"]').focus()
    page.keyboard.press("Tab")  # into the grid, by keyboard: its one cell in the tab order
    page.keyboard.press("ArrowDown")
    focused = widget.locator("td:focus")
    expect(focused).to_have_count(1)
    q = focused.get_attribute("data-q")
    expect(widget.locator(f'tr[data-selected] td[data-q="{q}"]').first).to_be_attached()  # the focused cell's row is selected
    ring = focused.evaluate("td => { const s = getComputedStyle(td); return [s.outlineColor, s.outlineWidth, s.outlineStyle, s.boxShadow]; }")
    other = widget.locator(f'tr[data-selected] td[data-q]:not(:focus)').first.evaluate("td => getComputedStyle(td).boxShadow")
    outline, width, style, shadow = ring
    assert style == "solid" and float(width.removesuffix("px")) >= 2, ring
    inner = re.findall(SHADOW_COLOURS, shadow)
    assert len(inner) == 1 and "2px inset" in shadow, ring  # the ring's own inner tone, not the row's lines
    lines = set(re.findall(SHADOW_COLOURS, other))
    assert len(lines) == 2, other  # the selected row: two tones
    for cell in widget.evaluate(RAMP):  # the ramp's anchors and every drawn cell
        assert max(contrast(outline, cell), contrast(inner[0], cell)) >= 3, (cell, ring)
        assert max(contrast(line, cell) for line in lines) >= 3, (cell, other)


@pytest.mark.before_python
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_masked_cells_and_cells_of_weight_0_look_different(page, site_url, heads_path, scheme):
    """The masked grey, drawn on the page, stands apart from the ramp's colour for a weight of 0 in both schemes
    (in dark, a faint grey on a dark page was as dark as viridis' purple)."""
    widget, page_colour = conftest.open_in_scheme(page, site_url + heads_path, "heads", scheme)
    masked = widget.locator("td[data-masked]").first.evaluate("td => getComputedStyle(td).backgroundColor")
    drawn = over(masked, page_colour)
    zero = widget.evaluate(RAMP)[0]  # the ramp's colour for a weight of 0
    assert contrast(zero, drawn) >= 1.5, (scheme, zero, drawn, masked)


@pytest.mark.before_python
def test_every_cell_is_named_query_key_weight_and_masked_cells_say_so(page, site_url, heads_path):
    widget = open_widget(page, site_url, heads_path)
    tokens = tokens_of(widget.locator('textarea[name="sentence"]').input_value())
    names = widget.evaluate("""root => [...root.querySelectorAll("tbody td")].map(td =>
      [td.dataset.q === undefined ? null : +td.dataset.q, +td.dataset.k, td.dataset.weight ?? null, td.getAttribute("aria-label")])""")
    n = len(tokens)
    assert len(names) == n * n
    drawn = {(q, k): (weight, name) for q, k, weight, name in names if q is not None}
    assert len(drawn) == n * (n + 1) // 2
    for (q, k), (weight, name) in drawn.items():
        assert name == f"“{tokens[q]}” ({q}) → “{tokens[k]}” ({k}): {weight}", name
    masked = [name for q, _, _, name in names if q is None]
    rows = [(q, k) for q in range(n) for k in range(q + 1, n)]
    assert masked == [f"“{tokens[q]}” ({q}) → “{tokens[k]}” ({k}): masked, a later token" for q, k in rows]
    weight = widget.locator('td[data-q="2"][data-k="1"]').get_attribute("data-weight")
    expect(widget.get_by_role("gridcell", name=f"“{tokens[2]}” (2) → “{tokens[1]}” (1): {weight}", exact=True)).to_have_count(1)


@pytest.mark.before_python
def test_masked_cells_are_one_flat_fill_the_legend_shows(page, site_url, heads_path):
    """Both heatmaps on the page fill their masked cells with the legend's flat grey: no gradient per cell
    (repainted with every cell whenever a heatmap moves) and no opacity per cell (an effect node each)."""
    open_widget(page, site_url, heads_path)
    looks = page.evaluate("""() => [...document.querySelectorAll('[data-mha-widget] td[data-masked]')]
      .map(td => { const s = getComputedStyle(td); return [td.closest('[data-mha-widget]').dataset.mhaWidget,
                                                          s.opacity, s.backgroundImage, s.backgroundColor]; })""")
    legend = page.evaluate("getComputedStyle(document.querySelector('.mha-heads__masked-swatch')).backgroundColor")
    assert sorted({widget for widget, *_ in looks}) == ["heads", "training"], looks[:3]
    assert legend not in ("rgba(0, 0, 0, 0)", "transparent"), legend
    assert all(look[1:] == ["1", "none", legend] for look in looks), looks[:3]


def test_the_weight_matrices_scroll_boxes_are_reachable_by_keyboard(live_widget):
    widget = live_widget("heads")
    show_sentence(widget, SENTENCE)
    widget.locator('input[name="ablate"]').uncheck()
    expect(widget).to_have_attribute("data-ablate", "false")
    select_head(widget, "previous_token")  # a head with all four matrices non-zero: four tables
    details = open_weights(widget)
    boxes = widget.locator('[data-output="weights"] .mha-heads__scroll')
    expect(boxes).to_have_count(4)
    for name, box in zip(("W_Q", "W_K", "W_V", "W_O"), boxes.all()):
        expect(box.locator("caption var")).to_have_text(name)
        expect(box).to_have_attribute("tabindex", "0")
        expect(box).to_have_attribute("role", "region")
        expect(box).to_have_accessible_name(f"{name}, scrollable")
    details.locator("summary").focus()
    widget.page.keyboard.press("Tab")
    expect(boxes.first).to_be_focused()
