"""The worked example in Chromium: the page shows mha_core.worked's numbers before Python starts, and
"Draw new numbers" refills every cell with Python's answer for the next seed, which equals the answer
computed here in CPython."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

import conftest
from mha_core.worked import INPUTS, TOKENS, worked_example
from tests.helpers import contrast, over

CELLS = """root => [...root.querySelectorAll("table[data-matrix]")].map(t => ({
  name: t.dataset.matrix, transposed: t.hasAttribute("data-transposed"),
  cells: [...t.querySelectorAll("td[data-r]")].map(td => [+td.dataset.r, +td.dataset.c, td.textContent]),
}))"""


LABELS = """root => [...root.querySelectorAll("th[data-token-index]")].map(th => [+th.dataset.tokenIndex, th.textContent])"""


def assert_shows(widget, seed: int, tokens=TOKENS) -> None:
    """Every matrix cell the widget holds is mha_core's number for seed and tokens (to the decimals shown:
    one for the drawn inputs, two for what is computed), every matrix is shown, and every token label names
    its token."""
    want = worked_example(seed, list(tokens))["matrices"]
    labels = widget.evaluate(LABELS)
    assert labels and all(text == tokens[i] for i, text in labels)
    tables = widget.evaluate(CELLS)
    assert {t["name"] for t in tables} == set(want)
    for t in tables:
        values = want[t["name"]]["values"]
        rows, cols = len(values), len(values[0])
        assert len(t["cells"]) == rows * cols, t["name"]
        decimals = 1 if t["name"] in INPUTS else 2
        for r, c, shown in t["cells"]:
            value = values[c][r] if t["transposed"] else values[r][c]
            assert len(shown.split(".")[1]) == decimals and "-" not in shown, (t["name"], shown)
            assert float(shown.replace("\u2212", "-")) == pytest.approx(value, abs=0.5 * 10**-decimals + 1e-12), (t["name"], r, c)
    assert widget.locator('[data-output="seed"]').text_content() == str(seed)


@pytest.mark.before_python
def test_first_paint_is_mha_core_s_numbers(page, site_url, widget_path):
    widget = conftest.open_widget(page, site_url + widget_path("worked"), "worked")
    assert widget.get_attribute("data-state") == "initial"
    assert_shows(widget, int(widget.get_attribute("data-seed")))  # pre-rendered at build time


def test_first_paint_then_new_numbers_from_python(fresh_widget):
    """The widget mounted afresh (its page's Python ready) shows the built numbers until the reader asks."""
    widget = fresh_widget("worked")
    assert widget.get_attribute("data-state") == "initial"
    seed = int(widget.get_attribute("data-seed"))
    assert_shows(widget, seed)  # pre-rendered at build time
    widget.locator('[data-action="redraw"]').click()  # starts Python if it has not started yet
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget).to_have_attribute("data-seed", str(seed + 1))
    assert_shows(widget, seed + 1)
    widget.locator('[data-action="redraw"]').click()
    expect(widget).to_have_attribute("data-seed", str(seed + 2))
    expect(widget).to_have_attribute("data-state", "live")
    assert_shows(widget, seed + 2)


@pytest.mark.before_python
def test_the_steps_open_and_the_heads_carry_their_colours(page, site_url, widget_path):
    widget = conftest.open_widget(page, site_url + widget_path("worked"), "worked")
    steps = widget.locator("details[data-step]")
    assert steps.count() == 6
    assert widget.locator("details[open]").count() == 1  # the first step
    steps.nth(1).locator("summary").click()
    expect(steps.nth(1)).to_have_attribute("open", "")
    # W_Q's column blocks and W_O's row blocks, coloured by head
    heads = widget.evaluate("""root => ({
      W_Q: [...root.querySelector('table[data-matrix="W_Q"]').querySelectorAll("tr")[0].querySelectorAll("td")].map(td => td.dataset.cellHead),
      W_O: [...root.querySelector('table[data-matrix="W_O"]').querySelectorAll("tr")].map(tr => tr.querySelector("td").dataset.cellHead),
    })""")
    assert heads == {"W_Q": ["0", "0", "1", "1"], "W_O": ["0", "0", "1", "1"]}


@pytest.mark.before_python
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_each_head_s_tint_shows_on_the_page_and_keeps_its_numbers_legible(page, site_url, widget_path, scheme):
    """Each head's tint, drawn on the page, stands out from it by 1.3:1 or more (a tint much fainter is hardly
    seen) and its numbers keep 4.5:1 on it, in both schemes."""
    widget, page_colour = conftest.open_in_scheme(page, site_url + widget_path("worked"), "worked", scheme)
    for head in ("0", "1"):
        cell = widget.locator(f'td[data-cell-head="{head}"]').first
        tint, text = cell.evaluate("td => [getComputedStyle(td).backgroundColor, getComputedStyle(td).color]")
        drawn = over(tint, page_colour)
        assert contrast(drawn, page_colour) >= 1.3, (scheme, head, tint)
        assert contrast(text, drawn) >= 4.5, (scheme, head, tint, text)


def test_the_reader_s_words(fresh_widget):
    widget = fresh_widget("worked")
    seed = int(widget.get_attribute("data-seed"))
    widget.locator('select[name="token"][data-token-index="2"]').select_option("cat")
    expect(widget).to_have_attribute("data-tokens", "the cat cat")
    expect(widget).to_have_attribute("data-state", "live")
    assert_shows(widget, seed, ("the", "cat", "cat"))
    rows = widget.evaluate("""root => [...root.querySelector('table[data-matrix="Q"]').rows].map(r => [...r.querySelectorAll("td")].map(td => td.textContent))""")
    assert rows[1] == rows[2]  # the same word asks the same question
