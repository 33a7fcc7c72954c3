"""The shapes widget in Chromium: every value it shows after a real input change equals mha_core's,
computed here in CPython; the page makes no request off 127.0.0.1 and raises no error (see conftest)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import mha_core
import pytest
from mha_core.presets import PRESETS
from mha_page.views.shapes import shapes_display, shapes_view
from playwright.sync_api import expect

import conftest
from conftest import hold_python, hold_worker, wait_ready
from sitebuild import assets, serving, widgets
from sitevisit.site import pages_with, serve
from tests.helpers import FORM, assert_shows, expected, form_config, shown
import mha_core.shapes


OPTIONAL = ("n_kv_heads", "d_head")  # empty means "derive it"
BAD_NUMBERS = ["", "-5", "0", "3.5", "1e12", "12345678901234567890"]


def open_widget(page, site_url, path, query=""):
    return conftest.open_widget(page, site_url + path + query, "shapes")


def number(widget, name):
    return widget.locator(f'input[type="number"][name="{name}"]')


def slider(widget, name):
    return widget.locator(f'input[type="range"][name="{name}"]')


def sliders(widget) -> dict:
    """Each slider's value (the value it stands for, from its data-values)."""
    return widget.evaluate("""root => Object.fromEntries([...root.querySelectorAll('input[type="range"]')].map(
        s => [s.name, s.dataset.values.split(",")[s.valueAsNumber]]))""")


FORM_DEFAULTS = """root => Object.fromEntries([...root.querySelectorAll('input[type="number"]')].map(i => [i.name, i.defaultValue]))"""


def set_number(widget, name, value):
    """Type into the number field and press Enter, as a reader does (applied on change)."""
    field = widget.locator(f'input[type="number"][name="{name}"]')
    field.fill(str(value))
    field.press("Enter")


def paste_number(widget, name, text):
    """Paste text over the number field's value from the clipboard (Ctrl+V), then press Enter."""
    field = widget.locator(f'input[type="number"][name="{name}"]')
    field.page.evaluate("text => navigator.clipboard.writeText(text)", text)
    field.select_text()
    field.press("Control+V")
    field.press("Enter")


def test_first_paint_is_mha_core_then_python_runs_in_a_worker(page, page_log, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    assert widget.get_attribute("data-state") == "initial"
    want = expected(mha_core.shape_report(**form_config(widget)))
    assert shown(widget, want) == want  # pre-rendered at build time, before Python starts
    assert 'wasm-unsafe-eval' in page.locator('meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    prerendered = widget.locator('[data-output="results"]').inner_text()
    wait_ready(page)
    expect(widget.locator("[data-mha-status]")).to_contain_text("Python ready")
    config = form_config(widget)
    set_number(widget, "batch", config["batch"] + 1)
    assert_shows(widget, **{**config, "batch": config["batch"] + 1})
    set_number(widget, "batch", config["batch"])
    assert_shows(widget, **config)
    assert widget.locator('[data-output="results"]').inner_text() == prerendered  # same text from Python
    wasm = [url for url in page_log.requests if url.endswith("/assets/pyodide/pyodide.asm.wasm.gz")]
    assert wasm and wasm[0].startswith(site_url), page_log.requests  # self-hosted, under the sub-path


def test_number_fields_and_sliders_recompute_in_the_browser(fresh_widget):
    widget = fresh_widget("shapes")
    config = form_config(widget)
    for name, value in [("d_model", 768), ("n_heads", 12), ("seq_len", 1000), ("batch", 3)]:
        set_number(widget, name, value)
        config[name] = value
        assert_shows(widget, **config)
    heads = slider(widget, "n_heads")  # steps through the divisors of d_model
    assert heads.get_attribute("data-values") == ",".join(str(h) for h in range(1, 129) if 768 % h == 0)
    heads.press("ArrowLeft")  # 12 -> 8
    expect(number(widget, "n_heads")).to_have_value("8")
    assert_shows(widget, **{**config, "n_heads": 8})
    n = slider(widget, "seq_len")  # powers of two; a typed value sits at the nearest and is announced as typed
    assert n.get_attribute("aria-valuetext") == "1000" and sliders(widget)["seq_len"] == "1024"
    n.press("ArrowRight")
    expect(number(widget, "seq_len")).to_have_value("2048")
    assert_shows(widget, **{**config, "n_heads": 8, "seq_len": 2048})
    expect(widget.locator('[data-output="totals"]')).to_have_text(
        shapes_view(**{**config, "n_heads": 8, "seq_len": 2048})["outputs"]["totals"]["text"])
    n.press("Home")  # the whole range in a few steps: 1 ... 131,072
    expect(number(widget, "seq_len")).to_have_value("1")
    n.press("End")
    expect(number(widget, "seq_len")).to_have_value("131072")
    set_number(widget, "d_model", 640)  # h's steps follow d_model
    expect(heads).to_have_attribute("data-values", ",".join(str(h) for h in range(1, 129) if 640 % h == 0))
    assert_shows(widget, **{**config, "d_model": 640, "n_heads": 8, "seq_len": 131072})
    set_number(widget, "n_heads", 7)  # the number field takes any value, even one that does not divide
    assert_shows(widget, **{**config, "d_model": 640, "n_heads": 7, "seq_len": 131072})


def test_the_page_places_the_sliders_before_python(page, site_url, shapes_path, built_site):
    """The built page carries each slider's steps (powers of two) or rule (h: the divisors of d_model up to a
    cap), never a position: sliders.js places each at the step nearest its field, then shows it."""
    html = (built_site / shapes_path / "index.html").read_text(encoding="utf-8")
    shapes = html.split('data-mha-widget="shapes"')[1].split("data-mha-widget=")[0]  # not the page's other widgets
    ranges = re.findall(r'<input type="range"[^>]*>', shapes)
    assert ranges and not any(" value=" in r for r in ranges), ranges
    hold_python(page)
    widget = open_widget(page, site_url, shapes_path)
    placed = widget.evaluate("""root => [...root.querySelectorAll('input[type="range"]')].map(s => ({name: s.name,
      placed: s.hasAttribute("data-placed"), visible: getComputedStyle(s).visibility === "visible",
      steps: s.dataset.values.split(",").map(Number), index: s.valueAsNumber, max: Number(s.max)}))""")
    config = form_config(widget)
    assert [s["name"] for s in placed] == ["d_model", "n_heads", "seq_len", "batch"]
    for s in placed:
        assert s["placed"] and s["visible"] and s["max"] == len(s["steps"]) - 1, s
        nearest = min(range(len(s["steps"])), key=lambda i: abs(math.log2(s["steps"][i] / config[s["name"]])))
        assert s["index"] == nearest, (s, config[s["name"]])
    heads = next(s for s in placed if s["name"] == "n_heads")
    assert heads["steps"] == [h for h in range(1, 129) if config["d_model"] % h == 0]
    assert widget.get_attribute("data-state") == "initial"  # all before Python


@pytest.mark.before_python
def test_an_empty_or_invalid_field_leaves_its_slider(page, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    before = sliders(widget)
    for name in ("d_model", "n_heads", "seq_len", "batch"):
        for bad in ("", "0", "2.5"):
            set_number(widget, name, bad)
            expect(number(widget, name)).to_have_attribute("aria-invalid", "true")
            assert sliders(widget) == before, (name, bad)
        set_number(widget, name, widget.evaluate(FORM_DEFAULTS)[name])
    expect(widget.locator('[data-output="input-error"]')).to_be_hidden()


@pytest.mark.before_python
def test_a_size_past_the_limit_is_refused_in_words_and_the_slider_stays(page, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    before = sliders(widget)
    number(widget, "d_model").fill("100000000")  # typed, no Enter: refused at once
    error = widget.locator('[data-output="input-error"]')
    expect(error).to_have_text(f"d_model must be a whole number from 1 to {mha_core.LIMITS['d_model']:,}.")
    expect(number(widget, "d_model")).to_have_value("100000000")  # not clipped
    assert sliders(widget) == before
    expect_stale(widget, True)


def test_a_number_typed_is_computed_without_enter(fresh_widget):
    widget = fresh_widget("shapes")
    number(widget, "n_heads").fill("16")  # no Enter, no Tab
    assert_shows(widget, **{**form_config(widget), "n_heads": 16})
    expect_stale(widget, False)


def test_divisibility_message_and_clickable_suggestions(fresh_widget):
    widget = fresh_widget("shapes")
    config = {**form_config(widget), "d_model": 512, "n_heads": 6}
    set_number(widget, "d_model", 512)
    set_number(widget, "n_heads", 6)
    assert_shows(widget, **config)
    assert widget.locator('[data-output="results"]').get_attribute("data-stale") == "true"
    first = widget.locator('[data-output="suggestions"] button').first
    name, value = first.get_attribute("data-name"), int(first.get_attribute("data-value"))
    first.click()
    assert_shows(widget, **{**config, name: value})
    assert widget.locator('[data-output="results"]').get_attribute("data-stale") == "false"
    set_number(widget, name, config[name])
    assert_shows(widget, **config)
    widget.get_by_role("button", name="d_head = 85").click()  # an explicit head width: 6 heads of 85
    expect(widget.locator("details")).to_have_attribute("open", "")
    expect(number(widget, "d_head")).to_have_value("85")
    assert_shows(widget, **config, d_head=85)


def test_advanced_controls_and_presets(fresh_widget):
    widget = fresh_widget("shapes")
    widget.locator("details summary").click()
    config = {**form_config(widget), "d_model": 512, "n_heads": 8}
    set_number(widget, "n_kv_heads", 2)
    assert_shows(widget, **config, n_kv_heads=2)
    expect(widget.locator('[data-output="kind"]')).to_have_text("grouped-query")
    widget.locator('input[name="bias"]').uncheck()
    widget.locator('select[name="dtype_bytes"]').select_option("2")
    set_number(widget, "d_head", 96)
    assert_shows(widget, **config, n_kv_heads=2, d_head=96, bias=False, dtype_bytes=2)
    preset = PRESETS["llama3-8b"]
    widget.locator('select[name="preset"]').select_option(preset.key)
    llama3 = {**config, "d_model": preset.d_model, "n_heads": preset.n_heads, "seq_len": preset.context,
              "n_kv_heads": preset.n_kv_heads, "bias": preset.bias, "dtype_bytes": 2, "n_layers": preset.n_layers}
    assert_shows(widget, **llama3)
    report = mha_core.shape_report(**llama3)
    kv, model = widget.locator('[data-output="kv_cache"]'), widget.locator('[data-output="kv_cache_model"]')
    expect(model).to_have_attribute("data-value", str(report["kv_cache_model_bytes"]))
    assert report["kv_cache_model_bytes"] == 32 * report["kv_cache_bytes"]
    expect(kv).to_have_text(shapes_display(report)["totals"]["kv_cache"]["text"])  # "this layer"
    expect(model).to_have_text(shapes_display(report)["totals"]["kv_cache_model"]["text"])
    expect(widget.locator('[data-output="n_layers"]')).to_have_text("32 layers")
    expect(widget.locator("dl")).to_contain_text("KV cache, this layer")
    expect(widget.locator("dl")).to_contain_text("FLOPs of one forward pass, this layer")
    falcon = PRESETS["falcon-7b"]
    widget.locator('select[name="preset"]').select_option(falcon.key)
    expect(widget.locator('[data-output="check"]')).to_have_text(
        "OK: 71 heads of width d_head=64, sharing 1 key/value head.")


def test_state_lives_in_the_url(page, site_url, shapes_path):
    config = {"d_model": 768, "n_heads": 12, "seq_len": 64, "batch": 4}
    query = "?" + "&".join(f"{k}={v}" for k, v in config.items())
    widget = open_widget(page, site_url, shapes_path, query)
    assert {k: v for k, v in form_config(widget).items() if k in config} == config
    expect(widget.locator("details")).not_to_have_attribute("open", "")  # nothing in "More" was linked
    wait_ready(page)
    assert_shows(widget, **form_config(widget))
    set_number(widget, "seq_len", 128)
    assert_shows(widget, **{**form_config(widget), "seq_len": 128})
    expect(page).to_have_url(re.compile(r"\?d_model=768&n_heads=12&seq_len=128&batch=4$"))  # only what differs
    hold_worker(page)  # what the reload is checked for comes before Python: none starts again
    page.reload()
    widget = page.locator('[data-mha-widget="shapes"]').first
    assert form_config(widget)["seq_len"] == 128
    defaults = widget.evaluate(FORM_DEFAULTS)
    for name in config:
        set_number(widget, name, defaults[name])
    expect(page).to_have_url(re.compile(r"/parameters-and-shapes/$"))  # all defaults: nothing to keep


def test_a_chosen_preset_is_kept_in_the_url(fresh_widget):
    """On the shared page: reloaded, it has Python ready again for the later tests."""
    widget = fresh_widget("shapes")
    page = widget.page
    widget.locator("details summary").click()
    widget.locator('select[name="preset"]').select_option("gemma-7b")
    set_number(widget, "batch", 1)
    expect(page).to_have_url(re.compile(r"\?preset=gemma-7b&batch=1$"))
    page.reload()
    widget = page.locator('[data-mha-widget="shapes"]').first
    expect(widget.locator('select[name="preset"]')).to_have_value("gemma-7b")
    gemma = PRESETS["gemma-7b"]
    assert form_config(widget) == {**{k: int(v) for k, v in widget.evaluate(FORM_DEFAULTS).items() if v},
                                   "d_model": gemma.d_model, "n_heads": gemma.n_heads, "d_head": gemma.d_head,
                                   "seq_len": gemma.context, "batch": 1, "n_layers": gemma.n_layers}
    wait_ready(page)
    assert_shows(widget, **form_config(widget), bias=False)


def test_junk_in_the_url_is_ignored_with_a_note(page, site_url, shapes_path):
    junk = "?d_model=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&n_heads=abc&batch=-5&seq_len=1e3"
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    widget = open_widget(page, site_url, shapes_path, junk)
    note = widget.locator('[data-output="note"]')
    expect(note).to_be_visible()
    expect(note).to_contain_text("d_model=<img src=x onerror=alert(1)>")
    for key in ("n_heads=abc", "batch=-5", "seq_len=1e3"):
        expect(note).to_contain_text(key)
    assert widget.locator("img").count() == 0 and not dialogs
    assert widget.get_attribute("data-state") == "initial"  # nothing valid to apply
    wait_ready(page)
    set_number(widget, "batch", 5)
    assert_shows(widget, **{**form_config(widget), "batch": 5})


def expect_stale(widget, stale: bool):
    """The check, its suggestions and the results are marked (or not) as not matching the form; marked ones
    are told apart by a dashed rule and a label, with their text at full strength (no fading)."""
    for name in ("check", "suggestions", "totals", "results"):
        expect(widget.locator(f'[data-output="{name}"]')).to_have_attribute("data-stale", str(stale).lower())
    look = widget.evaluate("""root => {
      const results = root.querySelector('[data-output="results"]'), check = root.querySelector('[data-output="check"]');
      return { opacity: getComputedStyle(results).opacity, outline: getComputedStyle(results).outlineStyle,
               label: getComputedStyle(results, "::before").content, rule: getComputedStyle(check).borderLeftStyle };
    }""")
    assert look["opacity"] == "1"
    if stale:
        assert look["outline"] == "dashed" and look["rule"] == "dashed" and "Earlier result" in look["label"]
    else:
        assert look["outline"] == "none" and look["rule"] == "solid" and look["label"] == "none"


def test_changes_before_python_is_ready_are_marked_then_applied(page, site_url, shapes_path):
    release = hold_python(page)
    widget = open_widget(page, site_url, shapes_path)
    expect_stale(widget, False)
    set_number(widget, "n_heads", 16)
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('[data-output="pending"]')).to_have_text("Waiting for Python to compute h = 16…")
    expect_stale(widget, True)
    expect(widget.locator('[data-output="check"]')).to_have_text("OK: 8 heads of width d_head=64.")  # the old one, marked
    assert page.locator("html").get_attribute("data-mha-runtime") != "ready"
    set_number(widget, "seq_len", 128)
    expect(widget.locator('[data-output="pending"]')).to_have_text("Waiting for Python to compute h = 16, n = 128…")
    release()
    wait_ready(page)
    assert_shows(widget, **{**form_config(widget), "n_heads": 16, "seq_len": 128})
    expect(widget.locator('[data-output="pending"]')).to_be_hidden()
    expect_stale(widget, False)


# Holds the page's calls to Python (the answer is late) until window.__releaseCalls(); moves the n slider one step
# right and says, at once, whether the waiting line is hidden and what it says.
HOLD_CALLS = """() => {
  const post = Worker.prototype.postMessage, held = [];
  Worker.prototype.postMessage = function (message, transfer) {
    if (message?.type !== "call") return post.call(this, message, transfer);
    held.push(() => post.call(this, message, transfer));
  };
  window.__releaseCalls = () => {
    Worker.prototype.postMessage = post;
    held.splice(0).forEach((send) => send());
  };
}"""
MOVE_N = """root => {
  const slider = root.querySelector('input[type="range"][name="seq_len"]');
  slider.value = String(slider.valueAsNumber + 1);
  slider.dispatchEvent(new Event("input", { bubbles: true }));
  const pending = root.querySelector('[data-output="pending"]');
  return { hidden: pending.hidden, text: pending.textContent, state: root.dataset.state };
}"""


def test_with_python_ready_the_waiting_line_waits_for_the_results_to_be_marked(fresh_widget):
    """A quick answer moves nothing on the page: the line saying what the widget waits for comes only with the
    stale marks (after a moment), and then follows each change at once."""
    widget = fresh_widget("shapes")
    config, n = form_config(widget), int(sliders(widget)["seq_len"])  # the slider's step: the power of two nearest
    widget.page.evaluate(HOLD_CALLS)
    try:
        assert widget.evaluate(MOVE_N) == {"hidden": True, "text": "", "state": "busy"}
        expect_stale(widget, True)
        expect(widget.locator('[data-output="pending"]')).to_have_text(f"Waiting for Python to compute n = {2 * n}…")
        moved = widget.evaluate(MOVE_N)
        assert not moved["hidden"] and moved["text"] == f"Waiting for Python to compute n = {4 * n}…"
    finally:
        widget.page.evaluate("() => window.__releaseCalls()")
    assert_shows(widget, **{**config, "seq_len": 4 * n})
    expect(widget.locator('[data-output="pending"]')).to_be_hidden()
    expect_stale(widget, False)


def test_after_a_failure_the_old_results_stay_marked_with_the_reason(page, page_log, site_url, shapes_path):
    page_log.allow(r"Failed to load resource")
    page.context.route(re.compile(r".*/pyodide\.asm\.wasm\.gz$"), lambda route: route.fulfill(status=404, body="missing"))
    widget = open_widget(page, site_url, shapes_path)
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error")
    set_number(widget, "n_heads", 16)
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator('[data-output="input-error"]')).to_contain_text("Could not compute h = 16: ")
    expect(widget.locator('[data-output="pending"]')).to_be_hidden()
    expect_stale(widget, True)  # the pre-rendered "OK: 8 heads" stays, marked as an earlier result, not green
    green = widget.evaluate("""root => getComputedStyle(root.querySelector('[data-output="check"]')).borderLeftColor""")
    assert green != "rgb(46, 157, 79)"


def test_busy_is_styled(fresh_widget):
    """Busy as a reader sees it while Python's answer is late (the calls held), its waiting line shown."""
    widget = fresh_widget("shapes")
    widget.page.evaluate(HOLD_CALLS)
    try:
        set_number(widget, "batch", 3)
        expect(widget).to_have_attribute("data-state", "busy")
        expect(widget.locator('[data-output="pending"]')).to_be_visible()
        look = widget.evaluate("""root => ({ cursor: getComputedStyle(root).cursor,
          spinner: getComputedStyle(root.querySelector('[data-output="pending"]'), "::before").animationName })""")
        assert look == {"cursor": "progress", "spinner": "mha-shapes-spin"}
    finally:
        widget.page.evaluate("() => window.__releaseCalls()")
    assert_shows(widget, **{**form_config(widget), "batch": 3})


def test_invalid_typing_gets_an_inline_message_and_recovers(fresh_widget):
    """Every number field: each bad value gets the message (no page error: see conftest), pasted letters
    leave the field empty (Chromium keeps no letters in it), and a valid value is computed at once."""
    widget = fresh_widget("shapes")
    widget.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    widget.locator("details summary").click()
    config = form_config(widget)
    error = widget.locator('[data-output="input-error"]')
    good = {"d_model": 256, "n_heads": 4, "seq_len": 33, "batch": 3, "n_layers": 12, "n_kv_heads": 2, "d_head": 96}
    assert sorted(widget.evaluate(FORM)) == sorted(good)
    for name, value in good.items():
        field = widget.locator(f'input[type="number"][name="{name}"]')
        for bad in BAD_NUMBERS[name in OPTIONAL:]:  # an optional field may be empty
            set_number(widget, name, bad)
            expect(error).to_contain_text(f"{name} must be a whole number")
            expect(field).to_have_attribute("aria-invalid", "true")
        paste_number(widget, name, "abc")
        expect(field).to_have_value("")
        if name in OPTIONAL:
            expect(error).to_be_hidden()
        else:
            expect(error).to_contain_text(f"{name} must be a whole number")
        set_number(widget, name, value)
        expect(error).to_be_hidden()
        config[name] = value
        assert_shows(widget, **config)


TENSOR_ROWS = """root => [...root.querySelectorAll("[data-tensor]")].map(row => {
  const cells = [...row.querySelectorAll("th, td")].map(c => c.getBoundingClientRect());
  const region = row.closest(".mha-shapes__scroll");
  return { name: row.dataset.tensor, right: Math.max(...cells.map(c => c.right)), left: Math.min(...cells.map(c => c.left)),
           height: row.getBoundingClientRect().height, visible: cells.every(c => c.width > 0 && c.height > 0),
           scrolls: region.scrollWidth > region.clientWidth };
})"""


def test_labelled_and_usable_on_a_phone_in_both_schemes(browser, site_url, shapes_path):
    """At 390 px every tensor's shape, size and view-or-copy note is on screen: no sideways scrolling."""
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 390, "height": 844}, color_scheme=scheme,
                                      is_mobile=True, has_touch=True)
        page = context.new_page()
        hold_python(page)  # what is checked is the page before Python: no start races it
        widget = open_widget(page, site_url, shapes_path)
        unlabelled = widget.evaluate("""root => [...root.querySelectorAll("input, select")].filter(el =>
            !el.getAttribute("aria-label") && !(el.id && root.querySelector(`label[for="${el.id}"]`))).map(el => el.name)""")
        assert unlabelled == []
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"the page scrolls sideways on a phone ({width} px)"
        box = widget.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390
        rows = widget.evaluate(TENSOR_ROWS)
        assert [r["name"] for r in rows] == list(mha_core.shapes.TENSOR_NAMES)
        for row in rows:
            assert row["visible"] and not row["scrolls"] and row["left"] >= 0 and row["right"] <= 390, row
        merged = widget.locator('[data-tensor="merged"]')
        for field in ("shape", "numel", "bytes", "layout"):
            expect(merged.locator(f'[data-output="{field}"]')).to_be_visible()
        contrast = widget.evaluate(CONTRAST, '[data-output="check"]')
        assert contrast >= 4.5, f"{scheme}: contrast {contrast:.1f} of the check message"
        totals, first = widget.locator('[data-output="totals"]'), widget.locator('input[type="range"]').first
        expect(totals).to_have_text(shapes_view(**form_config(widget))["outputs"]["totals"]["text"])
        assert conftest.on_one_screen(page, first, totals)  # the totals are read as a slider moves
        context.close()


@pytest.mark.before_python
def test_the_tensor_table_fits_a_desktop_column(page, site_url, shapes_path):
    page.set_viewport_size({"width": 1280, "height": 800})
    widget = open_widget(page, site_url, shapes_path)
    rows = widget.evaluate(TENSOR_ROWS)
    assert not any(r["scrolls"] for r in rows), rows
    expect(widget.locator(".mha-shapes__table--tensors thead")).to_be_visible()  # a table, not cards


SHOWN_TEXT = """root => ({
  tensors: [...root.querySelectorAll("[data-tensor]")].map(r => ["shape", "numel", "bytes", "layout"].map(
    f => r.querySelector(`[data-output="${f}"]`).textContent)),
  params: [...root.querySelectorAll("[data-param]")].map(r => r.querySelector('[data-output="numel"]').textContent),
  totals: Object.fromEntries(["params", "params_bytes", "kv_cache", "kv_cache_model", "flops"].map(
    k => [k, [root.querySelector(`[data-output="${k}"]`).dataset.value, root.querySelector(`[data-output="${k}"]`).textContent]])),
})"""


def test_counts_are_exact_at_the_limits(fresh_widget):
    """Past 2**53 JavaScript's numbers lose digits; the widget shows Python's exact text at the largest sizes."""
    widget = fresh_widget("shapes")
    widget.locator("details summary").click()
    widget.locator('select[name="dtype_bytes"]').select_option("8")
    config = {"d_model": mha_core.LIMITS["d_model"], "n_heads": mha_core.LIMITS["n_heads"],
              "seq_len": mha_core.LIMITS["seq_len"], "batch": mha_core.LIMITS["batch"],
              "n_layers": mha_core.LIMITS["n_layers"]}
    for name, value in config.items():
        set_number(widget, name, value)
    full = {**form_config(widget), "dtype_bytes": 8}
    assert_shows(widget, **full)
    shown = shapes_display(mha_core.shape_report(**full))
    assert widget.evaluate(SHOWN_TEXT) == {
        "tensors": [[t["shape_text"], t["numel"], t["bytes"], t["note"]] for t in shown["tensors"]],
        "params": [p["numel"] for p in shown["params"]],
        "totals": {k: [v["value"], v["text"]] for k, v in shown["totals"].items()},
    }
    scores = widget.locator('[data-tensor="scores"] [data-output="numel"]')
    expect(scores).to_have_text(f"{2**16 * 2**16 * 2**24 * 2**24:,}")  # 2**80, every digit


# Pyodide's files whole (the standard library untrimmed, nothing gzip'd) through Playwright's pipe, one after another:
# some 6 s of the start on an idle 2-core machine, and several times that when the run's other workers load it.
CDN_READY_TIMEOUT_MS = 90_000


def test_pyodide_from_the_cdn_option(browser, cdn_site):
    """--pyodide-cdn: the same files from jsDelivr (answered here from the local cache, never fetched)."""
    site = cdn_site
    assert not (site / "assets" / "pyodide").exists()
    server, url = serve(site)
    files = assets.fetch_pyodide()
    context = browser.new_context()
    context.route(assets.PYODIDE_CDN + "**", lambda route: route.fulfill(
        path=files / route.request.url.split("?")[0].rsplit("/", 1)[-1],
        headers={"access-control-allow-origin": "*",
                 "content-type": serving.MIME_TYPES.get(Path(route.request.url).suffix, "application/octet-stream")}))
    try:
        page = context.new_page()
        widget = open_widget(page, url, pages_with(site, 'data-mha-widget="shapes"')[0])
        wait_ready(page, timeout=CDN_READY_TIMEOUT_MS)
        set_number(widget, "batch", 9)
        assert_shows(widget, **{**form_config(widget), "batch": 9})
    finally:
        context.close()
        server.shutdown()


CONTRAST = """(root, selector) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
  const el = root.querySelector(selector);
  let bg = el;
  while (bg && getComputedStyle(bg).backgroundColor.match(/rgba\\(.*, 0\\)|transparent/)) bg = bg.parentElement;
  const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(getComputedStyle(bg || document.body).backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_the_kv_cache_of_an_encoder_decoder_and_of_an_encoder(fresh_widget):
    """Transformer base: L counts the decoder's self-attention and cross-attention layers, and a note says so;
    BERT, an encoder, keeps no KV cache: the widget says "none", not a size."""
    widget = fresh_widget("shapes")
    widget.locator("details summary").click()
    note = widget.locator('[data-output="cache_note"]')
    expect(note).to_be_hidden()
    base = PRESETS["transformer-base"]
    widget.locator('select[name="preset"]').select_option(base.key)
    expect(number(widget, "n_layers")).to_have_value(str(base.kv_layers))
    config = form_config(widget)
    report = mha_core.shape_report(**config)
    assert config["n_layers"] == 12 and report["kv_cache_model_bytes"] == 12 * report["kv_cache_bytes"]
    expect(widget.locator('[data-output="kv_cache_model"]')).to_have_attribute("data-value", str(report["kv_cache_model_bytes"]))
    expect(note).to_have_text(base.cache_note)
    expect(note).to_be_visible()
    bert = PRESETS["bert-base"]
    widget.locator('select[name="preset"]').select_option(bert.key)
    expect(note).to_have_text(bert.cache_note)
    for name in ("kv_cache", "kv_cache_model"):
        expect(widget.locator(f'[data-output="{name}"]')).to_have_text("none")
        expect(widget.locator(f'[data-output="{name}"]')).to_have_attribute("data-value", "0")
    expect(widget.locator('[data-output="totals"]')).to_contain_text("no KV cache")  # the headline agrees
    set_number(widget, "n_heads", 8)  # no longer BERT: sizes again, and no note
    expect(note).to_be_hidden()
    assert_shows(widget, **form_config(widget))
