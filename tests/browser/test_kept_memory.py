"""The kept memory, on the real built site: a revisit restores Python from the memory the first visit kept
(downloading nothing, and without waiting for the page's own load), a restored Python answers as the fresh one
did, and a kept memory that is not intact, or that Python cannot restore, costs no more than a fresh start (or
an error with the reason, then Retry). Every other browser test starts in a fresh context."""
from __future__ import annotations

import contextlib
import re

import pytest
from conftest import (READY_TIMEOUT_MS, VIEWPORT, PageLog, change_batch, open_widget, status, wait_ready,
                      watch_context, watched_page)
from playwright.sync_api import expect

from sitevisit.network import PYTHON_FILES, throttled_site
from sitevisit.page import HEX, kept_memory
from tests.helpers import SENTENCE, assert_shows, form_config


# Replace the kept memory with body (null: the memory as kept), laid out as a memory is kept (memory.js, at
# memoryJs) or not; its recorded sha256 that of what is kept (intact), or of other bytes; its libraries as they
# were kept, or each handle moved by shift bytes.
REPLACE_MEMORY = """async ({ key, body, laidOut, intact, shift, memoryJs }) => {
  %s
  const store = await caches.open("mha-python");
  const kept = await store.match(key);
  const text = body === null ? null : new TextEncoder().encode(body);
  const bytes = text === null ? new Uint8Array(await kept.arrayBuffer())
    : laidOut ? (await import(memoryJs)).laidOut(text) : text;
  const sha = intact ? await hex(bytes) : await hex(new TextEncoder().encode("other bytes"));
  const libraries = JSON.parse(kept.headers.get("X-Python-Libraries"));
  libraries.libraries = libraries.libraries.map(([path, handle]) => [path, handle + shift]);
  const headers = { "X-Content-SHA256": sha, "X-Python-Libraries": JSON.stringify(libraries) };
  await store.put(key, new Response(bytes, { headers }));
}""" % HEX
# [bytes kept, bytes of the memory they hold] (its length: the first 32-bit word of what is kept).
KEPT_SIZES = """async (key) => {
  const kept = await (await (await caches.open("mha-python")).match(key)).arrayBuffer();
  return [kept.byteLength, new Uint32Array(kept, 0, 1)[0]];
}"""
RESTORED = "restored as your last visit left it"
ELAPSED = re.compile(r'"elapsed":"[^"]*"')
# Calls through most of NumPy (einsum, matmul, softmax, reshapes and copies, the trainer's first forward pass).
ANSWERS = """async ([url, sentence]) => {
  const { call } = await import(url);
  return JSON.stringify([await call("head_patterns", { text_or_tokens: sentence, ablate: ["previous_token"] }),
                         await call("worked_view", { seed: 3 }), await call("memory_view", { wrong: true }),
                         await call("shapes_view", { d_model: 96, n_heads: 6, seq_len: 7, batch: 2 }),
                         await call("training_start", { seed: 1 })]);
}"""


def test_a_revisit_restores_python_from_the_memory_the_first_visit_kept(browser, built_site, shapes_path, page_log):
    """...and, downloading nothing, starts without waiting for the page's own load."""
    with throttled_site(built_site) as (network, url), watched_page(browser, page_log) as first:
        widget = open_widget(first, url + shapes_path, "shapes")
        wait_ready(first)
        expect(status(first)).not_to_contain_text(RESTORED)
        kept_memory(first)
        first.close()
        again = first.context.new_page()
        held = []  # an image the page's load waits for, never answered
        again.route(re.compile(r".*/held-by-this-test\.png$"), lambda route: held.append(route))
        again.add_init_script('new Image().src = "held-by-this-test.png";')
        again.goto(url + shapes_path, wait_until="domcontentloaded")
        widget = again.locator('[data-mha-widget="shapes"]').first
        widget.scroll_into_view_if_needed()
        wait_ready(again)
        assert held and again.evaluate("document.readyState") != "complete"
        expect(status(again)).to_contain_text(RESTORED)
        change_batch(widget, 5)
        assert_shows(widget, **form_config(widget))
        for name in PYTHON_FILES:
            assert network.requests(name) == 1, (name, "was downloaded again")
    page_log.check()


def replace_memory(page, site_url: str, key: str, body: str | None, laid_out=True, intact=True, shift=0) -> None:
    page.evaluate(REPLACE_MEMORY, {"key": key, "body": body, "laidOut": laid_out, "intact": intact, "shift": shift,
                                   "memoryJs": site_url + "assets/widgets/runtime/memory.js"})


def answers(page, site_url: str) -> str:
    """What the page's Python answers to ANSWERS's calls (JSON), but for the time the trainer says it took (the
    clock's, not NumPy's)."""
    answered = page.evaluate(ANSWERS, [site_url + "assets/widgets/runtime/bridge.js", SENTENCE])
    return ELAPSED.sub('"elapsed":"-"', answered)


class ReturningReader:
    """The browser context of a reader who comes back (this module's first_visit's): its Cache
    Storage (Python's checked files and the memory a first start kept) and its HTTP cache stay from tab to tab,
    so Python is restored as on a revisit. Each tab is watched by the log of the test it serves; localStorage
    (the palette, the exercises' code) and permissions are cleared as each tab closes."""

    def __init__(self, browser):
        self.context = browser.new_context(viewport=VIEWPORT)
        self.log = PageLog()
        watch_context(self.context, lambda: self.log)

    @contextlib.contextmanager
    def tab(self, log: PageLog):
        """A new tab watched by log (which also hears the context's requests until the tab closes); closed on
        exit with any other tab the test opened in the context meanwhile."""
        earlier, self.log = self.log, log
        opened = set(self.context.pages)
        page = self.context.new_page()
        log.watch_page(page)
        page.set_default_timeout(READY_TIMEOUT_MS)
        try:
            yield page
        finally:
            if page.url.startswith("http"):
                page.evaluate("() => localStorage.clear()")
            for tab in set(self.context.pages) - opened:  # this one, and any the test opened beside it
                tab.close()
            self.context.clear_permissions()
            self.log = earlier


# Copies the memory kept under key into (back: out of) a cache of the tests' own, which the runtime leaves alone.
COPY_MEMORY = """async ({ key, back }) => {
  const [from, to] = await Promise.all(["mha-python", "mha-tests"].map((name) => caches.open(name)));
  const [source, target] = back ? [to, from] : [from, to];
  await target.put(key, await source.match(key));
}"""
BLANK = "blank-page-of-the-tests"  # an empty page at the site's address, to reach its Cache Storage from


class FirstVisit:
    """A reader's context after a first visit to the shapes page, where Python started afresh and kept its memory
    (under key): what that Python answered (fresh) and the sizes kept. tab(log) is a new tab of that context on
    an empty page of the site, the memory kept as the first visit left it, whatever a test before did to it."""

    def __init__(self, browser, site_url: str, shapes_path: str):
        self.reader, self.site_url = ReturningReader(browser), site_url
        log = PageLog()
        with self.reader.tab(log) as first:
            open_widget(first, site_url + shapes_path, "shapes")
            wait_ready(first)
            self.fresh = answers(first, site_url)
            self.key = kept_memory(first)
            self.sizes = first.evaluate(KEPT_SIZES, self.key)
            first.evaluate(COPY_MEMORY, {"key": self.key, "back": False})
        log.check()

    @contextlib.contextmanager
    def tab(self, log: PageLog):
        with self.reader.tab(log) as page:
            page.route(self.site_url + BLANK, lambda route: route.fulfill(body="<!doctype html><title>-</title>",
                                                                          content_type="text/html"))
            page.goto(self.site_url + BLANK)
            page.evaluate(COPY_MEMORY, {"key": self.key, "back": True})
            yield page


@pytest.fixture(scope="module")
def first_visit(browser, site_url, shapes_path) -> FirstVisit:
    visited = FirstVisit(browser, site_url, shapes_path)
    yield visited
    visited.reader.context.close()


@pytest.mark.parametrize("laid_out, intact", [(True, False), (False, True)],
                         ids=["sha256 differs", "not laid out as a memory is kept"])
def test_a_kept_memory_that_is_not_intact_is_dropped_and_python_starts_afresh(first_visit, site_url, shapes_path,
                                                                              page_log, laid_out, intact):
    with first_visit.tab(page_log) as again:
        replace_memory(again, site_url, first_visit.key, "not Python's memory", laid_out, intact)
        widget = open_widget(again, site_url + shapes_path, "shapes")
        wait_ready(again)
        expect(status(again)).not_to_contain_text(RESTORED)
        change_batch(widget, 6)
        assert_shows(widget, **form_config(widget))
        assert kept_memory(again) == first_visit.key  # a new memory is kept in its place
    page_log.check()


@pytest.mark.parametrize("body, shift, reason", [
    ("an intact file that is not a memory", 0, "wasm instantiation failed"),  # too small for Python's memory
    (None, 4, "the kept memory does not hold _multiarray_tests.cpython-312-wasm32-emscripten.so where it says"),
], ids=["not a memory", "libraries not where it says"])
def test_a_kept_memory_python_cannot_restore_is_an_error_then_forgotten(first_visit, site_url, shapes_path, page_log,
                                                                         body, shift, reason):
    """Intact by its sha256 yet not a memory Pyodide can restore, or one whose libraries are not where it says:
    the start fails with the reason, and Retry starts afresh without it."""
    page_log.allow(rf"{re.escape(reason)}|Python could not start")
    with first_visit.tab(page_log) as again:
        replace_memory(again, site_url, first_visit.key, body, shift=shift)
        widget = open_widget(again, site_url + shapes_path, "shapes")
        expect(again.locator("html")).to_have_attribute("data-mha-runtime", "error", timeout=READY_TIMEOUT_MS)
        expect(status(again)).to_contain_text(f"Python could not start: {reason}")
        status(again).get_by_role("button", name="Retry").click()
        wait_ready(again)
        expect(status(again)).not_to_contain_text(RESTORED)
        change_batch(widget, 4)
        assert_shows(widget, **form_config(widget))
    page_log.check()


def test_a_restored_python_answers_as_the_fresh_one_did(first_visit, site_url, shapes_path, page_log):
    """NumPy's libraries, loaded again where the kept memory expects them, compute what they computed before."""
    kept, whole = first_visit.sizes
    assert kept < 0.8 * whole, (kept, whole)  # kept without its pages of zeros
    with first_visit.tab(page_log) as again:
        open_widget(again, site_url + shapes_path, "shapes")
        wait_ready(again)
        expect(status(again)).to_contain_text(RESTORED)
        assert answers(again, site_url) == first_visit.fresh
    page_log.check()
