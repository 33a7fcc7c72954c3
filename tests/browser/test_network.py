"""The first visit over a slow link, on the real built site served through a throttled server of our own
(sitevisit/network.py: one bandwidth limit for the page and the worker alike, a latency per request): a start
slower than the watchdog period reaches ready while bytes keep arriving; a link that stops delivering ends in
`error` with the reason, and Retry fetches only what is missing; each file is downloaded once in a fresh
(private-window-like) context and refused by hash when the server's copy is not the one built; a connection
that asks to save data gets a button, not a download; a field changed before the widget's module has run is what
the widget shows once live; instant navigation keeps one worker for both widget pages.
(A revisit, restored from the memory the first visit kept: test_kept_memory.py.)"""
from __future__ import annotations

import gzip
import re
from urllib.parse import urlsplit

from conftest import (READY_TIMEOUT_MS, change_batch, come_back, hold_requests, moved_on, open_widget, status,
                      wait_ready, watched_page)
from playwright.sync_api import expect

from sitevisit.network import PYTHON_FILES, throttled_site
from sitevisit.page import show_sentence
from sitevisit.site import MOUNT
from tests.helpers import READ, SENTENCE, assert_shows, check_layout, form_config, tokens_of

SLOW_MS = 120_000  # a throttled start: ~7 MB at 2 Mbit/s, on a loaded 2-core machine
BYTES = re.compile(r"Downloading Python: \d+\.\d of (\d+\.\d) MB")


def told_mb(page) -> float:
    """The download size the status line offers (its Load button, shown where data is saved)."""
    return float(re.search(r"\((\d+\.\d) MB\)", status(page).locator("button").first.text_content()).group(1))


def test_a_start_slower_than_the_watchdog_reaches_ready_while_bytes_arrive(browser, built_site, shapes_path, page_log):
    with throttled_site(built_site, mbit=2, latency_ms=40) as (network, url), watched_page(browser, page_log) as page:
        widget = open_widget(page, url + shapes_path, "shapes")
        expect(status(page)).to_contain_text(BYTES, timeout=READY_TIMEOUT_MS)
        started = page.evaluate("performance.now()")
        expect(page.locator("html")).to_have_attribute("data-mha-runtime", "ready", timeout=SLOW_MS)
        took = page.evaluate("performance.now()") - started
        assert took > 20_000, f"the throttled start took {took:.0f} ms: not longer than the watchdog's 20 s"
        change_batch(widget, 3)
        assert_shows(widget, **form_config(widget))
        for name in PYTHON_FILES:
            assert network.requests(name) == 1, (name, network.sent)
    page_log.check()


def test_a_link_that_stops_is_an_error_and_retry_fetches_only_what_is_missing(browser, built_site, heads_path,
                                                                              page_log):
    page_log.allow(r"Failed to load resource|net::ERR")
    with throttled_site(built_site, latency_ms=5) as (network, url), watched_page(browser, page_log) as page:
        network.hold("wasm32.whl.gz", after=200_000)  # NumPy stops arriving a tenth of the way in
        widget = open_widget(page, url + heads_path, "heads")
        expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error", timeout=READY_TIMEOUT_MS + 30_000)
        expect(status(page)).to_contain_text("Downloading Python stalled: nothing arrived for 20 s.")
        assert network.requests("wasm32.whl.gz") == 1
        network.release()
        status(page).get_by_role("button", name="Retry").click()
        wait_ready(page)
        assert network.requests("wasm32.whl.gz") == 2  # fetched again: it had not arrived whole
        for name in PYTHON_FILES:
            if name != "wasm32.whl.gz":
                assert network.requests(name) == 1, (name, "was downloaded again")
        show_sentence(widget, SENTENCE)
        check_layout(widget.evaluate(READ), tokens_of(SENTENCE))
    page_log.check()


def test_a_fresh_context_downloads_each_file_once_and_less_than_8_mb(browser, built_site, shapes_path, page_log):
    with throttled_site(built_site) as (network, url), watched_page(browser, page_log) as page:
        open_widget(page, url + shapes_path, "shapes")
        wait_ready(page)
        paths = [path for path, _ in network.sent]
        assert len(paths) == len(set(paths)), [p for p in paths if paths.count(p) > 1]
        total = sum(n for _, n in network.sent)
        assert total < 8e6, f"{total / 1e6:.1f} MB went over the wire"
        python = sum(n for path, n in network.sent if any(f in path for f in PYTHON_FILES))
        assert abs(python / 1e6 - told_mb(page)) < 0.1  # the size the reader is told is what arrives
    page_log.check()


def test_a_file_corrupted_on_the_server_is_refused_by_hash(page, page_log, built_site, site_url, shapes_path):
    """A valid gzip of bytes that are not the built file: decompressed, checked, refused; Retry works once the
    server's copy is right again."""
    page_log.allow(r"Failed to load resource")
    wasm = built_site / "assets/pyodide/pyodide.asm.wasm.gz"
    changed = bytearray(gzip.decompress(wasm.read_bytes()))
    changed[len(changed) // 2] ^= 0xFF
    pattern = re.compile(r".*/assets/pyodide/pyodide\.asm\.wasm\.gz$")
    page.context.route(pattern, lambda route: route.fulfill(body=gzip.compress(bytes(changed)),
                                                             content_type="application/gzip"))
    open_widget(page, site_url + shapes_path, "shapes")
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error")
    expect(status(page)).to_contain_text("pyodide.asm.wasm is not the file this site was built with")
    page.context.unroute(pattern)
    status(page).get_by_role("button", name="Retry").click()
    wait_ready(page)


SAVE_DATA = "Object.defineProperty(navigator, 'connection', { value: { saveData: true, effectiveType: '4g' } });"


def test_a_connection_that_saves_data_gets_a_button_not_a_download(page, page_log, site_url, shapes_path):
    page.context.add_init_script(SAVE_DATA)
    widget = open_widget(page, site_url + shapes_path, "shapes")
    page.wait_for_load_state("load")
    load = status(page).get_by_role("button", name=re.compile(r"Load live Python \(\d+\.\d MB\)"))
    expect(load).to_be_visible()
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "idle")
    change_batch(widget, 3)  # a change asks Python: still no download
    assert not [w for w in page.workers if "/runtime/" in w.url]
    assert not [u for u in page_log.requests if "/assets/pyodide/" in u]
    load.click()
    wait_ready(page)
    assert_shows(widget, **form_config(widget))  # the change made meanwhile is computed


def test_instant_navigation_keeps_one_worker_and_both_widgets_live(page, site_url, shapes_path, heads_path):
    workers = []
    page.on("worker", lambda w: workers.append(w.url))
    shapes = open_widget(page, site_url + shapes_path, "shapes")
    wait_ready(page)
    moved_on(page, lambda: page.locator("a.md-footer__link--next").click())  # shapes' next page: the heads page
    heads = page.locator('[data-mha-widget="heads"]').first
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # no new document
    assert page.locator("html").get_attribute("data-mha-runtime") == "ready"
    show_sentence(heads, SENTENCE)
    check_layout(heads.evaluate(READ), tokens_of(SENTENCE))
    moved_on(page, page.go_back)
    shapes = page.locator('[data-mha-widget="shapes"]').first
    change_batch(shapes, 7)
    assert_shows(shapes, **form_config(shapes))
    assert len([w for w in workers if w.endswith("/runtime/worker.js")]) == 1, workers
    assert urlsplit(page.url).path.startswith(MOUNT)


def test_a_field_changed_before_the_widget_s_module_runs_is_what_it_shows(page, site_url, shapes_path, heads_path):
    """On a slow link a page reads, and takes input, before its widgets' modules have run: a number typed and a
    sentence written meanwhile (each field left, as a reader does) are what the widgets compute once live."""
    release = hold_requests(page, re.compile(r".*/shapes/shapes\.js$"))
    page.goto(site_url + shapes_path, wait_until="commit")  # the module held: the page is still loading
    shapes = page.locator('[data-mha-widget="shapes"]').first
    change_batch(shapes, 3)
    assert shapes.get_attribute("data-mounted") is None
    release()
    wait_ready(page)
    assert form_config(shapes)["batch"] == 3
    assert_shows(shapes, **form_config(shapes))

    release = hold_requests(page, re.compile(r".*/heads/heads\.js$"))
    page.goto(site_url + heads_path, wait_until="commit")
    heads = page.locator('[data-mha-widget="heads"]').first
    sentence = heads.locator('textarea[name="sentence"]')
    sentence.fill(SENTENCE)
    sentence.press("Tab")
    assert heads.get_attribute("data-mounted") is None
    release()
    wait_ready(page)
    expect(heads).to_have_attribute("data-state", "live")
    check_layout(heads.evaluate(READ), tokens_of(SENTENCE))


# The page's timers that write its URL (their code calls history.replaceState) counted as scheduled, and kept as
# pending until they have run or been cleared: a test waits for the write the reader's pause would make. While
# __urlWrites.held is an array, a timer that fires is held there (as if the pause outlasted what the test does
# meanwhile) until RELEASE_URL_WRITES runs it.
URL_WRITES_WATCHED = """(() => {
  const [schedule, clear] = [window.setTimeout, window.clearTimeout];
  const writes = window.__urlWrites = { scheduled: 0, pending: new Set(), held: null };
  window.setTimeout = function (fn, ...rest) {
    if (typeof fn !== "function" || !String(fn).includes("replaceState")) return schedule.call(this, fn, ...rest);
    writes.scheduled++;
    const id = schedule.call(this, (...args) => {
      const write = () => {
        writes.pending.delete(id);
        fn(...args);
      };
      writes.held ? writes.held.push(write) : write();
    }, ...rest);
    writes.pending.add(id);
    return id;
  };
  window.clearTimeout = function (id) {
    writes.pending.delete(id);
    return clear.call(this, id);
  };
})();"""


def test_a_change_just_before_a_link_is_followed_stays_out_of_the_next_pages_url(page, site_url, shapes_path,
                                                                                heads_path):
    """The shapes widget writes its state into the URL once the reader pauses; a reader who moves on within that
    pause must not find it in the next page's URL."""
    page.add_init_script(URL_WRITES_WATCHED)
    shapes = open_widget(page, site_url + shapes_path, "shapes")
    wait_ready(page)
    shapes.evaluate("""root => {
      window.__urlWrites.scheduled = 0;
      const field = root.querySelector('input[type="number"][name="batch"]');
      field.value = "3";  // as typing does: input, then change as the field is left
      for (const type of ["input", "change"]) field.dispatchEvent(new Event(type, { bubbles: true }));
      document.querySelector("a.md-footer__link--next").click();
    }""")
    expect(page.locator('[data-mha-widget="heads"]')).to_have_attribute("data-mounted", "true")
    page.wait_for_function("() => window.__urlWrites.scheduled > 0 && window.__urlWrites.pending.size === 0")
    assert page.url == site_url + heads_path


RELEASE_URL_WRITES = "() => { const held = window.__urlWrites.held; window.__urlWrites.held = null; held.forEach(w => w()); }"


def test_a_change_just_before_the_reader_leaves_and_comes_back_stays_out_of_the_new_widget_s_url(page, site_url,
                                                                                                shapes_path):
    """A widget left behind (its page replaced by instant navigation) writes nothing into the URL, even once the
    reader is back on its page with a new widget at its defaults: the URL is the new widget's."""
    page.add_init_script(URL_WRITES_WATCHED)
    shapes = open_widget(page, site_url + shapes_path, "shapes")
    wait_ready(page)
    defaults = form_config(shapes)
    page.evaluate("() => { window.__urlWrites.held = []; }")
    change_batch(shapes, defaults["batch"] + 1)
    page.wait_for_function("() => window.__urlWrites.held.length > 0")  # the left widget's write, due now
    come_back(page)
    page.evaluate(RELEASE_URL_WRITES)
    expect(page).to_have_url(site_url + shapes_path)
    assert form_config(shapes) == defaults


def test_a_widget_away_from_the_screen_is_mounted_but_not_rendered_until_near(page, site_url, heads_path):
    """content-visibility: the heads page's widgets, below the fold, cost no layout or paint at first."""
    page.goto(site_url + heads_path)
    training = page.locator('[data-mha-widget="training"]')
    expect(training).to_have_attribute("data-mounted", "true")
    rendered = "root => root.querySelector('td[data-q]').checkVisibility({ contentVisibilityAuto: true })"
    assert page.evaluate("scrollY") == 0 and training.evaluate(rendered) is False
    training.scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({rendered})(document.querySelector('[data-mha-widget=\"training\"]'))")
