"""Accessibility, checked by axe-core in Chromium: every page of the built site, in the light and the dark
scheme (Material follows prefers-color-scheme), on a desktop (1280 × 800) and a phone (390 × 844), and the
shapes, heads, tiling and exercise widgets in each of their states. None may have a serious or critical violation.
Each page, and each widget, is walked through once; at every moment the walk stops, axe runs in each of the
four looks, and each look's test asserts its own findings. The reader of every look has asked for reduced
motion (MOTION), so that a resize lands at once: the layout each look checks is the one the others reach
once Material's transitions have eased in.

axe-core comes from npm (`npm pack`), pinned by its sha256 and kept in .cache/; it is injected into the
pages by the test only, never part of the site."""
from __future__ import annotations

import contextlib

import re
import tarfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from conftest import PageLog, hold_python, resize, wait_ready, watched_page
from sitebuild.assets import npm_tarball
from sitevisit.site import pages_with
from tests.helpers import form_config

AXE_VERSION = "4.14.1"
AXE_SHA256 = "e6b0ce02b84d892e2e33e403485e7f3d6c29e2be6df65daf44d89ba564139745"  # npm pack tarball
SCHEMES = {"light": "default", "dark": "slate"}  # prefers-color-scheme -> Material's data-md-color-scheme
VIEWPORTS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
BLOCKING = ("serious", "critical")
MOTION = {"reduced_motion": "reduce"}  # the browser context's: Material then switches layouts without easing

# Every violation of the page (or of one element), as [rule, impact, [target, ...], summary].
RUN_AXE = """async (selector) => {
  const { violations } = await axe.run(selector ? document.querySelector(selector) : document,
                                       { resultTypes: ["violations"] });
  return violations.map(v => [v.id, v.impact, v.nodes.map(n => n.target.join(" ")), v.nodes[0].failureSummary]);
}"""


@pytest.fixture(scope="session")
def axe_source() -> str:
    """axe.min.js of axe-core AXE_VERSION, fetched once with npm and checked by sha256."""
    with tarfile.open(npm_tarball("axe-core", AXE_VERSION, AXE_SHA256)) as tar:
        return tar.extractfile("package/axe.min.js").read().decode()


def site_pages(site: Path) -> list[str]:
    """Every page of the built site, as a path from its root."""
    pages = sorted(p.parent.relative_to(site).as_posix() + "/" for p in site.rglob("index.html"))
    return [p.removeprefix("./") for p in pages] + ["404.html"]


# Wait for as many idle moments as the page has scroll boxes (as widgets/scroll-regions.js waits for them), then a
# frame: it has measured the boxes away from the screen (one an idle moment) and its ResizeObservers have run.
BOXES_MEASURED = """async () => {
  const idle = window.requestIdleCallback
    ? (fn) => requestIdleCallback(fn, { timeout: 1000 })
    : (fn) => setTimeout(fn, 0);
  for (const _ of document.querySelectorAll(".md-content :is(div.arithmatex, .md-typeset__scrollwrap, pre > code)")) {
    await new Promise(idle);
  }
  await new Promise(requestAnimationFrame);
}"""


def settle(page, whole_page: bool = True) -> None:
    """Wait until the page is as a reader sees it: its math typeset, its scroll boxes checked (whole_page=False:
    those of the widget in view only, which its ResizeObservers check as it is laid out: a frame; the page's boxes
    away from the screen take an idle moment each, many seconds on a busy machine while a walk holds Python back,
    whose start gives up after 20 s without a byte)."""
    expect(page.locator(".arithmatex:not(:has(math))")).to_have_count(0)
    page.evaluate(BOXES_MEASURED if whole_page else "() => new Promise(requestAnimationFrame)")


def blocking(page, axe_source: str, where: str, selector: str | None = None) -> list[str]:
    """The serious and critical violations axe finds in the page (or the element at selector)."""
    if not page.evaluate("() => typeof axe === 'object'"):
        page.evaluate("() => {" + axe_source + "\n}")
    return [f"{where}: {rule} ({impact}) on {', '.join(targets[:4])}{' …' if len(targets) > 4 else ''}\n    "
            + summary.replace("\n", "\n    ")
            for rule, impact, targets, summary in page.evaluate(RUN_AXE, selector) if impact in BLOCKING]


# In this order a walk resizes twice at each moment, not four times: the dark looks run the viewports backwards.
LOOKS = [("light", "desktop"), ("light", "phone"), ("dark", "phone"), ("dark", "desktop")]
assert sorted(LOOKS) == sorted((scheme, viewport) for scheme in SCHEMES for viewport in VIEWPORTS)


def look(page, scheme: str, viewport: str, subject=None, whole_page: bool = True) -> None:
    """Show the open page as a reader with that scheme and screen sees it: the palette Material picks for
    prefers-color-scheme as a page loads, picked here as its toggle does (a page already shown keeps its
    palette), at that size, with subject (a locator) scrolled back into view."""
    page.emulate_media(color_scheme=scheme)
    resize(page, VIEWPORTS[viewport])
    page.evaluate("""scheme => document.body.dataset.mdColorScheme === scheme ||
      document.querySelector(`input[name="__palette"][data-md-color-scheme="${scheme}"]`).click()""", SCHEMES[scheme])
    assert page.locator("body").get_attribute("data-md-color-scheme") == SCHEMES[scheme]
    if subject is not None:
        subject.scroll_into_view_if_needed()
    settle(page, whole_page)


def blocking_in_every_look(page, axe_source: str, moment: str, selector: str | None = None) -> list[str]:
    """blocking() at moment in each look (both schemes on both screens), all of them together."""
    found = []
    for scheme, viewport in LOOKS:
        look(page, scheme, viewport, whole_page=selector is None)
        found += blocking(page, axe_source, f"{moment} ({scheme}, {viewport})", selector)
    return found


def in_every_look(test):
    """The test once for each look (its scheme and viewport arguments)."""
    return pytest.mark.parametrize("viewport", VIEWPORTS)(pytest.mark.parametrize("scheme", SCHEMES)(test))


class Findings:
    """What axe finds serious at each moment a walk through a page picks, in every look (scheme × viewport):
    one walk serves the four tests of a page or widget, each asserting its own look."""

    def __init__(self, page, axe_source: str, selector: str | None = None, subject=None):
        self.page, self.axe_source, self.selector, self.subject = page, axe_source, selector, subject
        self.log = None
        self.found = {each: [] for each in LOOKS}

    def check(self, moment: str) -> None:
        for scheme, viewport in LOOKS:
            look(self.page, scheme, viewport, self.subject, whole_page=self.selector is None)
            self.found[scheme, viewport] += blocking(self.page, self.axe_source, f"{moment} ({scheme}, {viewport})",
                                                     self.selector)

    def assert_none(self, scheme: str, viewport: str) -> None:
        assert not self.found[scheme, viewport], "\n".join(self.found[scheme, viewport])
        self.log.check()


@pytest.fixture(scope="module")
def every_page(browser, built_site, site_url, axe_source) -> Findings:
    log = PageLog()
    log.allow(r"Failed to load resource")  # 404.html is served with its status
    with watched_page(browser, log, **MOTION) as page:
        findings = Findings(page, axe_source)
        for path in site_pages(built_site):
            page.goto(site_url + path)
            findings.check(path or "index")
    findings.log = log
    return findings


@in_every_look
def test_every_page_has_no_serious_violation(every_page, scheme, viewport):
    every_page.assert_none(scheme, viewport)


def change(widget, name: str, value) -> None:
    field = widget.locator(f'input[type="number"][name="{name}"]')
    field.fill(str(value))
    field.press("Enter")


@contextlib.contextmanager
def widget_walk(browser, url: str, name: str, axe_source: str, selector: str | None = None):
    """(page, widget, release, findings): url with Python held back (release() lets it start), its first NAME
    widget in view; findings.check(moment) runs axe in every look (on the element at selector, or the page)."""
    log = PageLog()
    log.allow(r"Failed to load resource|broken")
    with watched_page(browser, log, **MOTION) as page:
        release = hold_python(page)
        page.goto(url)
        widget = page.locator(f'[data-mha-widget="{name}"]').first
        findings = Findings(page, axe_source, selector, widget)
        widget.scroll_into_view_if_needed()
        settle(page, whole_page=selector is None)
        yield page, widget, release, findings
    findings.log = log


def break_worker_and_reload(page, name: str):
    """Reload with a worker that throws (Python's files, kept from the live run, would not be asked for
    again); return the NAME widget once the runtime is in error."""
    page.context.route(re.compile(r".*/runtime/worker\.js$"),
                       lambda route: route.fulfill(body="throw new Error('broken')", content_type="text/javascript"))
    page.reload()
    widget = page.locator(f'[data-mha-widget="{name}"]').first
    widget.scroll_into_view_if_needed()
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error")
    return widget


FORMULAS_AND_TABLES = ".md-content div.arithmatex, .md-typeset__scrollwrap"


def test_scroll_boxes_are_reached_by_keyboard(browser, site_url, built_site):
    """On a phone, a display formula, table or code block wider than the screen scrolls in a box that Tab reaches
    (formulas and tables named as such), far below the screen too, before the browser has laid it out."""
    log = PageLog()
    with watched_page(browser, log, **MOTION) as page:
        page.set_viewport_size(VIEWPORTS["phone"])
        page.goto(site_url + "mechanism/")
        settle(page)
        # [tab index, role, name, content skipped (content-visibility)] of each formula and table; then which are
        # wide, asked of each laid out
        found = page.evaluate(f"""() => [...document.querySelectorAll({FORMULAS_AND_TABLES!r})]
          .map(b => [b.tabIndex, b.getAttribute("role"), b.getAttribute("aria-label"),
                     !b.firstElementChild.checkVisibility({{ contentVisibilityAuto: true }})])""")
        wide = page.evaluate(f"""() => [...document.querySelectorAll({FORMULAS_AND_TABLES!r})]
          .map(b => {{ b.firstElementChild.getBoundingClientRect(); return b.scrollWidth > b.clientWidth + 1; }})""")
        boxes = [box for box, is_wide in zip(found, wide) if is_wide]
        assert boxes, "no wide formula or table on the page at 390 px: pick a page that has one"
        assert any(skipped for *_, skipped in boxes), "no wide box far below the screen: pick a page that has one"
        assert all(box[0] == 0 and box[1] == "group" and box[2].endswith("(scrolls sideways)")
                   for box in boxes), boxes
        wide_code = """() => [...document.querySelectorAll(".md-content pre > code")]
          .filter(c => c.scrollWidth > c.clientWidth + 1)"""
        assert page.evaluate(f"({wide_code})().length"), "no code block wider than the screen on the page"
        page.wait_for_function(f"({wide_code})().every(c => c.tabIndex === 0)")
        resize(page, VIEWPORTS["desktop"])  # wide enough: no more tab stops
        settle(page)
        still = page.evaluate("""() => [...document.querySelectorAll(".md-content div.arithmatex[tabindex]")]
          .filter(b => { b.firstElementChild.getBoundingClientRect(); return b.scrollWidth <= b.clientWidth + 1; })
          .length""")
        assert still == 0
    log.check()


PHONE = {"viewport": VIEWPORTS["phone"], "is_mobile": True, "has_touch": True}  # no hover, as a phone's screen
# The tab index of each code block wider than its box, once all are tab stops (or after a second of frames: the
# boxes' ResizeObservers report at a frame's end).
WIDE_CODE_TAB_INDEXES = """async () => {
  const wide = () => [...document.querySelectorAll(".md-content pre > code")]
    .filter(c => c.scrollWidth > c.clientWidth + 1);
  for (let frame = 0; frame < 60 && !wide().every(c => c.tabIndex === 0); frame++) {
    await new Promise(requestAnimationFrame);
  }
  return wide().map(c => c.tabIndex);
}"""


@pytest.mark.parametrize("scheme", SCHEMES)
def test_a_phone_reaches_every_wide_code_block_by_keyboard(browser, site_url, axe_source, scheme):
    """A phone loading the pages with the widest code blocks at its own width (a context made so, not a desktop
    resized): every block wider than the screen is a tab stop, and axe finds nothing serious. (Material makes
    them focusable only where the screen has hover; widgets/scroll-regions.js does it everywhere.)"""
    log = PageLog()
    with watched_page(browser, log, color_scheme=scheme, **PHONE, **MOTION) as page:
        for path in ("mechanism/", "parameters-and-shapes/"):
            page.goto(site_url + path)
            settle(page)
            assert not page.evaluate("matchMedia('(hover)').matches")
            tab_indexes = page.evaluate(WIDE_CODE_TAB_INDEXES)
            assert tab_indexes, f"{path}: no code block wider than the screen"
            assert tab_indexes == [0] * len(tab_indexes), f"{path}: the wide code blocks' tab indexes"
            assert blocking(page, axe_source, f"{path} ({scheme}, a phone)") == []
    log.check()


@pytest.fixture(scope="module")
def shapes_walk(browser, site_url, shapes_path, axe_source) -> Findings:
    """Initial, waiting for Python (busy, results marked stale), live with "More" open, the divisibility
    check with its suggestions, and after a failed start (error)."""
    with widget_walk(browser, site_url + shapes_path, "shapes", axe_source, '[data-mha-widget="shapes"]') \
            as (page, widget, release, findings):
        findings.check("initial")
        change(widget, "n_heads", 16)
        expect(widget).to_have_attribute("data-state", "busy")
        expect(widget.locator('[data-output="results"]')).to_have_attribute("data-stale", "true")
        findings.check("busy and stale")
        release()
        wait_ready(page)
        expect(widget).to_have_attribute("data-state", "live")
        widget.locator("details summary").click()
        findings.check("live, More open")
        change(widget, "n_heads", 6)
        expect(widget.locator('[data-output="check"]')).to_have_attribute("data-ok", "false")
        expect(widget).to_have_attribute("data-state", "live")
        findings.check("check with suggestions")
        widget = break_worker_and_reload(page, "shapes")
        findings.subject = widget
        change(widget, "batch", form_config(widget)["batch"] + 1)
        expect(widget).to_have_attribute("data-state", "error")
        findings.check("error")
    return findings


@in_every_look
def test_the_shapes_widget_in_every_state(shapes_walk, scheme, viewport):
    shapes_walk.assert_none(scheme, viewport)


@pytest.fixture(scope="module")
def heads_walk(browser, site_url, heads_path, axe_source) -> Findings:
    """Initial, waiting for Python with a new sentence (stale), live with the knock-out and the weight
    matrices open, and after a failed start (error)."""
    with widget_walk(browser, site_url + heads_path, "heads", axe_source, '[data-mha-widget="heads"]') \
            as (page, widget, release, findings):
        findings.check("initial")
        sentence = widget.locator('textarea[name="sentence"]')
        sentence.fill("the cat sat on the mat, the cat")
        sentence.press("Enter")
        expect(widget.locator('[data-stale="true"]').first).to_be_attached()
        findings.check("stale")
        release()
        wait_ready(page)
        expect(widget).to_have_attribute("data-state", "live")
        widget.locator('input[name="ablate"]').check()
        expect(widget).to_have_attribute("data-state", "live")
        widget.locator('[data-output="weights-details"] summary').click()
        findings.check("live, knocked out, matrices open")
        findings.subject = break_worker_and_reload(page, "heads")
        findings.check("error")
    return findings


@in_every_look
def test_the_heads_widget_in_every_state(heads_walk, scheme, viewport):
    heads_walk.assert_none(scheme, viewport)


@pytest.fixture(scope="module")
def exercise_walk(browser, site_url, built_site, axe_source) -> Findings:
    """An exercise with its code editor loaded, running while Python is held back, failed with what the code
    printed and a solution shown, and passed."""
    from test_exercises import RIGHT, run

    url = site_url + pages_with(built_site, 'data-exercise="split_heads"')[0]
    exercise = '[data-exercise="split_heads"]'
    with widget_walk(browser, url, "exercise", axe_source, exercise) as (page, widget, release, findings):
        expect(widget).to_have_attribute("data-editor-loaded", "true")
        findings.check("editor loaded")
        widget.locator("button[name=run]").click()
        expect(widget.locator("[data-output=result]")).to_contain_text("Waiting for Python")
        findings.check("waiting for Python")
        release()
        expect(widget.locator("[data-output=result]")).not_to_have_attribute("data-status", "running", timeout=120_000)
        status, message = run(widget, "def split_heads(x, n_heads):\n    print('x is', x.shape)\n    return x\n")
        assert status == "fail", message
        widget.locator("button[name=solution]").click()
        findings.check("failed, printed, solution shown")
        status, message = run(widget, RIGHT["split_heads"])
        assert status == "pass", message
        findings.check("passed")
    return findings


@in_every_look
def test_the_exercises_in_every_state(exercise_walk, scheme, viewport):
    exercise_walk.assert_none(scheme, viewport)


@pytest.fixture(scope="module")
def tiling_walk(browser, site_url, built_site, axe_source) -> Findings:
    """Initial, stale (a block asked while Python is held back), live at the last step without the mask, a block
    refused in words for a long sentence, and after a failed start (error)."""
    url = site_url + pages_with(built_site, 'data-mha-widget="tiling"')[0]
    with widget_walk(browser, url, "tiling", axe_source, '[data-mha-widget="tiling"]') \
            as (page, widget, release, findings):
        findings.check("initial")
        widget.locator('input[name="block"]').press("ArrowLeft")
        expect(widget.locator('[data-results][data-stale="true"]')).to_be_attached()
        findings.check("stale")
        release()
        wait_ready(page)
        expect(widget).to_have_attribute("data-block", "3")
        expect(widget).to_have_attribute("data-state", "live")
        widget.locator('input[name="causal"]').press("Space")
        expect(widget).to_have_attribute("data-causal", "false")
        widget.locator('input[name="step"]').press("End")
        expect(widget.locator('[data-output="max-error"]')).to_be_visible()
        findings.check("live, the last step")
        sentence = widget.locator('input[name="sentence"]')
        sentence.fill(" ".join(f"w{i}" for i in range(40)))
        sentence.press("Enter")
        expect(widget.locator('[data-message="error"]')).to_be_visible()
        findings.check("a block refused")
        findings.subject = break_worker_and_reload(page, "tiling")
        findings.check("error")
    return findings


@in_every_look
def test_the_tiling_widget_in_every_state(tiling_walk, scheme, viewport):
    tiling_walk.assert_none(scheme, viewport)
