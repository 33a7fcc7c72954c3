"""The shapes widget in Chromium: every value it shows after a real input change equals mha_core's,
computed here in CPython; the page makes no request off 127.0.0.1 and raises no error (see conftest)."""
from __future__ import annotations

import re
from pathlib import Path

import mha_core
from mha_core.presets import PRESETS
from playwright.sync_api import expect

import conftest
from conftest import wait_ready
from sitebuild import assets, serving, widgets
from tests.helpers import FORM, assert_shows, build_into, expected, form_config, pages_with, serve, shown


OPTIONAL = ("n_kv_heads", "d_head")  # empty means "derive it"
BAD_NUMBERS = ["", "-5", "0", "3.5", "1e12", "12345678901234567890"]


def open_widget(page, site_url, path, query=""):
    return conftest.open_widget(page, site_url + path + query, "shapes")


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
    wasm = [url for url in page_log.requests if url.endswith("/assets/pyodide/pyodide.asm.wasm")]
    assert wasm and wasm[0].startswith(site_url), page_log.requests  # self-hosted, under the sub-path


def test_number_fields_and_sliders_recompute_in_the_browser(page, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    wait_ready(page)
    config = form_config(widget)
    for name, value in [("d_model", 768), ("n_heads", 12), ("seq_len", 1024), ("batch", 3)]:
        set_number(widget, name, value)
        config[name] = value
        assert_shows(widget, **config)
    slider = widget.locator('input[type="range"][name="n_heads"]')
    slider.focus()
    slider.press("ArrowLeft")  # keyboard: 12 -> 11, which does not divide 768
    expect(widget.locator('input[type="number"][name="n_heads"]')).to_have_value("11")
    assert_shows(widget, **{**config, "n_heads": 11})


def test_divisibility_message_and_clickable_suggestions(page, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    wait_ready(page)
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


def test_advanced_controls_and_presets(page, site_url, shapes_path):
    widget = open_widget(page, site_url, shapes_path)
    wait_ready(page)
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
    assert_shows(widget, **{**config, "d_model": preset.d_model, "n_heads": preset.n_heads},
                 n_kv_heads=preset.n_kv_heads, bias=preset.bias, dtype_bytes=2)


def test_state_lives_in_the_url(page, site_url, shapes_path):
    config = {"d_model": 768, "n_heads": 12, "seq_len": 64, "batch": 4}
    query = "?" + "&".join(f"{k}={v}" for k, v in config.items())
    widget = open_widget(page, site_url, shapes_path, query)
    assert form_config(widget) == config
    wait_ready(page)
    assert_shows(widget, **config)
    set_number(widget, "seq_len", 128)
    assert_shows(widget, **{**config, "seq_len": 128})
    expect(page).to_have_url(re.compile(r"\?(?=.*\bseq_len=128\b)(?=.*\bd_model=768\b)"))
    page.reload()
    widget = page.locator('[data-mha-widget="shapes"]').first
    assert form_config(widget)["seq_len"] == 128


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


def test_changes_before_python_is_ready_are_applied_once_it_is(page, site_url, shapes_path):
    held, released = [], []  # the .wasm requests (Pyodide's, and the worker's check of its hash), held
    page.context.route(re.compile(r".*/pyodide\.asm\.wasm$"),  # back so that Python cannot be ready yet
                       lambda route: route.continue_() if released else held.append(route))
    widget = open_widget(page, site_url, shapes_path)
    set_number(widget, "batch", 7)
    expect(widget).to_have_attribute("data-state", "busy")
    for _ in range(200):  # until the worker has asked for the .wasm (Playwright dispatches the route here)
        if held:
            break
        page.wait_for_timeout(50)
    assert held and page.locator("html").get_attribute("data-mha-runtime") == "loading"
    released.append(True)
    for route in held:
        route.continue_()
    wait_ready(page)
    assert_shows(widget, **{**form_config(widget), "batch": 7})


def test_invalid_typing_gets_an_inline_message_and_recovers(page, site_url, shapes_path):
    """Every number field: each bad value gets the message (no page error: see conftest), pasted letters
    leave the field empty (Chromium keeps no letters in it), and a valid value is computed at once."""
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    widget = open_widget(page, site_url, shapes_path)
    wait_ready(page)
    widget.locator("details summary").click()
    config = form_config(widget)
    error = widget.locator('[data-output="input-error"]')
    good = {"d_model": 256, "n_heads": 4, "seq_len": 33, "batch": 3, "n_kv_heads": 2, "d_head": 96}
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


def test_labelled_and_usable_on_a_phone_in_both_schemes(browser, site_url, shapes_path):
    for scheme in ("light", "dark"):
        context = browser.new_context(viewport={"width": 375, "height": 740}, color_scheme=scheme)
        page = context.new_page()
        widget = open_widget(page, site_url, shapes_path)
        unlabelled = widget.evaluate("""root => [...root.querySelectorAll("input, select")].filter(el =>
            !el.getAttribute("aria-label") && !(el.id && root.querySelector(`label[for="${el.id}"]`))).map(el => el.name)""")
        assert unlabelled == []
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, f"the page scrolls sideways on a phone ({width} px)"
        box = widget.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375
        contrast = widget.evaluate(CONTRAST, '[data-output="check"]')
        assert contrast >= 4.5, f"{scheme}: contrast {contrast:.1f} of the check message"
        context.close()


def test_browser_and_build_format_numbers_alike(page, site_url, shapes_path):
    """render.js's formatters give widget.py's text, so Python's first answer rewrites no number."""
    shapes_widget = widgets.widget_module("shapes")
    values = [0, 1, 999, 1023, 1024, 1152, 1536, 10_240, 1_048_575, 1_050_624, 123_456_789_012, 2**50 + 12_345]
    page.goto(site_url + shapes_path)
    url = site_url + "assets/widgets/shapes/render.js"
    shown = page.evaluate("""async ([url, values]) => { const r = await import(url);
        return values.map(v => [r.fmtInt(v), r.fmtBytes(v), r.fmtFlops(v)]); }""", [url, values])
    assert shown == [[shapes_widget.fmt_int(v), shapes_widget.fmt_bytes(v), shapes_widget.fmt_flops(v)] for v in values]


def test_pyodide_from_the_cdn_option(browser, tmp_path_factory):
    """--pyodide-cdn: the same files from jsDelivr (answered here from the local cache, never fetched)."""
    site = build_into(tmp_path_factory.mktemp("cdn") / "site", "--pyodide-cdn")
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
        wait_ready(page)
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
