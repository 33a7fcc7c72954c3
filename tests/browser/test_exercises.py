"""The exercises in Chromium, as a reader uses them: code typed into the editor (a click, select all, one text
insertion), Run, and the answer mha_core.exercises gives in the exercises' own Python: a right solution written
differently from the shipped one passes, wrong ones fail naming the case, a copy is refused as a copy, a syntax
error and an exception show the reader's line, a huge print is cut, an endless loop is stopped within a few
seconds (by the time limit, or by Stop) after which the same exercise passes and the page's widgets still
compute. The detectors are checked on the trained model the page carries. The code is kept across a reload; Reset
restores the skeleton; the editor is keyboard-usable."""
from __future__ import annotations

import json
import re
import time
from urllib.parse import urljoin

import pytest
from playwright.sync_api import expect

import conftest
from mha_page.bridge.exercises import call as exercises_call
from mha_core.exercises import EXERCISES, TIME_LIMIT_S, page_messages
from tests.core.test_exercises import RIGHT, TRAINED_CASE_FAILS, WRONG, WRONG_ON_THE_TRAINED_MODEL, trained_params
from sitevisit.site import pages_with

FIRST_RUN_MS = 120_000  # a first run starts the widgets' Python, then the exercises' own: slow on a busy machine
LOOP = "def merge_heads(z):\n    while True:\n        pass\n"
PRINTS_THEN_LOOPS = "def merge_heads(z):\n    print('z has', z.ndim, 'axes')\n    while True:\n        pass\n"


@pytest.fixture(scope="session")
def exercise_url(built_site, site_url):
    """exercise_url(name): the page holding the NAME exercise."""
    return lambda name: urljoin(site_url, pages_with(built_site, f'data-exercise="{name}"')[0])  # "./" resolved


def exercise_on(page, exercise_url, name: str):
    """The NAME exercise on its page, its code editor loaded. A page elsewhere on the site follows its link
    there, as a reader moves on, so that its Pythons (the widgets' and the exercises') serve the next page."""
    url = exercise_url(name)
    if page.url.split("#")[0] != url:
        if page.url.startswith("http"):  # on the site (the tests visit no other)
            conftest.follow_link(page, url)
        else:
            page.goto(url)
    exercise = page.locator(f'[data-mha-widget="exercise"][data-exercise="{name}"]')
    exercise.scroll_into_view_if_needed()
    expect(exercise).to_have_attribute("data-editor-loaded", "true")
    return exercise


def write(exercise, code: str) -> None:
    """Replace the editor's code by code, as the contract says a reader (or a check) does."""
    exercise.locator("[data-editor]").click()
    exercise.page.keyboard.press("ControlOrMeta+A")
    exercise.page.keyboard.insert_text(code)


def run(exercise, code: str | None = None, timeout: int = FIRST_RUN_MS) -> tuple[str, str]:
    """(data-status, message) once the run of code (or of what the editor holds) has ended."""
    if code is not None:
        write(exercise, code)
    exercise.locator("button[name=run]").click()
    result = exercise.locator("[data-output=result]")
    expect(result).not_to_have_attribute("data-status", "running", timeout=timeout)
    return result.get_attribute("data-status"), result.text_content()


@pytest.fixture
def shared(shared_page, exercise_url):
    """exercise(name, fresh=False): that exercise on the module's shared page, so that its Python starts once for
    the tests; fresh: mounted afresh (its page left and come back to, if the page is there), as a reader coming to
    its page finds it, whatever an earlier test did with it."""
    page, _ = shared_page

    def exercise(name: str, fresh: bool = False):
        if fresh and page.url.split("#")[0] == exercise_url(name):
            conftest.come_back(page)
        return exercise_on(page, exercise_url, name)
    return exercise


@pytest.mark.parametrize("name", EXERCISES)
def test_a_right_solution_passes_and_wrong_ones_fail_naming_the_case(shared, name):
    exercise = shared(name, fresh=True)
    assert exercise.locator("button[name=solution]").is_hidden()  # before a first attempt
    assert run(exercise, RIGHT[name]) == ("pass", run_message(exercise))
    assert run_message(exercise).startswith("Passed all")
    expect(exercise.locator("button[name=solution]")).to_be_visible()
    for wrong_name, code, words in WRONG:
        if wrong_name != name:
            continue
        status, message = run(exercise, code)
        assert status in ("fail", "error"), message
        for word in words:
            assert word in message, message
    stored = exercise.page.evaluate(f"() => localStorage.getItem('mha-exercise:{name}')")
    assert stored == [code for n, code, _ in WRONG if n == name][-1]  # the inserted text, verbatim


def run_message(exercise) -> str:
    return exercise.locator("[data-output=result]").text_content()


def test_the_detectors_are_checked_on_the_trained_model_the_page_carries(shared):
    """The page hands the checks the weights of the run its training widget ships: a function wrong only on the
    trained model's sequences fails on that case."""
    exercise = shared("detectors")
    assert exercise.get_attribute("data-params") == trained_params()
    status, message = run(exercise, WRONG_ON_THE_TRAINED_MODEL)
    assert status == "fail" and message.startswith(TRAINED_CASE_FAILS), message


def test_a_copy_is_refused_and_errors_show_the_reader_s_line(shared):
    exercise = shared("split_heads")
    copy = ("import numpy as np\ndef split_heads(x, n_heads):\n    B, n, d = x.shape\n"
            "    return x.reshape(B, n, n_heads, d // n_heads).transpose(0, 2, 1, 3).copy()\n")
    status, message = run(exercise, copy)
    assert status == "fail" and "your result is a copy" in message and 'Case "random input"' in message, message
    status, message = run(exercise, "import numpy as np\n\ndef split_heads(x, n_heads)\n    return x\n")
    assert status == "error" and message.startswith("SyntaxError at line 3")
    status, message = run(exercise, "def split_heads(x, n_heads):\n    return x.reshape(-1, n_heads, 7)\n")
    assert status == "error"
    assert "ValueError" in message and "line 2, in split_heads: return x.reshape(-1, n_heads, 7)" in message
    assert "exercises.py" not in message and "Traceback" not in message


def test_empty_code_is_refused_in_the_readers_words(shared):
    exercise = shared("split_heads")
    refusal = json.loads(exercises_call("run_exercise", json.dumps({"name": "split_heads", "code": " \n"})))["error"]
    control = exercise.locator("label.mha-exercise__label").text_content().split(":")[0]  # "Your code: split_heads(...)"
    assert refusal.startswith(f"{control} ")  # the reader's name of the control, not run_exercise's "code"
    assert run(exercise, " \n") == ("error", refusal)


# Where the caret and the character above it stand on the screen: the pointer block's text is the line, a newline,
# then the caret's line; a Range around one character gives that character's box.
CARET = """pre => {
  const text = pre.firstChild;
  const [line, caret] = text.data.split("\\n");
  const column = caret.indexOf("^");
  const box = (at) => { const r = document.createRange(); r.setStart(text, at); r.setEnd(text, at + 1); return r.getBoundingClientRect(); };
  const [above, under] = [box(column), box(line.length + 1 + column)];
  return { line, column, above: [above.left, above.right], caret: [under.left, under.right] };
}"""


def test_a_syntax_error_s_caret_stands_under_its_column(shared):
    """In a proportional font the caret's lead of spaces is narrower than the letters above it; in the monospace
    block each character of both lines has the same width, so the caret's box is the offending character's."""
    exercise = shared("split_heads")
    status, message = run(exercise, "def split_heads(x, n_heads):\n    return x.reshape(WWWWW iiiii)\n")
    assert status == "error" and message.startswith("SyntaxError at line 2"), message
    pointer = exercise.locator("[data-output=pointer]")
    expect(pointer).to_be_visible()
    at = pointer.evaluate(CARET)
    assert at["line"] == "return x.reshape(WWWWW iiiii)" and at["column"] == at["line"].index("WWWWW"), at
    assert at["caret"] == pytest.approx(at["above"], abs=0.5), at
    assert run(exercise, RIGHT["split_heads"])[0] == "pass"
    expect(pointer).to_be_hidden()


def test_a_huge_print_is_cut(shared):
    exercise = shared("kv_cache")
    code = ("def kv_cache_bytes(*sizes):\n    for i in range(2):\n        print('line', i)\n"
            "    print('x' * 20_000_000)  # 20 MB\n    return 0\n")
    status, message = run(exercise, code)
    assert status == "fail" and message.startswith('Case "GPT-2 small')
    printed = exercise.locator("[data-output=print] pre")
    expect(printed).to_be_visible()
    text = printed.text_content()
    assert text.startswith("line 0\nline 1\nxxx") and text.endswith(" more characters not shown)")
    assert len(text) < 5000


def test_an_endless_loop_is_stopped_then_the_exercise_passes_and_the_widgets_still_compute(shared):
    exercise = shared("merge_heads")
    run(exercise, RIGHT["merge_heads"])  # the exercises' Python has started
    t0 = time.monotonic()
    status, message = run(exercise, PRINTS_THEN_LOOPS, timeout=15_000)
    took = time.monotonic() - t0
    assert status == "stopped" and message.startswith(f"Stopped after {TIME_LIMIT_S} s"), message
    printed = exercise.locator("[data-output=print] pre")
    expect(printed).to_have_text("z has 4 axes")  # what it printed before the time limit is kept
    assert took < TIME_LIMIT_S + 7, took  # the rest is a loaded machine's slack
    assert run(exercise, RIGHT["merge_heads"])[0] == "pass"
    # Stop, pressed by the reader, ends a run at once; from the keyboard, the focus is on the button that acts.
    write(exercise, LOOP)
    exercise.locator("button[name=run]").press("Enter")
    result = exercise.locator("[data-output=result]")
    expect(result).to_have_attribute("data-status", "running")
    expect(result).to_have_text(page_messages()["running"])  # its Python has started: the code is sent to it
    expect(exercise.locator("button[name=stop]")).to_be_focused()  # Run disabled itself: the focus moved to Stop
    exercise.page.keyboard.press("Enter")
    expect(result).to_have_attribute("data-status", "stopped", timeout=2_000)
    expect(exercise.locator("button[name=run]")).to_be_focused()
    expect(printed).to_be_hidden()  # this code printed nothing
    assert run(exercise, RIGHT["merge_heads"])[0] == "pass"
    # The widgets' own Python was never touched: the memory widget on the same page still computes.
    page = exercise.page
    assert page.locator("html").get_attribute("data-mha-runtime") == "ready"
    memory = page.locator('[data-mha-widget="memory"]')
    memory.scroll_into_view_if_needed()
    memory.locator('select[name="n_heads"]').select_option("4")
    expect(memory).to_have_attribute("data-h", "4")
    expect(memory).to_have_attribute("data-state", "live")


@pytest.mark.before_python
def test_the_code_is_kept_across_a_reload_and_reset_restores_the_skeleton(page, exercise_url):
    """Python is held back: neither needs it, and the reload would start it afresh."""
    exercise = exercise_on(page, exercise_url, "attention")
    write(exercise, "# mine\n")
    page.reload()
    exercise = page.locator('[data-exercise="attention"]')
    exercise.scroll_into_view_if_needed()
    expect(exercise).to_have_attribute("data-editor-loaded", "true")
    expect(exercise.locator("[data-editor]")).to_have_text("# mine")
    exercise.locator("button[name=reset]").click()
    skeleton = EXERCISES["attention"].skeleton
    expect(exercise.locator("[data-editor]")).to_contain_text("def attention(q, k, v, causal=False):")
    assert page.evaluate("() => localStorage.getItem('mha-exercise:attention')") is None
    assert skeleton.startswith("import numpy as np")


def test_the_skeleton_fails_and_the_solution_shows(shared):
    exercise = shared("attention")
    page = exercise.page
    exercise.locator("button[name=reset]").click()  # whatever code an earlier test kept
    assert run(exercise)[0] == "fail"  # the skeleton returns None
    exercise.locator("button[name=solution]").click()
    expect(exercise.locator("[data-output=solution]")).to_be_visible()
    assert exercise.locator("[data-output=solution] code").text_content() == EXERCISES["attention"].solution
    conftest.resize(page, {"width": 390, "height": 844})  # too narrow: the solution scrolls in a box Tab reaches
    scrolling = exercise.locator("[data-output=solution]").evaluate("""s => [s, ...s.querySelectorAll("*")]
      .filter(e => ["auto", "scroll"].includes(getComputedStyle(e).overflowX) && e.scrollWidth > e.clientWidth + 1)
      .map(e => [e.tagName, e.tabIndex])""")
    assert scrolling == [["PRE", 0]], scrolling


def test_before_python_is_ready_run_says_what_it_waits_for(page, exercise_url):
    release = conftest.hold_python(page)
    exercise = exercise_on(page, exercise_url, "split_heads")
    exercise.locator("button[name=run]").click()
    result = exercise.locator("[data-output=result]")
    expect(result).to_have_attribute("data-status", "running")
    expect(result).to_contain_text("Waiting for Python")
    release()
    expect(result).not_to_have_attribute("data-status", "running", timeout=FIRST_RUN_MS)
    assert result.get_attribute("data-status") == "fail", result.text_content()  # the skeleton


def test_after_the_pages_python_failed_to_start_run_starts_it_again(page, page_log, exercise_url):
    """The page's Python failed (its .wasm missing): Run says why, and the next Run starts it again, as the
    status line's Retry does, once the file is there."""
    page_log.allow(r"Failed to load resource")
    wasm = re.compile(r".*/pyodide\.asm\.wasm\.gz$")
    page.context.route(wasm, lambda route: route.fulfill(status=404, body="missing"))
    exercise = exercise_on(page, exercise_url, "split_heads")
    expect(page.locator("html")).to_have_attribute("data-mha-runtime", "error")
    status, message = run(exercise)
    assert status == "error" and re.fullmatch(r"Python could not start: [^:]*wasm[^:]*: HTTP 404\. Press Run to start a "
                                              r"fresh Python\.", message), message
    page.context.unroute(wasm)
    status, message = run(exercise)
    assert status == "fail", message  # the skeleton, in a Python started again


@pytest.mark.before_python
def test_the_editor_by_keyboard_and_on_a_phone(page, exercise_url):
    page.set_viewport_size({"width": 390, "height": 844})
    exercise = exercise_on(page, exercise_url, "split_heads")
    editor = exercise.locator("[data-editor]")
    assert editor.get_attribute("aria-labelledby")
    assert editor.evaluate("e => document.getElementById(e.getAttribute('aria-labelledby')).textContent") \
        == "Your code: split_heads(x, n_heads)"
    write(exercise, "def f():\nx = 1")
    page.keyboard.press("Home")
    page.keyboard.press("Tab")  # indents, and keeps the focus in the editor
    stored = page.evaluate("() => localStorage.getItem('mha-exercise:split_heads')")
    assert stored == "def f():\n    x = 1"
    assert page.evaluate("() => document.activeElement.hasAttribute('data-editor')")
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")  # the way out
    assert page.evaluate("() => document.activeElement.getAttribute('name')") == "run"
    page.keyboard.press("Enter")
    expect(exercise.locator("[data-output=result]")).to_have_attribute("data-status", "running")
    # At 390 px the exercise fits the screen; a long line scrolls inside the editor, not the page.
    write(exercise, "x = '" + "a" * 200 + "'\n")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    box = exercise.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390
    # Scrolled sideways, the code passes under the line numbers, which stay in place and hide it.
    gutter = exercise.locator(".cm-gutters")
    left = gutter.bounding_box()["x"]
    exercise.locator(".cm-scroller").evaluate("s => { s.scrollLeft = 200; }")
    assert gutter.bounding_box()["x"] == pytest.approx(left, abs=1)
    assert gutter.evaluate("g => getComputedStyle(g).backgroundColor") not in ("transparent", "rgba(0, 0, 0, 0)")


EDITOR_FILE = re.compile(r"/exercise/editor[.-][\w.]+\.js$")  # the bundle (editor.bundle.js) and its chunks


def test_the_code_editor_is_fetched_only_when_an_exercise_comes_near(page, page_log, exercise_url, built_site):
    page.goto(exercise_url("split_heads"), wait_until="networkidle")  # the page's top: the exercises are far below
    editor = lambda: sorted(url.rsplit("/", 1)[1] for url in page_log.requests if EDITOR_FILE.search(url))
    assert not editor() and page.locator('[data-editor-loaded]').count() == 0
    assert page.locator("textarea[data-editor]").count() == 2  # the plain editor until then
    exercise_on(page, exercise_url, "split_heads")
    # the bundle and each of its chunks, once
    assert editor() == sorted(p.name for p in (built_site / "assets/widgets/exercise").glob("editor*.js"))


# Resolves once el is laid out: an exercise is skipped (content-visibility) until the frame after it comes near, and
# is meanwhile as high as its placeholder.
LAID_OUT = """async (el) => {
  while (!el.checkVisibility({ contentVisibilityAuto: true })) await new Promise(requestAnimationFrame);
}"""


@pytest.mark.before_python
@pytest.mark.parametrize("width", [1200, 390])
def test_the_code_editor_takes_the_plain_editor_s_place_without_moving_the_page(page, exercise_url, width):
    """Until the code editor has loaded, the plain editor shows the code as the code editor will: in the code font,
    a row for each line; the swap leaves the exercise as high as it was, so nothing below it moves."""
    page.set_viewport_size({"width": width, "height": 844})
    release = conftest.hold_requests(page, re.compile(r".*/exercise/editor\.bundle\.js$"))
    page.goto(exercise_url("split_heads"))
    exercise = page.locator('[data-mha-widget="exercise"][data-exercise="split_heads"]')
    exercise.scroll_into_view_if_needed()
    textarea = exercise.locator("textarea[data-editor]")
    textarea.evaluate(LAID_OUT)
    expect(textarea).to_have_attribute("rows", str(textarea.input_value().count("\n") + 1))
    font = "el => getComputedStyle(el).fontFamily + ' ' + getComputedStyle(el).lineHeight"
    before = exercise.bounding_box()["height"], textarea.evaluate(font)
    release()
    expect(exercise).to_have_attribute("data-editor-loaded", "true")
    height, code_font = exercise.bounding_box()["height"], exercise.locator(".cm-content").evaluate(font)
    assert (height, code_font) == (pytest.approx(before[0], abs=0.5), before[1])
