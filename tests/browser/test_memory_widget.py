"""The memory widget in Chromium: the strides, buffers and views it shows, first at build time and then
from Python in the browser, are NumPy's (asked here, directly, of arrays with the same layout), and the
cells it draws are mha_core's; the merge is a copy exactly when np.shares_memory says so."""
from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from mha_core.memory import D_MODEL, memory_steps

STEPS = """root => [...root.querySelectorAll('[data-output="steps"] > li')].map(li => ({
  name: li.dataset.step, shape: li.dataset.shape.split(",").map(Number),
  strides: li.dataset.strides.split(",").map(Number), elements: li.dataset.stridesElements.split(",").map(Number),
  view: li.dataset.view === "true", buffer: li.dataset.buffer, moved: Number(li.dataset.moved),
  memory: [...li.querySelectorAll('[data-row="memory"] .mha-memory__cell')].map(c => [c.textContent, c.dataset.cellHead]),
  slid: [...li.querySelectorAll('[data-row="memory"] .mha-memory__cell[data-moved="true"]')].map(c => Number(c.style.getPropertyValue("--from"))),
  play: li.querySelectorAll('button[data-action="play"]:not([hidden])').length,
}))"""
PATTERNS = """root => Object.fromEntries([...root.querySelectorAll('[data-output="patterns"] figure')].map(f => [f.dataset.split,
  [...f.querySelectorAll("table")].map(t => [...t.querySelectorAll("tr")].map(tr => [...tr.querySelectorAll("td")].map(td => [td.textContent, Number(td.style.getPropertyValue("--w"))])))]))"""


def numpy_layout(n: int, h: int, wrong: bool) -> list[tuple[list[int], bool]]:
    """(strides in bytes, shares memory with the step before) for each step, asked of NumPy directly."""
    d_k = D_MODEL // h
    q = np.zeros((n, D_MODEL))  # float64, token by token, as a projection's result
    z = np.zeros((h, n, d_k))  # attention's output: a new array, head by head
    if wrong:
        arrays = [(q, None), (q.reshape(h, n, d_k), q), (z, None), (z.reshape(n, D_MODEL), z)]
    else:
        split = q.reshape(n, h, d_k)
        back = z.transpose(1, 0, 2)
        arrays = [(q, None), (split, q), (split.transpose(1, 0, 2), split), (z, None), (back, z),
                  (back.reshape(n, D_MODEL), back)]
    return [(list(a.strides), source is not None and bool(np.shares_memory(a, source))) for a, source in arrays]


def assert_shows(widget, n: int, h: int, wrong: bool) -> None:
    shown = widget.evaluate(STEPS)
    want = memory_steps(n, h, wrong)
    assert [s["name"] for s in shown] == [s["name"] for s in want["steps"]]
    for s, (strides, view), w in zip(shown, numpy_layout(n, h, wrong), want["steps"]):
        long_axes = [i for i, size in enumerate(s["shape"]) if size > 1]  # a length-1 axis has no step
        assert [s["strides"][i] for i in long_axes] == [strides[i] for i in long_axes], s["name"]
        assert s["elements"] == [b // 8 for b in s["strides"]]
        assert s["view"] == view, s["name"]
        assert s["shape"] == w["shape"] and s["buffer"] == w["buffer"] and s["moved"] == w["moved"]
        assert s["memory"] == [[str(c["token"] + 1), str(c["head"])] for c in w["memory"]]
        sources = w["from"] or []  # a copy: each moved cell slides from its place in z's buffer
        assert s["slid"] == [j - i for i, j in enumerate(sources) if j != i] and len(s["slid"]) == s["moved"]
        assert s["play"] == (1 if s["moved"] else 0)
    patterns = widget.evaluate(PATTERNS)  # {split: [h][query][key] of [text, --w]}
    assert sorted(patterns) == ["right", "wrong"]
    for split, shown in patterns.items():
        weights = np.asarray(want["patterns"][split])  # [h, n, n]
        assert np.array(shown, dtype=object).shape[:3] == weights.shape
        assert np.allclose([[[w for _, w in row] for row in head] for head in shown], weights, rtol=0, atol=5e-7)
        assert np.allclose([[[float(t) for t, _ in row] for row in head] for head in shown], weights, atol=0.005)
    assert widget.get_attribute("data-n") == str(n) and widget.get_attribute("data-h") == str(h)
    legend = widget.locator('[data-output="legend"] > span')  # the colour of each head there is, no more
    assert legend.evaluate_all("chips => chips.map((c) => Number(c.dataset.cellHead))") == list(range(h))


def choose(widget, n=None, h=None, wrong=None) -> None:
    if n is not None:
        widget.locator('select[name="n_tokens"]').select_option(str(n))
    if h is not None:
        widget.locator('select[name="n_heads"]').select_option(str(h))
    if wrong is not None:
        widget.locator('input[name="wrong"]').set_checked(wrong)


@pytest.mark.before_python
def test_first_paint_is_numpys_layout(page, site_url, widget_path):
    widget = conftest.open_widget(page, site_url + widget_path("memory"), "memory")
    assert widget.get_attribute("data-state") == "initial"
    assert_shows(widget, 3, 2, False)
    merge = widget.locator('[data-step="merge"]')
    assert merge.get_attribute("data-view") == "false" and int(merge.get_attribute("data-moved")) > 0


def test_python_in_the_browser_redraws_every_layout(live_widget):
    widget = live_widget("memory")
    for n, h, wrong in [(3, 1, False), (1, 4, False), (4, 4, False), (3, 2, True), (2, 4, True), (3, 2, False)]:
        choose(widget, n=n, h=h, wrong=wrong)
        expect(widget).to_have_attribute("data-state", "live")
        expect(widget).to_have_attribute("data-wrong", str(wrong).lower())
        expect(widget).to_have_attribute("data-h", str(h))
        expect(widget).to_have_attribute("data-n", str(n))
        assert_shows(widget, n, h, wrong)
        merge_is_view = widget.locator("[data-output='steps'] > li").last.get_attribute("data-view") == "true"
        assert merge_is_view == (wrong or h == 1 or n == 1)


# Every buffer row's cells inside the row's box, breaking lines only between units (a cell that starts a line
# is the first of its unit), on one line if oneLine; the page and the widget free of sideways scroll.
OVERFLOW = """(root, oneLine) => {
  const out = [];
  for (const row of root.querySelectorAll(".mha-memory__row")) {
    const box = row.getBoundingClientRect();
    const cells = [...row.querySelectorAll(".mha-memory__cell")].map(c => c.getBoundingClientRect());
    if (!cells.length) out.push(`${row.getAttribute("aria-label")}: no cells`);
    const outside = cells.filter(c => c.left < box.left - 0.5 || c.right > box.right + 0.5);
    if (outside.length) out.push(`${row.closest("li").dataset.step} ${row.getAttribute("aria-label")}: `
      + `${outside.length} of ${cells.length} cells outside [${box.left}, ${box.right}], the last at ${cells.at(-1).right}`);
    if (row.scrollWidth > row.clientWidth) out.push(`${row.getAttribute("aria-label")} scrolls sideways`);
    const cut = [...row.querySelectorAll(".mha-memory__cell")].filter((c, i, all) =>
      i && c.getBoundingClientRect().top !== all[i - 1].getBoundingClientRect().top && c.previousElementSibling);
    if (cut.length) out.push(`${row.closest("li").dataset.step} ${row.getAttribute("aria-label")}: wraps inside a unit`);
    if (oneLine && cells.some(c => c.top !== cells[0].top)) out.push(`${row.closest("li").dataset.step} `
      + `${row.getAttribute("aria-label")}: on more than one line`);
  }
  const page = document.scrollingElement;
  if (page.scrollWidth > page.clientWidth) out.push(`the page scrolls sideways (${page.scrollWidth} > ${page.clientWidth})`);
  if (root.scrollWidth > root.clientWidth) out.push(`the widget scrolls sideways (${root.scrollWidth} > ${root.clientWidth})`);
  return out;
}"""


@pytest.mark.before_python
def test_every_buffer_fits_its_box_at_every_width(page, site_url, widget_path):
    """From a phone to a wide screen the whole buffer shows, wrapped unit by unit where it must (on one line from
    1280 px), with no sideways scroll, for the first paint's 3 tokens (24 numbers a row)."""
    widget = conftest.open_widget(page, site_url + widget_path("memory"), "memory")
    for width in (390, 768, 1280, 1920):
        conftest.resize(page, {"width": width, "height": 900})
        assert widget.evaluate(OVERFLOW, width >= 1280) == [], f"at {width} px"
        assert widget.locator('[data-step="merge"] [data-row="memory"] .mha-memory__cell').count() == 24


def test_the_whole_buffer_fits_for_the_longest_choice(live_widget):
    """4 tokens of 4 heads (32 numbers a row), narrow and wide."""
    widget = live_widget("memory")
    choose(widget, n=4, h=4, wrong=False)
    expect(widget).to_have_attribute("data-n", "4")
    expect(widget).to_have_attribute("data-h", "4")
    expect(widget).to_have_attribute("data-state", "live")
    for width in (390, 1280):
        conftest.resize(widget.page, {"width": width, "height": 900})
        assert widget.evaluate(OVERFLOW, False) == [], f"at {width} px"
    widget.page.set_viewport_size({"width": 1200, "height": 900})  # as the module's other tests have it
    choose(widget, n=3, h=2, wrong=False)
    expect(widget).to_have_attribute("data-state", "live")


# Each moved cell's slide (--dx, --dy, set by Play) and where its source cell is laid out (offsets ignore transforms).
SLIDES = """li => [...li.querySelectorAll('[data-row="memory"] .mha-memory__cell')].map((cell, i, row) => {
  const source = row[i + Number(cell.style.getPropertyValue("--from") || 0)];
  return [parseFloat(cell.style.getPropertyValue("--dx")), parseFloat(cell.style.getPropertyValue("--dy")),
          source.offsetLeft - cell.offsetLeft, source.offsetTop - cell.offsetTop];
})"""


@pytest.mark.before_python
def test_the_copy_slides_from_where_each_number_was_when_the_row_wraps(page, site_url, widget_path):
    """On a phone the merge's buffer wraps; Play slides each moved number from its place in z's buffer."""
    page.set_viewport_size({"width": 390, "height": 844})
    widget = conftest.open_widget(page, site_url + widget_path("memory"), "memory")
    merge = widget.locator('[data-step="merge"]')
    merge.locator('button[data-action="play"]').click()
    expect(merge).to_have_class("mha-memory--play")
    slides = merge.evaluate(SLIDES)
    assert all(abs(dx - x) <= 1 and abs(dy - y) <= 1 for dx, dy, x, y in slides), slides
    assert any(abs(y) > 5 for *_, y in slides), "no number moves between lines: the row did not wrap"
