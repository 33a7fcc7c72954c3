"""Browser tests: the real site, built once per test run (tests/conftest.py), served on 127.0.0.1 under a
sub-path (as GitHub Pages serves a project), driven in Chromium's headless shell by Playwright.

Fixtures: built_site (the output folder) and site_url (its base URL), from tests/conftest.py; browser (one per
session and kind, see BASELINE_COMPILERS); widget_path (widget_path(name): the first page holding that widget);
page (a fresh context per test that fails the test on any page error, console error, Content-Security-Policy
violation or request that leaves 127.0.0.1; `page_log.allow(pattern)` accepts the console errors a test
provokes; in a test marked before_python, which checks what a reader sees before Python is ready, Python is
held back throughout, so that no start races what it checks); shared_page ((page, log): one page of a fresh
context a test module shares, checked the same way test by test); live_widget (live_widget(name): that widget
on the shared page, with Python ready) and fresh_widget (the same, mounted afresh). What a revisit restored
from the memory a first start kept must do is test_kept_memory.py's alone (a reload elsewhere may restore it
as well).
Tests wait on the data-* markers, never on sleeps. They never skip: a missing Chromium is a failure.
"""
from __future__ import annotations

import contextlib
import functools
import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Error as PlaywrightError, expect, sync_playwright

from sitevisit.chromium import launch_chromium
from sitevisit.network import Trickle
from sitevisit.site import pages_with

READY_TIMEOUT_MS = 30_000
expect.set_options(timeout=READY_TIMEOUT_MS)  # a page reload restarts Python: slow on a loaded 2-core machine
LOCAL_HOSTS = {"127.0.0.1"}


# A test module marked `computes` (its tests keep Python computing for seconds: training, the real model) runs
# in a Chromium as a reader's, whose V8 recompiles hot code with its optimizing compiler. The others run V8's
# baseline compilers only: WebAssembly compiled once, quickly (Liftoff), and JavaScript never by TurboFan. Their
# pages live for seconds, where the optimizing compiles would cost more CPU than they save.
BASELINE_COMPILERS = ("--js-flags=--liftoff-only --no-opt",)


@pytest.fixture(scope="session")
def chromiums():
    """chromiums(optimizing): the session's Chromium of that kind, launched on first use."""
    with sync_playwright() as p:
        launched = {}

        def chromium(optimizing: bool):
            if optimizing not in launched:
                try:
                    launched[optimizing] = launch_chromium(p, headless_shell=True,
                                                           extra_args=() if optimizing else BASELINE_COMPILERS)
                except RuntimeError as e:
                    pytest.fail(str(e), pytrace=False)
            return launched[optimizing]
        yield chromium
        for b in launched.values():
            b.close()


@pytest.fixture(scope="module")
def browser(request, chromiums):
    return chromiums(optimizing=request.node.get_closest_marker("computes") is not None)


class PageLog:
    """What a page did that a test must not see: page errors, console errors, CSP violations, requests
    off 127.0.0.1."""

    def __init__(self):
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.violations: list[str] = []
        self.allowed: list[re.Pattern] = []

    def allow(self, pattern: str) -> None:
        """Accept console errors matching pattern (for tests that break something on purpose)."""
        self.allowed.append(re.compile(pattern))

    def console(self, where: str, message) -> None:
        if message.type == "error" and not any(p.search(message.text) for p in self.allowed):
            self.problems.append(f"console error in the {where}: {message.text}")

    def request(self, request) -> None:
        self.requests.append(request.url)
        parts = urlsplit(request.url)
        if parts.scheme not in ("data", "blob", "about") and parts.hostname not in LOCAL_HOSTS:
            self.problems.append(f"request left 127.0.0.1: {request.url}")

    def violation(self, source, text: str) -> None:
        self.violations.append(text)

    def watch(self, context, page) -> None:
        self.watch_page(page)
        watch_context(context, lambda: self)

    def watch_page(self, page, name: str = "page") -> None:
        """Watch one more page of a watched context (a second tab): its errors and its worker's."""
        page.on("pageerror", lambda error: self.problems.append(f"{name} error: {error}"))
        page.on("console", lambda message: self.console(name, message))
        page.on("worker", lambda worker: worker.on("console", lambda message: self.console(f"{name}'s worker", message)))

    def check(self) -> None:
        problems = self.problems + [f"Content-Security-Policy violation: {v}" for v in self.violations]
        assert not problems, "\n".join(problems)

    def clear(self) -> None:
        self.problems.clear()
        self.violations.clear()
        self.allowed.clear()


# Runs before the page's own scripts: every securitypolicyviolation event is reported to the PageLog (and
# kept in window.__mhaViolations, for a test that provokes one to wait on).
REPORT_VIOLATIONS = """window.__mhaViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  const text = `${e.effectiveDirective} blocked ${e.blockedURI || "inline code"} (${e.sourceFile}:${e.lineNumber})`;
  window.__mhaViolations.push(text);
  window.__mhaViolation(text);
});"""


def watch_context(context, log_now) -> None:
    """Report what any page of context requests, and its CSP violations, to the PageLog log_now() returns."""
    context.on("request", lambda request: log_now().request(request))
    context.expose_binding("__mhaViolation", lambda source, text: log_now().violation(source, text))
    context.add_init_script(REPORT_VIOLATIONS)


VIEWPORT = {"width": 1200, "height": 900}

# Material eases its header and search between the phone and the desktop layout, and the page scrolls sideways
# until they land. (Polled: a transition's finished promise may stay pending after it has run.)
TRANSITIONS_ENDED = "() => !document.getAnimations().some(a => a instanceof CSSTransition && a.playState === 'running')"


def resize(page, viewport: dict) -> None:
    """Give page the viewport ({"width", "height"}) and wait until its layout has settled: two frames (its
    ResizeObservers have run), then the CSS transitions under way ended."""
    page.set_viewport_size(viewport)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
    page.wait_for_function(TRANSITIONS_ENDED, polling=50)


@contextlib.contextmanager
def watched_page(browser, log: PageLog, viewport: dict = VIEWPORT, **options):
    """A page in a new context (of that viewport, and options), watched by log; the context is closed on exit."""
    context = browser.new_context(viewport=viewport, **options)
    page = context.new_page()
    log.watch(context, page)
    page.set_default_timeout(READY_TIMEOUT_MS)
    try:
        yield page
    finally:
        context.close()


def show_widget(page) -> None:
    """Scroll the page's first widget into view, as a reader does: Python starts once one is near the screen.
    If instant navigation replaces the page's content meanwhile (the URL changes first), the new page's widget."""
    widgets = page.locator("[data-mha-widget]")
    for attempt in range(3):
        try:
            if widgets.count():
                widgets.first.scroll_into_view_if_needed()
            return
        except PlaywrightError as e:
            if "not attached" not in str(e) or attempt == 2:
                raise


def hold_requests(page, pattern) -> callable:
    """Hold back the context's requests for pattern (a URL glob or regex); returns release(), which lets them
    through, those held and those to come (the route then removed: a routed context loads without its HTTP cache)."""
    held, released = [], []

    def hold(route):
        route.continue_() if released else held.append(route)
    page.context.route(pattern, hold)

    def release():
        released.append(True)
        for route in held:
            route.continue_()
        page.context.unroute(pattern, hold)
    return release


def hold_python(page):
    """Let Pyodide's .wasm arrive a trickle at a time, as on a slow link, so that Python cannot be ready for as
    long as a test likes (a file held back whole would be a stall, which the runtime ends after 20 s); returns
    release(), which lets the rest through."""
    wasm, trickle = re.compile(r".*/pyodide\.asm\.wasm\.gz$"), Trickle()
    page.context.on("close", lambda _: trickle.close())
    page.context.route(wasm, lambda route: route.continue_(url=trickle.url_for(route.request.url)))

    def release():
        trickle.release()
        page.context.unroute(wasm)
    return release


def wait_ready(page, timeout: float = READY_TIMEOUT_MS) -> None:
    show_widget(page)
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "ready", timeout=timeout)


def open_widget(page, url: str, name: str):
    """Go to url and scroll its first NAME widget into view; return the widget."""
    page.goto(url)
    widget = page.locator(f'[data-mha-widget="{name}"]').first
    widget.scroll_into_view_if_needed()
    return widget


def open_in_scheme(page, url: str, name: str, scheme: str):
    """open_widget for a reader whose system asks for scheme ("light" or "dark": Material picks its palette from
    prefers-color-scheme as the page loads); returns (the widget, the page's background colour)."""
    page.emulate_media(color_scheme=scheme)
    widget = open_widget(page, url, name)
    expect(page.locator("body")).to_have_attribute("data-md-color-scheme", "slate" if scheme == "dark" else "default")
    return widget, page.evaluate("getComputedStyle(document.body).backgroundColor")


def on_one_screen(page, top, bottom) -> bool:
    """Whether the elements top and bottom (locators) fit together on the page's screen below Material's header."""
    header = page.locator(".md-header").bounding_box()["height"]
    end = bottom.bounding_box()
    return end["y"] + end["height"] - top.bounding_box()["y"] <= page.viewport_size["height"] - header


def status(page):
    """The page's runtime status line (the first widget's)."""
    return page.locator("[data-mha-status]").first


def change_batch(widget, value: int) -> None:
    """Type value into the shapes widget's batch field and press Enter."""
    field = widget.locator('input[type="number"][name="batch"]')
    field.fill(str(value))
    field.press("Enter")


def address(page) -> str:
    """The page's URL without its query or fragment."""
    return page.url.split("#")[0].split("?")[0]


def on_widget_page(page, url: str, name: str, fresh: bool = False, python: bool = True):
    """The first NAME widget of the page at url with Python ready, scrolled into view as a reader comes to it;
    goes there only if page is elsewhere (or its Python is not ready), so that tests sharing a page share its
    Python. fresh: a page already there has its widgets mounted afresh at their defaults (come_back), whatever
    an earlier test left. python=False: a widget that starts Python on request, as the real model's Load does (the
    page's Python, if any, is not waited for)."""
    if address(page) != url or python and page.locator("html").get_attribute("data-mha-runtime") != "ready":
        open_widget(page, url, name)
        if python:
            wait_ready(page)
    elif fresh:
        come_back(page)
    widget = page.locator(f'[data-mha-widget="{name}"]').first
    widget.scroll_into_view_if_needed()
    return widget


def come_back(page) -> None:
    """Leave the page by its footer's link and come back by the next page's, as a reader does with instant
    navigation: the page's widgets are mounted afresh, at their defaults, served by the same Python."""
    url = address(page)
    away, back = ("prev", "next") if page.locator("a.md-footer__link--prev").count() else ("next", "prev")
    for link in (away, back):
        moved_on(page, lambda: page.locator(f"a.md-footer__link--{link}").click())
    expect(page).to_have_url(url)


def moved_on(page, follow) -> None:
    """follow() a link of the page's; return once the next page's content is in (every widget left is gone) and
    its widgets are mounted. Material pushes the link's URL before it fetches the page, and scrolls the page it
    brought in to its top before the widgets mount: a test that scrolled earlier would see its scroll undone."""
    page.evaluate("() => document.querySelectorAll('[data-mha-widget]').forEach(w => { w.dataset.testLeft = 'true'; })")
    follow()
    expect(page.locator("[data-test-left]")).to_have_count(0)
    expect(page.locator("[data-mha-widget]:not([data-mounted])")).to_have_count(0)


def follow_link(page, url: str) -> None:
    """Go to url (a page of the site) by the page's own link to it (its navigation's, hidden or not), as a reader
    moves on with instant navigation: the page's Python serves the next page's widgets."""
    moved_on(page, lambda: page.evaluate("url => [...document.querySelectorAll('a[href]')].find(a => a.href === url).click()", url))
    expect(page).to_have_url(url)


@pytest.fixture
def page_log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(request, browser, page_log):
    with watched_page(browser, page_log) as page:
        if request.node.get_closest_marker("before_python"):
            hold_python(page)
        yield page
    page_log.check()


@pytest.fixture(scope="session")
def widget_path(built_site):
    """widget_path(name): the site-relative URL of the first page that holds a NAME widget."""
    @functools.cache
    def path(name: str) -> str:
        paths = pages_with(built_site, f'data-mha-widget="{name}"')
        if not paths:
            pytest.fail(f"no page of the built site holds a {name} widget (<!-- widget: {name} ... -->)", pytrace=False)
        return paths[0]
    return path


@pytest.fixture(scope="session")
def shapes_path(widget_path) -> str:
    return widget_path("shapes")


@pytest.fixture(scope="session")
def heads_path(widget_path) -> str:
    return widget_path("heads")


@pytest.fixture(scope="module")
def module_page(browser):
    """(page, log): one page of a fresh context for a test module's tests, so that Python starts once for them
    all."""
    log = PageLog()
    with watched_page(browser, log) as page:
        yield page, log


@pytest.fixture
def shared_page(module_page):
    """(page, log): the module's one page, for one test: it starts with a clean page log and fails on what it
    logged (as with `page`); a test that resized it leaves it at VIEWPORT again, as the next test expects it."""
    page, log = module_page
    log.clear()
    try:
        yield page, log
    finally:
        if page.viewport_size != VIEWPORT:
            resize(page, VIEWPORT)
    log.check()


@pytest.fixture
def live_widget(shared_page, site_url, widget_path):
    """live_widget(name): the module's shared page on NAME's page, Python ready; returns its first NAME
    widget, as the earlier tests left it."""
    return lambda name: on_widget_page(shared_page[0], site_url + widget_path(name), name)


@pytest.fixture
def fresh_widget(shared_page, site_url, widget_path):
    """fresh_widget(name): as live_widget(name), but the widget mounted afresh at its defaults; the same
    Python answers."""
    return lambda name: on_widget_page(shared_page[0], site_url + widget_path(name), name, fresh=True)


WORKER = re.compile(r".*/runtime/worker\.js$")


def hold_worker(page) -> callable:
    """Hold back the request for the runtime's worker script, so that Python cannot start (not even from the memory
    an earlier start of the context kept, which hold_python's route never sees); returns release()."""
    return hold_requests(page, WORKER)
