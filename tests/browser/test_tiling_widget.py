"""The tiling widget in Chromium: before Python starts, the step slider walks the built tiles; with Python, each
block, mask, head width and sentence brings every tile anew; what each step shows (the grid of tiles, the scores,
each query's m, ℓ and O) is mha_core.flash's computation redone here, the counts are the formulas computed here,
and the last step's output is the ordinary computation's within 1e-5. Operated by the keyboard alone, at a
phone's 390 px, in the dark scheme. conftest fails a test on any page error, console error, CSP violation or
request off 127.0.0.1."""
from __future__ import annotations

import math

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from mha_core import scaled_dot_product_attention
from mha_core.flash import flash_attention_steps, sentence_head

NAME = "tiling"
SHOWN = """root => {
  const value = (name) => root.querySelector(`[data-output="${name}"]`).dataset.value;
  const step = root.querySelector('input[name="step"]');
  const form = root.querySelector("form");
  return {
    form: {sentence: form.sentence.value, d_head: Number(form.d_head.value), block: Number(form.block.value),
           causal: form.causal.checked},
    counts: Object.fromEntries(["held", "full", "tiles", "tiles-skipped", "reads-ordinary", "writes-ordinary",
                                "reads-tiled", "writes-tiled"].map(n => [n, Number(value(n))])),
    error: {value: value("max-error"), hidden: root.querySelector('[data-output="max-error"]').hidden},
    step: {min: Number(step.min), max: Number(step.max), value: Number(step.value)},
    states: [...root.querySelectorAll("[data-tile]")].map(t => t.dataset.state),
    queries: [...root.querySelectorAll('[data-output="queries"] > tr')].map(tr => Object.fromEntries(
      [...tr.querySelectorAll("[data-output]")].map(c => [c.dataset.output, c.textContent]))),
    scores: [...root.querySelectorAll('[data-output="scores"] > tr')].map(tr =>
      [...tr.querySelectorAll("td")].map(td => td.textContent)),
  };
}"""


def number(text: str) -> float:
    return {"−∞": -np.inf, "masked": -np.inf}.get(text, None) or float(text.replace("−", "-"))


def expected(sentence: str, d_head: int, block: int, causal: bool) -> dict:
    """The tiles, the counts and the error, computed here: FlashAttention's counting, written out again."""
    head = sentence_head(sentence, d_head)
    q, k, v = head["q"], head["k"], head["v"]
    n = len(head["tokens"])
    r = flash_attention_steps(q, k, v, block, block, causal)
    T = math.ceil(n / block)
    skipped = sum(causal and c * block > min((i + 1) * block, n) - 1 for i in range(T) for c in range(T))
    seen = sum(min(n, (c + 1) * block) - c * block for i in range(T) for c in range(T)
               if not (causal and c * block > min((i + 1) * block, n) - 1))  # keys read, over the tiles computed
    ordinary, _ = scaled_dot_product_attention(q, k, v, causal=causal)
    return {"steps": r["steps"], "computed": [s for s in r["steps"] if not s["skipped"]],
            "error": np.abs(r["out"] - ordinary).max(),
            "counts": {"held": min(block, n) ** 2, "full": n * n, "tiles": T * T - skipped, "tiles-skipped": skipped,
                       "reads-ordinary": 2 * n * d_head + 2 * n * n + n * d_head, "writes-ordinary": 2 * n * n + n * d_head,
                       "reads-tiled": n * d_head + 2 * d_head * seen, "writes-tiled": n * d_head}}


def assert_shows(widget, at: int | None = None) -> dict:
    """What the widget shows is the tile its step slider is at (at, if given), as computed here; returns it."""
    shown = widget.evaluate(SHOWN)
    want = expected(**{"sentence": shown["form"]["sentence"], **{k: shown["form"][k] for k in ("d_head", "block", "causal")}})
    s = shown["step"]["value"]
    assert at is None or s == at
    assert shown["counts"] == want["counts"]
    assert shown["step"]["min"] == 0 and shown["step"]["max"] == len(want["computed"]) - 1
    tile = want["computed"][s]
    order = [want["computed"].index(t) if not t["skipped"] else None for t in want["steps"]]
    assert shown["states"] == ["skipped" if i is None else "current" if i == s else "done" if i < s else "todo"
                               for i in order]
    m_before, m_after = tile["m"]
    assert np.allclose([number(r["m-before"]) for r in shown["queries"]], m_before, atol=0.005)
    assert np.allclose([number(r["m-after"]) for r in shown["queries"]], m_after, atol=0.005)
    assert np.allclose([number(r["l-after"]) for r in shown["queries"]], tile["l"][1], atol=0.0005)
    assert np.allclose([[number(x) for x in r["o-after"].split()] for r in shown["queries"]], tile["o"][1], atol=0.005)
    assert np.allclose([[number(x) for x in row] for row in shown["scores"]], tile["scores"], atol=0.005)
    if s == shown["step"]["max"]:
        assert not shown["error"]["hidden"] and float(shown["error"]["value"]) < 1e-5
        # the browser's NumPy (no BLAS) rounds otherwise than this one: the two errors agree to rounding
        assert abs(float(shown["error"]["value"]) - want["error"]) < 1e-12
    else:
        assert shown["error"]["hidden"]
    return shown


@pytest.mark.before_python
def test_the_step_slider_walks_the_built_tiles_by_keyboard(page, site_url, widget_path):
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    assert widget.get_attribute("data-state") == "initial"
    shown = assert_shows(widget, at=0)
    assert shown["form"]["causal"] and shown["counts"]["tiles-skipped"] > 0  # the built view skips tiles
    step = widget.locator('input[name="step"]')
    text = widget.locator('[data-output="step-text"]')
    before = text.text_content()
    step.focus()
    page.keyboard.press("ArrowRight")
    assert_shows(widget, at=1)
    assert text.text_content() != before
    page.keyboard.press("End")
    assert_shows(widget, at=shown["step"]["max"])
    page.keyboard.press("Home")
    assert_shows(widget, at=0)
    assert widget.get_attribute("data-state") == "initial"  # no Python asked


def test_block_mask_head_and_sentence_bring_every_tile_anew(live_widget):
    widget = live_widget(NAME)
    page = widget.page
    block, step = widget.locator('input[name="block"]'), widget.locator('input[name="step"]')
    block.focus()
    page.keyboard.press("ArrowLeft")  # 4 -> 3: 13 tokens in blocks of 3, the last of 1
    expect(widget).to_have_attribute("data-block", "3")
    expect(widget).to_have_attribute("data-state", "live")
    assert_shows(widget)
    step.focus()
    page.keyboard.press("End")
    assert_shows(widget)
    widget.locator('input[name="causal"]').focus()
    page.keyboard.press("Space")  # no mask: every tile computed
    expect(widget).to_have_attribute("data-causal", "false")
    expect(widget).to_have_attribute("data-state", "live")
    shown = assert_shows(widget)
    assert shown["counts"]["tiles-skipped"] == 0 and shown["counts"]["tiles"] == 25
    assert shown["step"]["value"] == shown["step"]["max"]  # still the last step: the whole output
    widget.locator('select[name="d_head"]').select_option("8")
    expect(widget).to_have_attribute("data-d-head", "8")
    expect(widget).to_have_attribute("data-state", "live")
    assert_shows(widget)
    sentence = widget.locator('input[name="sentence"]')
    sentence.fill("Tiles of scores come and go, but the running maximum and the running sum stay.")
    sentence.press("Enter")
    expect(widget).to_have_attribute("data-n", "17")
    expect(widget).to_have_attribute("data-state", "live")
    step.focus()
    page.keyboard.press("Home")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
        assert_shows(widget)


def test_too_small_a_block_for_a_long_sentence_is_refused_in_words(live_widget):
    widget = live_widget(NAME)
    sentence = widget.locator('input[name="sentence"]')
    sentence.fill(" ".join(f"w{i}" for i in range(40)))
    sentence.press("Enter")
    error = widget.locator('[data-message="error"]')
    expect(error).to_be_visible()
    expect(error).to_contain_text("block must be at least 5 for 40 tokens")
    block = widget.locator('input[name="block"]')
    block.fill("5")
    block.dispatch_event("change")
    expect(widget).to_have_attribute("data-n", "40")
    expect(widget).to_have_attribute("data-state", "live")
    expect(error).to_be_hidden()
    assert_shows(widget)
    assert block.get_attribute("min") == "5" and block.get_attribute("max") == "40"


@pytest.mark.before_python
def test_a_dark_phone_shows_it_without_sideways_scroll(page, site_url, widget_path):
    conftest.resize(page, {"width": 390, "height": 844})
    widget, background = conftest.open_in_scheme(page, site_url + widget_path(NAME), NAME, "dark")
    colours = widget.evaluate("""root => [...root.querySelectorAll("td, th, p, label")].filter(e => e.offsetParent)
      .map(e => getComputedStyle(e).color)""")
    assert colours and background not in colours  # text in the scheme's foreground, never its background
    assert page.evaluate("document.scrollingElement.scrollWidth <= document.scrollingElement.clientWidth")
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")
    for control in ("sentence", "d_head", "block", "causal", "step"):
        box = widget.locator(f'[name="{control}"]').bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, control
    step = widget.locator('input[name="step"]')
    step.focus()
    page.keyboard.press("ArrowRight")
    assert_shows(widget, at=1)
