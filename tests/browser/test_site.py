"""The site as a whole, in Chromium: every page loads from the site itself only, meets its Content-Security-
Policy (a meta tag: 'self', plus the 'wasm-unsafe-eval' Pyodide needs) with both widgets working under it,
starts Python only where a widget is, lays its formulas out as math, moving between pages (Material's instant
navigation, or a full reload) mounts the widgets, and search builds its index only when the reader searches.
conftest fails each test on a CSP violation, a console error or a request off 127.0.0.1."""
from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from conftest import LOCAL_HOSTS, PageLog, follow_link, hold_python, resize, wait_ready, watched_page
from sitebuild import serving
from sitevisit.site import pages_with
from tests.helpers import ask, check_answered

PYTHON_FILES = re.compile(r"/assets/(pyodide|wheels)/")
META = 'meta[http-equiv="Content-Security-Policy"]'
POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"')
NEXT_FRAME = "() => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)))"
CHANGES = {"shapes": 5, "heads": "Mary gave John a book; Mary gave", "memory": 4, "worked": 2,
           "training": "Mary gave John a book; Mary gave", "one-vs-many": "Home",
           "circuits": "Home", "real-model": "prose", "exercise": None, "tiling": 3}


# What of a widget reaches past its content box (its padding is its margin inside the frame), as
# "tag.class left..right (box left..right)": elements inside a box that scrolls sideways aside; 3 px allowed for
# what draws a little past its line (a native control's margin, an inline code's padding at a line break).
OUT_OF_BOX = """root => {
  const r = root.getBoundingClientRect(), s = getComputedStyle(root);
  const left = r.left + parseFloat(s.borderLeftWidth) + parseFloat(s.paddingLeft) - 3;
  const right = r.right - parseFloat(s.borderRightWidth) - parseFloat(s.paddingRight) + 3;
  const scrolled = (el) => { for (let p = el.parentElement; p !== root; p = p.parentElement)
    if (getComputedStyle(p).overflowX !== "visible") return true; return false; };
  return [...root.querySelectorAll("*")].filter((el) => { const b = el.getBoundingClientRect();
    return b.width && b.height && (b.left < left || b.right > right) && !scrolled(el); })
    .map((el) => { const b = el.getBoundingClientRect();
      return `${el.tagName.toLowerCase()}.${el.classList[0] ?? ""} ${Math.round(b.left)}..${Math.round(b.right)} (box ${Math.round(left)}..${Math.round(right)})`; });
}"""


def site_pages(site) -> list[str]:
    """Every HTML page of the built site, as a URL path relative to the site ("", "mechanism/", "404.html")."""
    return sorted(p.relative_to(site).as_posix().removesuffix("index.html") for p in site.rglob("*.html"))


def use_widgets(page) -> list[str]:
    """Wait for Python, change each widget of the page and see it answered; return the widgets' names."""
    wait_ready(page)
    names = []
    for widget in page.locator("[data-mha-widget]").all():
        names.append(widget.get_attribute("data-mha-widget"))
        ask(names[-1], widget, CHANGES[names[-1]])
        check_answered(names[-1], widget, CHANGES[names[-1]])
    return names


def assert_no_python(page, requests: list[str]) -> None:
    """A frame after the page's load (when the runtime would start): Python idle, none of its files, no worker."""
    page.wait_for_load_state("load")
    page.evaluate(NEXT_FRAME)
    assert page.locator("html").get_attribute("data-mha-runtime") == "idle", page.url
    assert [u for u in requests if PYTHON_FILES.search(u)] == [], page.url
    assert not [w.url for w in page.workers if "/runtime/" in w.url], page.url


def widgets_on_request(html: Path) -> bool:
    """Whether every widget of the built page html computes only when the reader asks (data-python)."""
    text = html.read_text(encoding="utf-8")
    return text.count("data-mha-widget=") == text.count('data-python="on-request"')


def policies(site) -> dict[str, str]:
    """Each page's Content-Security-Policy (site_pages' paths -> its meta tag's content), read in the built files."""
    return {path: POLICY.search((site / path / "index.html" if not path.endswith(".html") else site / path)
                                .read_text(encoding="utf-8"))[1] for path in site_pages(site)}


def test_every_page_meets_its_csp_and_loads_from_the_site_only(shared_page, browser, built_site, site_url):
    """Every page carries the same policy (its meta tag, read in the built files): 'self', plus the
    'wasm-unsafe-eval' Pyodide needs. Each page, loaded directly as a reader landing on it, meets it as it loads and
    mounts its widgets (with Python held back: its start is checked below); a page without a widget, or whose
    widgets compute only on request (the real model's, at its Load), fetches no Pyodide and no wheel and starts
    no worker of ours, even a frame after its load (when the runtime would start).
    Under instant navigation the policy of the page first loaded stays in force for the pages the reader moves on
    to; each page's being the same, it is their own. So every widget goes live under it in one document: the home
    page, loaded directly, starts Python, and the reader follows the site's links to each page with widgets and
    uses them (one Python, the page's, serves them all, as a reader's does).
    The site is built for its address, so 404.html links its files from the site's root: it is shown where a
    missing page would be, deep in the site, as a host shows it."""
    page, page_log = shared_page
    pages = policies(built_site)
    assert {"", "404.html", "parameters-and-shapes/", "what-heads-learn/"} <= set(pages)
    policy = pages[""]
    assert "default-src 'self'" in policy and "script-src 'self' 'wasm-unsafe-eval'" in policy
    assert set(pages.values()) == {policy}, "a page has a policy of its own: instant navigation would keep another"
    widget_pages = {path.removeprefix("./") for path in pages_with(built_site, "data-mha-widget=")}  # "./": the home
    with_widgets = [path for path in pages if path in widget_pages]
    on_request = [path for path in with_widgets if widgets_on_request(built_site / path / "index.html")]
    assert on_request == ["heads-of-a-real-model/"], on_request
    missing = site_url + "no/such/page/"
    with watched_page(browser, page_log) as landing:
        hold_python(landing)
        landing.route(missing, lambda route: route.fulfill(path=built_site / "404.html", content_type="text/html"))
        for path in pages:
            before = len(page_log.requests)
            landing.goto(missing if path == "404.html" else site_url + path)
            assert landing.locator(META).get_attribute("content") == policy, path
            if path in with_widgets:
                expect(landing.locator("[data-mha-widget]:not([data-mounted])")).to_have_count(0)
                landing.evaluate(NEXT_FRAME)
            if path not in with_widgets or path in on_request:
                assert_no_python(landing, page_log.requests[before:])
    assert with_widgets[0] == "", with_widgets  # the home page, where the reader starts
    live = []
    for path in with_widgets:
        follow_link(page, site_url + path) if path else page.goto(site_url)
        assert page.locator(META).get_attribute("content") == policy
        live += use_widgets(page)
    assert sorted(live) == ["circuits"] + ["exercise"] * 6 + ["heads", "memory", "one-vs-many", "real-model", "shapes",
                                                              "tiling", "training", "worked"]
    assert {urlsplit(u).hostname for u in page_log.requests if urlsplit(u).scheme.startswith("http")} <= LOCAL_HOSTS


def test_every_widget_stays_inside_its_frame_on_a_phone_and_a_desktop(browser, built_site, site_url):
    """Every widget of every page, as built (Python held back), at 390 px on a phone and at 1280 px: nothing
    reaches into the frame's padding or past it, but what scrolls sideways in a box of its own."""
    found = []
    with watched_page(browser, PageLog(), {"width": 390, "height": 844}, is_mobile=True, has_touch=True) as page:
        hold_python(page)
        for path in pages_with(built_site, "data-mha-widget="):
            page.goto(site_url + path)
            for viewport in ({"width": 390, "height": 844}, {"width": 1280, "height": 844}):
                resize(page, viewport)
                for widget in page.locator("[data-mha-widget]").all():
                    widget.scroll_into_view_if_needed()  # laid out (content-visibility)
                    found += [f"{path} {widget.get_attribute('data-mha-widget')} at {viewport['width']} px: {out}"
                              for out in widget.evaluate(OUT_OF_BOX)]
    assert not found, "\n".join(found)


def test_the_csp_blocks_what_the_site_does_not_use_and_the_violation_is_seen(page, page_log, site_url):
    """The policy is in force (an injected inline script and a request to another site are refused), and
    the securitypolicyviolation listener every test relies on hears of it."""
    page_log.allow(r"Content Security Policy")
    page.goto(site_url)
    fetched = page.evaluate("""() => {
      const script = document.createElement("script");
      script.textContent = "window.__injected = true";
      document.head.append(script);
      return fetch("https://example.com/").then(() => "fetched", () => "refused");
    }""")
    page.wait_for_function("() => window.__mhaViolations.length >= 2")
    assert fetched == "refused" and page.evaluate("window.__injected") is None
    seen = sorted(re.sub(r" \(.*", "", v) for v in page_log.violations)
    assert seen == ["connect-src blocked https://example.com/", "script-src-elem blocked inline"], seen
    page_log.violations.clear()  # provoked here; any other fails the test


def test_moving_between_pages_mounts_the_widgets(shared_page, site_url, shapes_path, heads_path):
    """Instant navigation: the footer's link brings the next page into the same document, whose widgets mount
    (three of them of kinds the first page lacks, their modules loaded then) and use the Python already running; a
    full reload mounts them afresh and starts Python again. (The module's page: one with Python running moves on to
    the first page by the site's link, as a reader does.)"""
    page, _ = shared_page
    if page.url.startswith(site_url) and page.locator("html").get_attribute("data-mha-runtime") == "ready":
        follow_link(page, site_url + shapes_path)
    else:
        page.goto(site_url + shapes_path)
    features = json.loads(page.locator("#__config").text_content())["features"]
    assert "navigation.instant" in features
    assert use_widgets(page) == ["shapes", "exercise", "tiling", "exercise"]
    page.evaluate("window.__earlier = true")
    page.locator("a.md-footer__link--next").click()  # shapes -> heads, the next page
    expect(page).to_have_url(site_url + heads_path)
    expect(page.locator('[data-mha-widget="shapes"]')).to_have_count(0)  # the URL changes before the content
    assert page.evaluate("window.__earlier") is True  # the same document
    on_heads_page = ["heads", "training", "exercise", "circuits"]
    assert use_widgets(page) == on_heads_page
    page.add_init_script(RUNTIME_STATES)  # (kept by the module's page: it only watches)
    page.reload()
    assert page.evaluate("window.__earlier") is None  # a new document
    assert use_widgets(page) == on_heads_page
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "ready")
    states = page.evaluate("window.__runtimeStates")
    assert states[0] == "idle" and states[-1] == "ready", states  # started anew (a restored memory is quick)


# Runs before the page's own scripts: each state the page's runtime takes (bridge.js's data-mha-runtime), in order.
RUNTIME_STATES = """window.__runtimeStates = [];
new MutationObserver(() => window.__runtimeStates.push(document.documentElement.dataset.mhaRuntime))
  .observe(document, { subtree: true, attributes: true, attributeFilter: ["data-mha-runtime"] });  // (no <html> yet)"""


# The geometry of the home page's first fraction in stretched brackets (\left( ... \right)):
# a_ij = softmax_j(q_i . k_j / sqrt(d_k)), o_i = ...
LAID_OUT = """() => {
  const bracket = [...document.querySelectorAll('div.arithmatex math mo[fence="true"]')]
    .find((mo) => mo.parentElement.querySelector(":scope > mfrac"));
  const formula = bracket.closest("math");
  const box = (el) => el.getBoundingClientRect();
  const [numerator, denominator] = bracket.parentElement.querySelector(":scope > mfrac").children;
  return { numeratorAbove: box(numerator).bottom <= box(denominator).top,
           bracketOverLetter: box(bracket).height / box(formula.querySelector("mi")).height,
           fontFamily: getComputedStyle(formula).fontFamily };
}"""


def used_fonts(page, selector: str) -> set[str]:
    """The fonts Chromium drew the text of the first element matching selector in (DevTools' platform fonts)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    return {font["familyName"] for font in cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]}


def test_the_formulas_are_laid_out_as_math_in_a_math_font(page, site_url):
    """The browser lays the MathML out itself: a fraction's numerator above its denominator, the brackets of
    \\left( \\right) stretched around it, and the symbols drawn in one of the math fonts the site's style names
    (fonts with a MATH table; this machine's is DejaVu Math TeX Gyre), not in a fallback."""
    page.goto(site_url)
    laid_out = page.evaluate(LAID_OUT)
    assert laid_out["numeratorAbove"], laid_out
    assert laid_out["bracketOverLetter"] > 1.5, laid_out
    named = {f.strip().strip('"') for f in laid_out["fontFamily"].split(",")} - {"math"}
    used = used_fonts(page, "div.arithmatex mfrac mi")
    assert used and used <= named, (used, named)


def search_worker(page):
    """Material's search worker, started through search-on-demand.js (now, or the next worker the page starts:
    Playwright reports no event between the look and the wait)."""
    def is_search(worker) -> bool:
        return "/workers/search-on-demand.js?material=search." in worker.url
    found = [w for w in page.workers if is_search(w)]
    return found[0] if found else page.wait_for_event("worker", is_search)


# Each code block of the page: [its content skipped by content-visibility now, its height, its top from the article's].
CODE_BLOCKS = """() => [...document.querySelectorAll(".md-typeset > .highlight")].map((b) => [
  !b.firstElementChild.checkVisibility({ contentVisibilityAuto: true }), b.getBoundingClientRect().height,
  b.getBoundingClientRect().top - b.parentElement.getBoundingClientRect().top])"""
# Each block of the text: [its distance from the block before it, its height, its width] (a widget's height
# aside: what it shows changes as Python starts).
BLOCKS = """() => [...document.querySelector(".md-typeset").children].map((b) => {
  const box = b.getBoundingClientRect(), before = b.previousElementSibling?.getBoundingClientRect();
  return [before ? box.top - before.bottom : 0, b.matches("[data-mha-widget]") ? null : box.height, box.width];
})"""
NOT_SKIPPED = ".md-typeset > * { content-visibility: visible !important; }"
# Scroll through the page a screen at a time, a frame at each: every block has been laid out once.
SCROLL_THROUGH = """async () => {
  for (let y = 0; y < document.documentElement.scrollHeight; y += innerHeight / 2) {
    scrollTo(0, y);
    await new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(drawn)));
  }
}"""
# The layout shifts of the page so far, as "value: moved element, …".
SHIFTS = """() => new Promise((resolve) => {
  const shifts = [];
  new PerformanceObserver((list) => shifts.push(...list.getEntries()))
    .observe({ type: "layout-shift", buffered: true });
  const moved = (e) => e.sources.map((s) => s.node?.outerHTML?.slice(0, 60));
  setTimeout(() => resolve(shifts.map((e) => `${e.value.toFixed(4)}: ${moved(e)}`)), 200);
})"""
VIEWPORTS = ({"width": 390, "height": 844}, {"width": 1280, "height": 800}, {"width": 1024, "height": 1366})


def drawn_once_parsed(page) -> None:
    """Have page's documents drawn first once wholly parsed: a browser draws a long document as far as it is
    parsed when its parser yields, which on a busy machine can be within the first screen (a formula half in),
    and the rest then moves what was drawn: the browser's streaming, not the page's layout. (The HTML standard's
    render-blocking expect link, added to the document served.)"""
    def fulfill(route):
        response = route.fetch()
        html = response.text().replace("<head>", '<head><link rel="expect" href="#mha-parsed" blocking="render">', 1)
        route.fulfill(response=response, body=html.replace("</body>", '<i id="mha-parsed"></i></body>', 1))
    page.route(lambda url: url.endswith("/"), fulfill)


def test_code_blocks_away_from_the_screen_are_skipped_at_the_place_and_height_they_are_laid_out(browser, site_url):
    """On a phone and a desktop, a code block far below the screen is not laid out yet (docs.css) but already has
    the height it has once laid out (from its number of lines): nothing moves as a block comes in."""
    for viewport in VIEWPORTS[:2]:
        log = PageLog()
        with watched_page(browser, log, viewport=viewport) as page:
            hold_python(page)  # the page's own layout: no widget's Python need start as the blocks scroll by
            page.goto(site_url + "mechanism/")
            before = page.evaluate(CODE_BLOCKS)
            assert len(before) > 5 and sum(skipped for skipped, *_ in before) > 3, before
            blocks = page.locator(".md-typeset > .highlight")
            for i, (_, height, _) in enumerate(before):
                blocks.nth(i).scroll_into_view_if_needed()
                page.wait_for_function(f"() => !({CODE_BLOCKS})()[{i}][0]", polling="raf")
                assert page.evaluate(CODE_BLOCKS)[i][1] == pytest.approx(height, abs=1), (viewport, i)
        log.check()


@pytest.mark.parametrize("path", ["mechanism/", "what-heads-learn/"])
def test_blocks_skipped_away_from_the_screen_are_laid_out_as_the_page_lays_them_out_and_move_nothing_at_load(
        browser, site_url, path):
    """On a phone, a desktop and a tall tablet, the page's first screen, drawn once the page is parsed, does not
    move as it loads (no block of it is skipped, to be drawn a frame late), far blocks are skipped (docs.css), and
    once each has been laid out every block of the text is as far from the one before it and as large as the page
    lays it out with nothing skipped: skipping changes no margin and no size."""
    for viewport in VIEWPORTS:
        log = PageLog()
        with watched_page(browser, log, viewport=viewport) as page:
            hold_python(page)  # (as above): the widgets keep their prerendered layout between the two measures
            drawn_once_parsed(page)
            page.goto(site_url + path)
            page.wait_for_load_state("load")
            page.evaluate(NEXT_FRAME)
            assert page.evaluate(SHIFTS) == [], viewport
            skipped = page.evaluate("""() => [...document.querySelector(".md-typeset").children]
              .filter((b) => b.firstElementChild
                && !b.firstElementChild.checkVisibility({ contentVisibilityAuto: true }))
              .map((b) => b.tagName.toLowerCase())""")
            assert {"p", "figure"} <= set(skipped), (viewport, skipped)
            page.evaluate(SCROLL_THROUGH)
            laid_out = page.evaluate(BLOCKS)
            page.add_style_tag(content=NOT_SKIPPED)
            page.evaluate(NEXT_FRAME)
            assert laid_out == [pytest.approx(place, abs=1) for place in page.evaluate(BLOCKS)], viewport
        log.check()


def test_search_builds_its_index_at_the_first_search(page, site_url, heads_path):
    """Once a page has loaded, the search worker keeps the site's text without building the index, and Material
    takes search as ready; the first search builds it and lists the page that explains the word, which opens
    by instant navigation and searches with the same worker."""
    page.goto(site_url)
    page.wait_for_load_state("load")
    worker = search_worker(page)
    worker.evaluate("new Promise((arrived) => { const check = () => kept !== null ? arrived() : setTimeout(check, 20);"
                    " check(); })")  # the site's text
    assert worker.evaluate("kept !== null && waiting === null"), "the site's text was indexed before a search"
    expect(page.locator(".md-search-result__meta")).to_have_text("Type to start searching")
    page.keyboard.press("/")
    page.keyboard.type("induction")
    expect(page.locator(".md-search-result__meta")).to_have_text(re.compile(r"\d+ matching documents?"))
    result = page.locator(f'.md-search-result__item > a[href$="{heads_path}"]')  # the list redraws as keys arrive
    expect(result).to_be_visible()
    assert worker.evaluate("kept === null && waiting === null")
    result.click()
    expect(page).to_have_url(re.compile(re.escape(site_url + heads_path)))
    assert search_worker(page) == worker and len([w for w in page.workers if "search" in w.url]) == 1
    page.keyboard.press("/")
    page.keyboard.type("softmax")
    expect(page.locator(".md-search-result__meta")).to_have_text(re.compile(r"\d+ matching documents?"))
    # The previews show formulas as text with sub- and superscripts, not as TeX.
    expect(page.locator(".md-search-result__article sub").first).to_be_attached()
    assert not re.search(r"\\[(\[]|\\frac", page.locator(".md-search-result__list").inner_text())


def test_a_build_without_a_site_address_navigates_instantly_served_on_port_8000(page, plain_site):
    """A build made as `make build` makes it (no site address) names its pages at 127.0.0.1:8000 in its sitemap,
    where Material's instant navigation looks for them: served there, a link changes the page without loading a
    new document. (Served by the test's own routing: the port may be busy on this machine.)"""
    def from_site(route):
        path = urlsplit(route.request.url).path.lstrip("/")
        file = plain_site / path / "index.html" if not path or path.endswith("/") else plain_site / path
        route.fulfill(path=file) if file.is_file() else route.fulfill(status=404)

    page.context.route(f"{serving.LOCAL_URL}**", from_site)
    with page.expect_response(f"{serving.LOCAL_URL}sitemap.xml"):  # read by Material as the page starts
        page.goto(f"{serving.LOCAL_URL}references/")
    page.wait_for_load_state("load")
    page.evaluate("window.__sameDocument = true")
    page.locator("a.md-footer__link--prev").click()
    expect(page).to_have_url(f"{serving.LOCAL_URL}caveats-and-the-block/")
    expect(page.locator("h1")).to_have_text(re.compile("Caveats"))
    assert page.evaluate("window.__sameDocument === true"), "the link loaded a new document"
