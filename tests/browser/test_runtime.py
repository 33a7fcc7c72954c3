"""The runtime when things go wrong, on the real built site: Pyodide's files missing or corrupted (Playwright
routing), the worker crashing or ending, Python failing fatally, an exception
inside one call. Each failure must bring <html data-mha-runtime="error"> within 30 s (in practice within
seconds: the worker checks every file's sha256 and reports what it sees), a clear message with a Retry that works
once the cause is gone, the pre-rendered values still shown, and calls made later unharmed."""
from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import mha_core
import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

from conftest import READY_TIMEOUT_MS, show_widget, wait_ready
from sitebuild.serving import MIME_TYPES
from sitevisit.page import show_sentence
from sitevisit.site import MOUNT
from tests.helpers import READ, SENTENCE, ask, check_answered, check_layout, expected, form_config, shown, tokens_of

NESTED = 10_000  # JSON arrays nested this deep overflow the wasm stack in Python's json parser


# How a routed file is answered, given the built file's bytes and type.

def missing(route, body: bytes, mime: str):
    route.fulfill(status=404, body="missing")


def corrupted(route, body: bytes, mime: str):
    """The real file with one byte changed (inside the compression, for a .gz): another sha256."""
    gzipped = route.request.url.endswith(".gz")
    changed = bytearray(gzip.decompress(body) if gzipped else body)
    changed[len(changed) // 2] ^= 0xFF
    route.fulfill(body=gzip.compress(bytes(changed)) if gzipped else bytes(changed), content_type=mime)


def throwing(route, body: bytes, mime: str):
    route.fulfill(body='throw new Error("this worker is broken");', content_type="text/javascript")


def answered_by(answer, site: Path):
    """A route handler answering each request with answer(route, the built file's bytes, its type)."""
    def handle(route):
        path = urlsplit(route.request.url).path.removeprefix(MOUNT)
        try:
            answer(route, (site / path).read_bytes(), MIME_TYPES[Path(path).suffix])
        except PlaywrightError:  # the request was dropped meanwhile: its worker was ended
            pass
    return handle


WASM = r"/assets/pyodide/pyodide\.asm\.wasm\.gz$"
NOT_BUILT = "is not the file this site was built with"

# id: (widget, the URL routed, how it is answered, what the reader is told)
FAILURES = {
    "pyodide-file-404": ("shapes", WASM, missing, r"pyodide\.asm\.wasm\.gz: HTTP 404"),
    "wasm-wrong-hash": ("heads", WASM, corrupted, rf"pyodide\.asm\.wasm {NOT_BUILT}"),
    "numpy-wrong-hash": ("shapes", r"/assets/pyodide/numpy-[^/]+\.whl\.gz$", corrupted, rf"numpy-\S+\.whl {NOT_BUILT}"),
    "pyodide-mjs-wrong-hash": ("heads", r"/assets/pyodide/pyodide\.mjs$", corrupted, rf"pyodide\.mjs {NOT_BUILT}"),
    "mha_core-wheel-tampered": ("heads", r"/assets/wheels/mha_core-[^/]+\.whl\.gz$", corrupted,
                                rf"mha_core-\S+\.whl {NOT_BUILT}"),
    "worker-crashes": ("heads", r"/runtime/worker\.js$", throwing, r"The Python worker stopped: .*this worker is broken"),
}


# ---------------------------------------------------------------- each widget: its first paint, a change

def check_prerendered(name, widget) -> None:
    """The widget still shows the values computed at build time, for its pre-rendered input."""
    if name == "shapes":
        want = expected(mha_core.shape_report(**form_config(widget)))
        assert shown(widget, want) == want
    else:
        sentence = widget.locator('textarea[name="sentence"]').input_value()
        read = widget.evaluate(READ)
        check_layout(read, tokens_of(sentence))
        core = mha_core.head_patterns(sentence)["heads"][widget.get_attribute("data-head")]
        assert all(float(w) == pytest.approx(core[q][k], abs=1e-4) for q, k, w in read["cells"])
    expect(widget.locator('[data-output="results"], table[role="grid"]')).to_be_visible()


CHANGES = {"shapes": (5, 6), "heads": (SENTENCE, "a b a b")}
REFUSED = {"shapes": '[data-output="input-error"]', "heads": '[data-message="error"]'}  # where a refusal is said


def expect_error(page, message: str) -> None:
    show_widget(page)
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error", timeout=READY_TIMEOUT_MS)
    status = page.locator("[data-mha-status]").first
    expect(status).to_contain_text(re.compile(message))
    expect(status.get_by_role("button", name="Retry")).to_be_visible()


def retry_and_check(page, name, widget) -> None:
    """Retry, pressed from the keyboard: Python starts, the focus stays in the widget (the button hid itself), the
    widget computes what the reader asked meanwhile, and a later change works."""
    first, then = CHANGES[name]
    page.locator("[data-mha-status]").first.get_by_role("button", name="Retry").press("Enter")
    wait_ready(page)
    focused = "() => document.activeElement.closest('[data-mha-widget]')?.dataset.mhaWidget ?? null"
    assert page.evaluate(focused) == page.locator("[data-mha-status]").first.evaluate(
        "el => el.closest('[data-mha-widget]').dataset.mhaWidget")
    check_answered(name, widget, first)
    expect(widget.locator(REFUSED[name])).to_be_hidden()
    ask(name, widget, then)
    check_answered(name, widget, then)


def fail_a_change(name, widget) -> None:
    """A change made while the runtime is broken is refused with a message; the values shown stay."""
    ask(name, widget, CHANGES[name][0])
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator(REFUSED[name])).to_contain_text("Could not compute")


# ---------------------------------------------------------------- tests

@pytest.mark.parametrize("failure", FAILURES)
def test_a_broken_start_says_why_keeps_the_values_and_retry_recovers(page, page_log, built_site, site_url, widget_path,
                                                                    failure):
    name, url, answer, message = FAILURES[failure]
    page_log.allow(r"Failed to load resource|this worker is broken")
    pattern = re.compile(".*" + url)
    page.context.route(pattern, answered_by(answer, built_site))
    widget = page.locator(f'[data-mha-widget="{name}"]').first
    page.goto(site_url + widget_path(name))
    expect_error(page, message)
    check_prerendered(name, widget)
    fail_a_change(name, widget)
    page.context.unroute(pattern)
    retry_and_check(page, name, widget)


def test_the_worker_ending_after_the_start_is_an_error_and_retry_recovers(page, site_url, heads_path):
    widget = page.locator('[data-mha-widget="heads"]').first
    page.goto(site_url + heads_path)
    wait_ready(page)
    worker = next(w for w in page.workers if w.url.endswith("/runtime/worker.js"))
    worker.evaluate("setTimeout(() => close(), 0)")  # ends it as a crash would: no word to the page
    expect_error(page, "The Python worker stopped unexpectedly")
    check_prerendered("heads", widget)
    fail_a_change("heads", widget)
    retry_and_check(page, "heads", widget)


def test_a_fatal_python_error_after_the_start_is_an_error_and_retry_recovers(page, page_log, site_url, shapes_path):
    """A call whose JSON is nested deeper than the wasm stack reaches makes Pyodide fail fatally (a real path
    through the bridge): the call is refused, the runtime says so, and nothing later waits on a dead Python."""
    page_log.allow(r"fatal|Maximum call stack|RangeError")
    widget = page.locator('[data-mha-widget="shapes"]').first
    page.goto(site_url + shapes_path)
    wait_ready(page)
    refused = page.evaluate("""async ([url, depth]) => {
      const { call } = await import(url);
      let deep = 1;
      for (let i = 0; i < depth; i++) deep = [deep];
      try { await call("shapes_view", { d_model: deep }); return null; } catch (err) { return err.message; }
    }""", [site_url + "assets/widgets/runtime/bridge.js", NESTED])
    assert refused and refused.startswith("Python stopped after a fatal error"), refused
    expect_error(page, "Python stopped after a fatal error: .*Maximum call stack size exceeded")
    check_prerendered("shapes", widget)
    fail_a_change("shapes", widget)
    retry_and_check(page, "shapes", widget)


def test_an_exception_inside_a_call_is_shown_and_the_next_call_works(page, site_url, heads_path):
    """Python refuses a call (a ValueError, or arguments the bridge rejects): the widget or the caller gets
    the message, the runtime stays ready, and the next call is answered."""
    widget = page.locator('[data-mha-widget="heads"]').first
    page.goto(site_url + heads_path)
    wait_ready(page)
    error = widget.locator('[data-message="error"]')
    ask("heads", widget, "word " * 25_000)  # 125,000 characters: more than heads_view reads
    expect(widget).to_have_attribute("data-state", "error")
    expect(error).to_have_text(re.compile(r"^Your sentence is too long: 125,000 char"))  # a refusal, said as it is
    assert page.locator("html").get_attribute("data-mha-runtime") == "ready"
    show_sentence(widget, SENTENCE)
    check_layout(widget.evaluate(READ), tokens_of(SENTENCE))
    expect(error).to_be_hidden()
    answers = page.evaluate("""async (url) => {
      const { call, CallError, Refusal } = await import(url);
      const answer = (fn, args) => call(fn, args).then((r) => ["ok", r], (e) => [e instanceof CallError, e.message, e instanceof Refusal]);
      return [await answer("no_such_function", {}), await answer("heads_view", { text_or_tokens: [1, 2] }),
              await answer("check_config", { d_model: 8, n_heads: 2 })];
    }""", site_url + "assets/widgets/runtime/bridge.js")
    assert answers[0][0] is True and "unknown function 'no_such_function'" in answers[0][1] and answers[0][2] is False
    assert answers[1][0] is True and "Your sentence must be" in answers[1][1] and answers[1][2] is True
    assert answers[2] == ["ok", json.loads(json.dumps(mha_core.check_config(d_model=8, n_heads=2)))]
    assert page.locator("html").get_attribute("data-mha-runtime") == "ready"


@pytest.mark.parametrize("name,change", [("memory", 4), ("worked", 2), ("one-vs-many", "Home")])
def test_after_a_failed_start_the_small_widgets_mark_a_change_stale_and_retry_computes_it(
        page, page_log, built_site, site_url, widget_path, name, change):
    """A change made while Python cannot start is refused beside the controls and what is shown is marked
    stale; Retry brings Python up and the widget computes the change the reader made (the shared life cycle)."""
    page_log.allow(r"Failed to load resource")
    pattern = re.compile(".*" + WASM)
    page.context.route(pattern, answered_by(missing, built_site))
    widget = page.locator(f'[data-mha-widget="{name}"]').first
    page.goto(site_url + widget_path(name))
    expect_error(page, r"pyodide\.asm\.wasm\.gz: HTTP 404")
    ask(name, widget, change)
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator('[data-message="error"]')).to_contain_text("Could not")
    expect(widget.locator("[data-results]").first).to_have_attribute("data-stale", "true")
    page.context.unroute(pattern)
    page.locator("[data-mha-status]").first.get_by_role("button", name="Retry").click()
    wait_ready(page)
    check_answered(name, widget, change)
    expect(widget.locator('[data-message="error"]')).to_be_hidden()
    expect(widget.locator("[data-results]").first).to_have_attribute("data-stale", "false")
