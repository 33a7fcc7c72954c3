"""The training widget in the real site: its first paint against the shipped asset, the step slider, head
selection, the knock-out (Python in the worker), a live run with Stop, bad settings and a diverging run,
leaving the page mid-run (instant navigation) and two tabs training at once."""
from __future__ import annotations

import hashlib
import json
import math
import re

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from mha_page.views.training import decode_params, display_labels, shown_as, training_evaluate
from mha_page.views.training_codec import WEIGHT_CHARS
from mha_page.views.training_words import ROLE_MIN
from mha_core.detectors import evaluate
from mha_core.model import TRAIN_RANGES, TrainConfig
from mha_core.training import eval_batch
from tests.helpers import assert_shows, form_config

pytestmark = pytest.mark.computes  # trains or runs a real model: conftest.BASELINE_COMPILERS

ASSET = "assets/widgets/training/run.json"
READ = """root => ({
  step: root.querySelector('[data-output="step"]').dataset.value,
  loss: root.querySelector('[data-output="loss"]').dataset.value,
  grid: [...root.querySelectorAll("button[data-layer]")].map(b => [+b.dataset.layer, +b.dataset.head,
          b.dataset.scorePreviousToken, b.dataset.scoreInduction, b.dataset.role]),
  cells: [...root.querySelectorAll("td[data-q][data-k][data-weight]")].map(td => [+td.dataset.q, +td.dataset.k, +td.dataset.weight]),
  selected: root.dataset.selected,
  marker: root.querySelector('[data-chart="loss"] [data-marker]').dataset.marker,
  lines: [...root.querySelectorAll("svg[data-chart] polyline")].filter(p => p.getAttribute("points")).length,
})"""


@pytest.fixture(scope="module")
def run(built_site) -> dict:
    return json.loads((built_site / ASSET).read_bytes())


@pytest.fixture(scope="module")
def training_url(site_url, widget_path) -> str:
    return site_url + widget_path("training")


def decoded(text: str, layers: int, heads: int, n: int) -> np.ndarray:
    """[L, h, n, n] weights from encode_patterns' text (each drawn weight in WEIGHT_CHARS characters), read here."""
    weights = np.zeros((layers, heads, n, n))
    q, k = np.tril_indices(n)
    weights[..., q, k] = np.array([float(text[i:i + WEIGHT_CHARS]) for i in range(0, len(text), WEIGHT_CHARS)]).reshape(
        layers, heads, -1)
    return weights


def patterns(checkpoint: dict, run: dict) -> np.ndarray:
    """[L, h, n, n] weights of a checkpoint, as the asset holds them."""
    c = run["config"]
    return decoded(checkpoint["patterns"], c["n_layers"], c["n_heads"], len(run["tokens"]))


def expected(run: dict, index: int, selected: tuple[int, int]) -> dict:
    """What the widget must show at checkpoint index with head `selected` chosen."""
    checkpoint = run["checkpoints"][index]
    entry = next(h for h in run["history"] if h["step"] == checkpoint["step"])
    c = run["config"]
    return {
        "step": str(checkpoint["step"]), "loss": f"{entry['loss_repeat']:.3f}",
        "grid": [[l, h, f"{entry['scores']['previous_token'][l][h]:.3f}", f"{entry['scores']['induction'][l][h]:.3f}",
                  checkpoint["roles"][l][h] or ""] for l in range(c["n_layers"]) for h in range(c["n_heads"])],
        "selected": f"{selected[0]},{selected[1]}", "marker": str(checkpoint["step"]),
        "lines": 2 + c["n_layers"] * c["n_heads"],
        "pattern": patterns(checkpoint, run)[selected],
    }


def check(widget, want: dict) -> None:
    shown = widget.evaluate(READ)
    pattern = want.pop("pattern")
    cells = shown.pop("cells")
    assert shown == want
    n = pattern.shape[0]
    assert sorted((q, k) for q, k, _ in cells) == [(q, k) for q in range(n) for k in range(q + 1)]
    for q, k, weight in cells:
        assert weight == pytest.approx(pattern[q, k], abs=5.1e-5)


NAMES = """root => [...root.querySelectorAll("tbody tr")].map(tr => [...tr.cells].slice(1).map(td =>
  [td.ariaLabel, td.dataset.weight ?? ""]))"""


def check_names(widget, shown: dict) -> None:
    """The heatmap's axes read shown["labels"] and each cell is named by shown["names"]' words (shown_as'), then the
    weight's text the cell holds or, after the query, the masked word; a cell pointed at is read by that name."""
    labels, names = shown["labels"], shown["names"]
    expect(widget.locator("thead [data-token-index]")).to_have_text(labels)
    rows = widget.evaluate(NAMES)
    assert len(rows) == len(labels)
    for q, row in enumerate(rows):
        assert [name for name, _ in row] == [names["from"][q] + names["to"][k] + (weight if k <= q else names["masked"])
                                             for k, (_, weight) in enumerate(row)]
    widget.locator("tbody tr").nth(len(labels) - 1).locator("td").nth(1).hover()
    expect(widget.locator('[data-output="cell"]')).to_have_text(rows[-1][1][0])


# Whether root is near the screen, by an IntersectionObserver with the margin of the runtime's whenNear
# (widgets/runtime/page.js), made after the widget's own: observers answer in the order they were made, so the
# widget's has answered too (and fetched its asset, had it been near) once this one has.
NEAR_CHECKED = """root => new Promise((resolve) => {
  const observer = new IntersectionObserver(([entry]) => {
    observer.disconnect();
    resolve(entry.isIntersecting);
  }, { rootMargin: "600px" });
  observer.observe(root);
})"""


def wait_loaded(widget, run: dict) -> None:
    """The asset with every checkpoint is in."""
    expect(widget).to_have_attribute("data-checkpoints", str(len(run["checkpoints"])))


def test_asset_is_checked_small_and_trained_here(built_site, run):
    data = (built_site / ASSET).read_bytes()
    html = next(p for p in built_site.rglob("index.html") if 'data-mha-widget="training"' in p.read_text()).read_text()
    assert f'data-sha256="{hashlib.sha256(data).hexdigest()}"' in html
    assert len(data) <= 1_000_000
    assert 20 <= len(run["checkpoints"]) <= 30 and run["checkpoints"][-1]["step"] == run["steps"]
    config = TrainConfig(**run["config"])
    weights = decode_params(run["checkpoints"][-1]["params"], config)
    tokens = eval_batch(config, run["seed"])
    assert evaluate(weights, tokens, config)["loss_repeat"] == pytest.approx(run["history"][-1]["loss_repeat"], abs=5e-3)


@pytest.mark.before_python
def test_first_paint_shows_the_last_checkpoint(page, training_url, run):
    widget = conftest.open_widget(page, training_url, "training")
    expect(widget).to_have_attribute("data-state", "initial")
    last = len(run["checkpoints"]) - 1
    induction = next((l, h) for l, row in enumerate(run["checkpoints"][-1]["roles"]) for h, r in enumerate(row) if r == "induction")
    check(widget, expected(run, last, induction))
    wait_loaded(widget, run)
    check(widget, expected(run, last, induction))


@pytest.mark.before_python
def test_the_asset_is_fetched_once_the_widget_is_about_to_be_seen(page, page_log, training_url, run):
    """At the top of its page the widget is far below the screen: its asset waits until the reader nears it."""
    page.goto(training_url)
    widget = page.locator('[data-mha-widget="training"]')
    expect(widget).to_have_attribute("data-mounted", "true")
    page.wait_for_load_state("load")
    assert widget.evaluate(NEAR_CHECKED) is False  # the widget's own check has answered: not near

    def asked() -> list[str]:
        return [url for url in page_log.requests if url.endswith(ASSET)]
    assert widget.evaluate("root => root.getBoundingClientRect().top") > 2 * page.viewport_size["height"]
    assert asked() == [] and widget.get_attribute("data-checkpoints") == "1"
    widget.scroll_into_view_if_needed()
    wait_loaded(widget, run)
    assert len(asked()) == 1


@pytest.mark.before_python
def test_a_step_chosen_while_the_steps_arrive_is_the_one_shown_once_they_have(page, training_url, run):
    """On a slow link the reader may move the slider before the run's checkpoints arrive: the step chosen stays."""
    release = conftest.hold_requests(page, f"**/{ASSET}")
    widget = conftest.open_widget(page, training_url, "training")
    selected = tuple(map(int, widget.get_attribute("data-selected").split(",")))
    widget.locator('input[name="step"]').fill("3")
    release()
    wait_loaded(widget, run)
    check(widget, expected(run, 3, selected))


@pytest.mark.before_python
def test_scrub_and_select_heads(page, training_url, run):
    widget = conftest.open_widget(page, training_url, "training")
    wait_loaded(widget, run)
    slider = widget.locator('input[name="step"]')
    selected = tuple(map(int, widget.get_attribute("data-selected").split(",")))
    for index in (0, 7, 12, len(run["checkpoints"]) - 1):
        slider.fill(str(index))
        check(widget, expected(run, index, selected))
    slider.fill("3")
    slider.press("ArrowRight")
    check(widget, expected(run, 4, selected))
    for layer, head in ((0, 0), (0, 1), (1, 1)):
        widget.locator(f'button[data-layer="{layer}"][data-head="{head}"]').click()
        expect(widget.locator(f'button[data-layer="{layer}"][data-head="{head}"]')).to_have_attribute("aria-pressed", "true")
        check(widget, expected(run, 4, (layer, head)))
    check_names(widget, run)
    # the plateau and the drop: the repeats' loss falls, and an induction head appears only after it
    start, end = run["history"][0], run["history"][-1]
    assert end["loss_repeat"] < 0.4 < start["loss_repeat"] - 2
    assert run["checkpoints"][0]["roles"][1] == [None, None] and "induction" in run["checkpoints"][-1]["roles"][1]


def test_knock_out_the_previous_token_head(fresh_widget, run):
    widget = fresh_widget("training")
    wait_loaded(widget, run)
    widget.locator('input[name="step"]').fill(str(len(run["checkpoints"]) - 1))
    roles = run["checkpoints"][-1]["roles"]
    prev = roles[0].index("previous_token")
    induction = roles[1].index("induction")
    widget.locator(f'button[data-layer="0"][data-head="{prev}"]').click()
    widget.locator('button[name="knockout"]').click()
    expect(widget.locator('button[name="knockout"]')).to_have_attribute("aria-pressed", "true")
    expect(widget).to_have_attribute("data-state", "live")
    config = TrainConfig(**run["config"])
    answer = training_evaluate(run["config"], run["seed"], run["checkpoints"][-1]["params"], [[0, prev]])
    intact, ablated = answer["intact"], answer["ablated"]
    assert ablated["loss_repeat"] > intact["loss_repeat"] + 1  # the circuit is broken
    expect(widget.locator('[data-output="loss"]')).to_have_attribute("data-value", f"{ablated['loss_repeat']:.3f}")
    cell = widget.locator(f'button[data-layer="1"][data-head="{induction}"]')
    expect(cell).to_have_attribute("data-score-induction", f"{ablated['scores']['induction'][1][induction]:.3f}")
    expect(widget.locator('[data-output="knockout"]')).to_contain_text(f"{intact['loss_repeat']:.3f} → {ablated['loss_repeat']:.3f}")
    expect(widget.locator(f'button[data-layer="0"][data-head="{prev}"]')).to_have_attribute("data-ablated", "")
    # the induction head's own pattern, computed with the knock-out, loses its stripe
    cell.click()
    n = len(run["tokens"])
    shown = np.zeros((n, n))
    for q, k, weight in widget.evaluate(READ)["cells"]:
        shown[q, k] = weight
    want = decoded(answer["patterns"], 2, config.n_heads, n)[1, induction]
    np.testing.assert_allclose(shown, want, atol=2e-4)
    # restore: the recorded numbers come back
    widget.locator(f'button[data-layer="0"][data-head="{prev}"]').click()
    widget.locator('button[name="knockout"]').click()
    expect(widget.locator('[data-output="loss"]')).to_have_attribute("data-value", f"{run['history'][-1]['loss_repeat']:.3f}")


def test_the_readers_own_text(fresh_widget, run):
    widget = fresh_widget("training")
    wait_loaded(widget, run)
    widget.locator('input[name="step"]').fill(str(len(run["checkpoints"]) - 1))
    induction = run["checkpoints"][-1]["roles"][1].index("induction")
    widget.locator(f'button[data-layer="1"][data-head="{induction}"]').click()
    text = "the cat sat on the mat , the cat sat on the mat ."
    widget.locator('input[name="text"]').fill(text)
    widget.locator('button[name="show"]').click()
    words = text.split()
    labels = widget.locator("thead [data-token-index]")
    expect(labels).to_have_count(len(words))
    expect(widget).to_have_attribute("data-state", "live")
    assert labels.all_text_contents() == words
    answer = training_evaluate(run["config"], run["seed"], run["checkpoints"][-1]["params"], text=text)
    n = len(words)
    patterns = decoded(answer["patterns"], 2, 2, n)
    shown = np.zeros((n, n))
    for q, k, weight in widget.evaluate(READ)["cells"]:
        shown[q, k] = weight
    np.testing.assert_allclose(shown, patterns[1, induction], atol=2e-4)
    check_names(widget, answer)
    # on the second "cat sat on": each word attends to the word after its first occurrence, in one of the
    # layer's induction heads at least (two may share the work)
    heads = [h for h, role in enumerate(run["checkpoints"][-1]["roles"][1]) if role == "induction"]
    second = words.index(",") + 2  # the second "cat"
    assert all(max(patterns[1, h, q, q - 7 + 1] for h in heads) > 0.5 for q in range(second, second + 3))
    # a text of one word is refused with a message; back to the test sequence
    widget.locator('input[name="text"]').fill("hello")
    widget.locator('button[name="show"]').click()
    expect(widget.locator('[data-output="error"]')).to_have_text("The text needs at least 2 words or punctuation marks.")
    expect(widget).to_have_attribute("data-state", "error")
    near = widget.evaluate("""root => {  // the message sits by the button the reader pressed
      const [message, button] = [root.querySelector('[data-output="error"]'), root.querySelector('button[name="show"]')];
      return Math.abs(message.getBoundingClientRect().top - button.getBoundingClientRect().bottom);
    }""")
    assert near < 200, near
    widget.locator('button[name="reset"]').click()
    expect(labels).to_have_count(len(run["tokens"]))
    expect(widget.locator('[data-output="error"]')).to_be_hidden()


def test_train_it_yourself_then_stop_then_again(fresh_widget):
    widget = fresh_widget("training")
    widget.locator('select[name="n_heads"]').select_option("3")
    widget.locator('button[name="train"]').press("Enter")  # from the keyboard: the focus must stay in sight
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('button[name="stop"]')).to_be_enabled()
    expect(widget.locator('button[name="stop"]')).to_be_focused()  # Train disabled itself: the focus moved to Stop
    expect(widget.locator("button[data-layer]")).to_have_count(6)  # 2 layers × 3 heads: the reader's run
    expect(widget.locator('input[name="step"]')).to_have_attribute("max", "2", timeout=120_000)  # checkpoints 0, 30, 60
    expect(widget.locator('[data-output="run"]')).to_have_text(re.compile(r"Training a fresh model \(seed \d+\): step [1-9]\d* of 600…"))
    widget.locator('button[name="stop"]').press("Enter")
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget.locator('button[name="train"]')).to_be_focused()
    expect(widget).to_have_attribute("data-run", "reader")
    expect(widget.locator('[data-output="run"]')).to_contain_text("stopped at step")
    step = int(widget.locator("progress").evaluate("p => p.value"))
    assert 60 <= step < 600
    check_names(widget, shown_as(display_labels(TrainConfig(n_heads=3))))
    expect(widget.locator('button[name="train"]')).to_be_enabled()
    expect(widget.locator('[data-output="elapsed"]')).to_contain_text(" s")
    # scrub the reader's run
    widget.locator('input[name="step"]').fill("1")
    expect(widget.locator('[data-output="step"]')).to_have_attribute("data-value", "30")
    # start again, with the default heads, and stop at once, while Python is still starting the run: the run it
    # started is stopped there too, and said so
    widget.locator('select[name="n_heads"]').select_option("2")
    first_stop = widget.locator('[data-output="run"]').text_content()
    widget.locator('button[name="train"]').click()
    widget.locator('button[name="stop"]').click()
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget.locator("button[data-layer]")).to_have_count(4)
    expect(widget.locator('[data-output="run"]')).not_to_have_text(first_stop)  # another seed's run
    expect(widget.locator('[data-output="run"]')).to_contain_text("stopped at step")
    expect(widget.locator('[data-output="error"]')).to_be_hidden()


# A block length the fields take: from the bridge's least to the vocabulary (a block holds distinct tokens).
PERIODS = f"{TRAIN_RANGES['min_period'][0]} to {TrainConfig().vocab}"


def test_bad_settings_and_a_diverging_run_end_in_a_clear_state(fresh_widget):
    widget = fresh_widget("training")
    shown_step = widget.locator('[data-output="step"]').get_attribute("data-value")
    shown_run = widget.locator('[data-output="run"]').text_content()
    widget.locator('input[name="min_period"]').fill("1")
    widget.locator('button[name="train"]').click()
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator('[data-output="run-error"]')).to_have_text(f"The shortest block length must be a whole number from {PERIODS}.")
    assert widget.locator('[data-output="step"]').get_attribute("data-value") == shown_step  # nothing lost
    expect(widget.locator('[data-output="run"]')).to_have_text(shown_run)  # no run happened: it says so still
    near = widget.evaluate("""root => {  // the message sits by the buttons the reader pressed
      const [message, button] = [root.querySelector('[data-output="run-error"]'), root.querySelector('button[name="train"]')];
      return Math.abs(message.getBoundingClientRect().top - button.getBoundingClientRect().bottom);
    }""")
    assert near < 200, near
    widget.locator('input[name="min_period"]').fill("")
    widget.locator('button[name="train"]').click()
    expect(widget.locator('[data-output="run-error"]')).to_have_text(f"The shortest block length must be a whole number from {PERIODS}.")
    widget.locator('input[name="min_period"]').fill("5")
    widget.locator('input[name="max_period"]').fill("40")
    widget.locator('button[name="train"]').click()
    expect(widget.locator('[data-output="run-error"]')).to_have_text(f"The longest block length must be a whole number from {PERIODS}.")
    widget.locator('input[name="min_period"]').fill("20")
    widget.locator('input[name="max_period"]').fill("3")
    widget.locator('button[name="train"]').click()  # the reader's words: the fields', not min_period and max_period
    expect(widget.locator('[data-output="run-error"]')).to_have_text(
        "The shortest block length (20) must not be larger than the longest (3).")
    widget.locator('input[name="min_period"]').fill("5")
    widget.locator('input[name="max_period"]').fill("16")
    widget.locator('select[name="lr"]').select_option("1.0")
    widget.locator('button[name="train"]').click()
    expect(widget.locator('[data-output="run-error"]')).to_contain_text("Training diverged at step", timeout=60_000)
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator('button[name="train"]')).to_be_enabled()
    expect(widget.locator('button[name="stop"]')).to_be_disabled()
    assert "NaN" not in widget.inner_text()



# From now on, every call the page sends to its Python worker is kept in window.__mhaCalls (the worker's
# postMessage is looked up at each call; wrapped once a document).
RECORD_CALLS = """() => {
  window.__mhaCalls = [];
  if (window.__mhaRecording) return;
  window.__mhaRecording = true;
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (message, ...rest) {
    if (message && message.type === "call") window.__mhaCalls.push(message.fn);
    return post.call(this, message, ...rest);
  };
}"""


def start_training(widget) -> None:
    """Press Train and wait for the run's first checkpoint after step 0."""
    widget.locator('button[name="train"]').click()
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('input[name="step"]')).not_to_have_attribute("max", "0", timeout=120_000)


def expect_settled(widget, run_shown: str) -> None:
    """Not training, no error, Train enabled and Stop disabled, showing run_shown ("built" or "reader")."""
    expect(widget).not_to_have_attribute("data-state", re.compile("busy|error"))
    expect(widget.locator('[data-output="error"]')).to_be_hidden()
    expect(widget.locator('button[name="train"]')).to_be_enabled()
    expect(widget.locator('button[name="stop"]')).to_be_disabled()
    if run_shown == "reader":
        expect(widget).to_have_attribute("data-run", "reader")
    else:
        expect(widget).not_to_have_attribute("data-run", "reader")


def test_leaving_the_page_mid_run_stops_it_and_coming_back_shows_the_built_run(fresh_widget, run):
    widget = fresh_widget("training")
    page = widget.page
    page.evaluate(RECORD_CALLS)
    start_training(widget)
    conftest.moved_on(page, lambda: page.locator("a.md-footer__link--prev").click())  # to the shapes page
    shapes = page.locator('[data-mha-widget="shapes"]').first
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1  # the same document and worker
    page.wait_for_function("() => window.__mhaCalls.includes('training_stop')")  # the run ends itself
    batch = shapes.locator('input[type="number"][name="batch"]')
    batch.fill("3")
    batch.press("Enter")
    assert_shows(shapes, **form_config(shapes))  # Python answers this page's widget
    calls = page.evaluate("window.__mhaCalls")
    assert "training_advance" not in calls[calls.index("training_stop"):]
    conftest.moved_on(page, page.go_back)
    widget = page.locator('[data-mha-widget="training"]')
    expect_settled(widget, "built")
    expect(widget.locator('[data-output="step"]')).to_have_attribute("data-value", str(run["steps"]))
    expect(widget.locator('[data-output="run"]')).to_have_text(re.compile(
        r"Your run \(seed \d+\) stopped at step \d+ when you left this page\. Shown: the run trained when this page was built"))
    start_training(widget)  # and a new run starts and stops as usual
    widget.locator('button[name="stop"]').click()
    expect_settled(widget, "reader")
    expect(widget.locator('[data-output="run"]')).to_contain_text("stopped at step")


def test_two_tabs_train_at_once_each_with_its_own_python(page, page_log, training_url):
    second = page.context.new_page()  # closed with the test's context
    page_log.watch_page(second, "second tab")
    tabs = [page, second]
    widgets = [conftest.open_widget(tab, training_url, "training") for tab in tabs]  # both start Python at once
    for tab in tabs:
        conftest.wait_ready(tab)
    workers = [[w for w in tab.workers if w.url.endswith("/runtime/worker.js")] for tab in tabs]
    assert [len(w) for w in workers] == [1, 1] and workers[0][0] != workers[1][0]
    for widget in widgets:
        widget.locator('button[name="train"]').click()
    for widget in widgets:  # both train at once
        expect(widget).to_have_attribute("data-state", "busy")
        expect(widget.locator('input[name="step"]')).not_to_have_attribute("max", "0", timeout=120_000)
    first, other = widgets
    first.locator('button[name="stop"]').click()
    expect_settled(first, "reader")
    expect(other).to_have_attribute("data-state", "busy")  # the other tab's run goes on
    # the first tab is used while the second trains: knock out a head of its stopped run
    first.locator('button[data-layer="0"][data-head="0"]').click()
    first.locator('button[name="knockout"]').click()
    expect(first.locator('[data-output="knockout"]')).to_contain_text("→")
    expect_settled(first, "reader")
    expect(other).to_have_attribute("data-state", "busy")
    other.locator('button[name="stop"]').click()
    expect_settled(other, "reader")
    expect(other.locator('[data-output="run"]')).to_contain_text("stopped at step")


# ---------------------------------------------------------------- the lesson's controls: charts, layers, experiments

CHARTS = """root => Object.fromEntries([...root.querySelectorAll("svg[data-chart]")].map(svg => [svg.dataset.chart, {
  x: svg.querySelector('[data-axis="x"]')?.textContent, y: svg.querySelector('[data-axis="y"]')?.textContent,
  level: svg.querySelector("[data-level]")?.dataset.level, label: svg.querySelector("[data-level-label]")?.textContent,
  levelY: +svg.querySelector("[data-level]")?.getAttribute("y1"),
  ticks: [...svg.querySelectorAll("[data-tick]")].filter(t => t.getAttribute("display") !== "none").map(t => [t.textContent, +t.getAttribute("y")]),
  classes: [...svg.querySelectorAll("polyline")].filter(p => p.getAttribute("points")).map(p => p.getAttribute("class")),
  smallest: Math.min(...[...svg.querySelectorAll("text")].map(t => parseFloat(getComputedStyle(t).fontSize) * Math.hypot(t.getScreenCTM().a, t.getScreenCTM().b))),
  labelRight: (b => b && b.x + b.width)(svg.querySelector("[data-level-label]")?.getBBox()),
  marker: +svg.querySelector("[data-marker]").getAttribute("x1"),
}]))"""


@pytest.mark.before_python
def test_the_charts_label_their_axes_and_draw_a_uniform_guess(page, training_url, run):
    widget = conftest.open_widget(page, training_url, "training")
    charts = widget.evaluate(CHARTS)
    uniform = math.log(run["config"]["vocab"])
    loss, scores = charts["loss"], charts["scores"]
    assert (loss["x"], loss["y"], scores["x"], scores["y"]) == ("training step", "loss (nats)", "training step", "score (0 to 1)")
    assert loss["level"] == f"{uniform:.4f}" and loss["label"] == "uniform guess: ln 32 = 3.47"
    # a tick each whole nat up to the highest loss of the run, evenly spaced from 0 (y 140) to the top (y 10)
    top = math.ceil(max(max(h["loss_first"], h["loss_repeat"]) for h in run["history"]))
    assert [t for t, _ in loss["ticks"]] == [str(v) for v in range(top + 1)]
    for value, (_, at) in enumerate(loss["ticks"]):
        assert at == pytest.approx(140 - value / top * 130 + 4, abs=0.01)  # + 4: a label's baseline, centred on its value
    assert loss["levelY"] == pytest.approx(140 - uniform / top * 130, abs=0.01)
    assert scores["level"] is None and [t for t, _ in scores["ticks"]] == ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
    # the uniform guess's label sits on its line, clear of the step marker (at the last step, the right edge)
    assert loss["labelRight"] < loss["marker"] - 20
    for width in (page.viewport_size["width"], 390):  # no text under 12 px on screen, on a desktop and on a phone
        page.set_viewport_size({"width": width, "height": 844})
        widget.locator("svg[data-chart]").first.scroll_into_view_if_needed()  # laid out (content-visibility)
        for chart in widget.evaluate(CHARTS).values():
            assert chart["smallest"] >= 12, (width, chart["smallest"])
    expect(widget.locator('[data-legend="loss"]')).to_contain_text("uniform guess (3.47 nats)")


@pytest.mark.before_python
def test_the_sentence_under_the_slider_is_true_at_the_drop(page, training_url, run):
    """During the drop both layer-1 heads are named induction heads while the layer-0 head's previous-token
    score, still below the threshold, is named as the best of the rest."""
    widget = conftest.open_widget(page, training_url, "training")
    wait_loaded(widget, run)
    index = next(i for i, c in enumerate(run["checkpoints"]) if c["roles"][1] == ["induction", "induction"])
    checkpoint = run["checkpoints"][index]
    widget.locator('input[name="step"]').fill(str(index))
    scores = next(h for h in run["history"] if h["step"] == checkpoint["step"])["scores"]
    assert checkpoint["roles"][0] == [None, None] and scores["previous_token"][0][0] < ROLE_MIN
    ind = scores["induction"][1]
    expect(widget.locator('[data-output="summary"]')).to_have_text(
        f"At step {checkpoint['step']}, L1 H0 is an induction head (score {ind[0]:.3f}); L1 H1 is an induction head "
        f"(score {ind[1]:.3f}). The highest score of the other heads: L0 H0's previous-token score, "
        f"{scores['previous_token'][0][0]:.3f}.")


def wait_done(widget, timeout=600_000) -> None:
    expect(widget.locator("progress")).to_have_js_property("value", 600, timeout=timeout)
    expect(widget).to_have_attribute("data-state", "live", timeout=60_000)


def test_one_layer_against_two(fresh_widget, run):
    """The experiment sets Layers to 1 and trains: no induction head forms, and the loss on the repeats stays
    high, against the recorded two-layer run drawn beside it."""
    widget = fresh_widget("training")
    widget.locator('button[name="experiment"][value="one-layer"]').click()
    expect(widget.locator('select[name="n_layers"]')).to_have_value("1")
    expect(widget.locator('select[name="lr"]')).to_have_value(str(run["config"]["lr"]))
    expect(widget.locator("button[data-layer]")).to_have_count(run["config"]["n_heads"])  # one layer's heads
    expect(widget.locator('button[name="experiment"]').first).to_be_disabled()
    wait_done(widget)
    for cell in widget.locator("button[data-layer]").all():
        assert cell.get_attribute("data-layer") == "0"
        assert float(cell.get_attribute("data-score-induction")) <= 0.2
        assert cell.get_attribute("data-role") != "induction"
    assert float(widget.locator('[data-output="loss"]').get_attribute("data-value")) > 2
    classes = widget.evaluate(CHARTS)["loss"]["classes"]
    assert classes == ["first", "repeat", "reference"]  # the reader's two losses and the recorded run's repeats
    expect(widget.locator('[data-legend="loss"]')).to_contain_text("recorded run (2 layers), loss on repeats")
    expect(widget.locator('[data-legend="scores"]')).to_contain_text("L0 H0 induction")


def test_the_layers_control_trains_a_one_layer_model(fresh_widget):
    widget = fresh_widget("training")
    widget.locator('select[name="n_layers"]').select_option("1")
    widget.locator('button[name="train"]').click()
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('input[name="step"]')).not_to_have_attribute("max", "0", timeout=120_000)
    widget.locator('button[name="stop"]').click()
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget.locator("button[data-layer]")).to_have_count(2)
    expect(widget.locator('[data-output="error"]')).to_be_hidden()


# The loss chart's legend rows, each [its text, whether it is seen], and the charts' height.
LEGEND = """root => ({ rows: [...root.querySelectorAll('[data-legend="loss"] > span')]
  .map(row => [row.textContent.trim(), getComputedStyle(row).visibility === "visible"]),
  height: root.querySelector(".mha-training__charts").getBoundingClientRect().height })"""


def test_blocks_of_fixed_length(fresh_widget):
    """The experiment trains from the recorded run's seed with blocks of 8; the charts keep their height as the
    reader's run replaces the built one (its legend held the recorded run's row, unseen, for the run to show)."""
    widget = fresh_widget("training")
    widget.locator(".mha-training__charts").scroll_into_view_if_needed()  # laid out (content-visibility)
    built = widget.evaluate(LEGEND)
    recorded = "recorded run (2 layers), loss on repeats"
    assert built["rows"][-1] == [recorded, False] and all(seen for _, seen in built["rows"][:-1]), built["rows"]
    widget.locator('button[name="experiment"][value="fixed-block"]').click()
    expect(widget).to_have_attribute("data-run", "reader")
    readers = widget.evaluate(LEGEND)
    assert readers["rows"] == [[text, True] for text, _ in built["rows"]] and readers["height"] == built["height"]
    expect(widget.locator('input[name="min_period"]')).to_have_value("8")
    expect(widget.locator('input[name="max_period"]')).to_have_value("8")
    expect(widget.locator('select[name="n_layers"]')).to_have_value("2")
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('[data-output="caption"]')).to_contain_text("repeats a block of 8 tokens")
    # from the recorded run's seed, whose numbers the lesson quotes
    expect(widget.locator('[data-output="run"]')).to_contain_text("(seed 0, the recorded run's)")
    widget.locator('button[name="stop"]').click()
    expect(widget).to_have_attribute("data-state", "live")


def test_knock_out_an_induction_head(fresh_widget, run):
    """From a reader's run, the experiment goes back to the built run's last step and knocks out its best
    induction head, and the form shows that run's settings; the other keeps most of the loss on the repeats
    away. The readout says what changes (the losses; no pattern, as no later layer reads the head) and is
    cleared while another head is selected."""
    widget = fresh_widget("training")
    widget.locator('button[name="train"]').click()  # a reader's run, stopped at once
    expect(widget).to_have_attribute("data-state", "busy")
    widget.locator('button[name="stop"]').click()
    expect_settled(widget, "reader")
    widget.locator('select[name="n_layers"]').select_option("1")  # settings of a run not shown
    widget.locator('input[name="max_period"]').fill("9")
    widget.locator('button[name="experiment"][value="knockout"]').click()
    expect(widget).to_have_attribute("data-run", "built")
    for name in ("n_layers", "n_heads", "min_period", "max_period"):
        expect(widget.locator(f'[name="{name}"]')).to_have_value(str(run["config"][name]))
    assert float(widget.locator('select[name="lr"]').input_value()) == run["config"]["lr"]
    induction = run["history"][-1]["scores"]["induction"][1]
    best = max(range(len(induction)), key=lambda h: induction[h])
    cell = widget.locator(f'button[data-layer="1"][data-head="{best}"]')
    expect(cell).to_have_attribute("data-ablated", "")
    expect(cell).to_have_attribute("aria-pressed", "true")
    expect(widget.locator('[data-output="step"]')).to_have_attribute("data-value", str(run["steps"]))
    answer = training_evaluate(run["config"], run["seed"], run["checkpoints"][-1]["params"], [[1, best]])
    intact, ablated = answer["intact"], answer["ablated"]
    knockout = widget.locator('[data-output="knockout"]')
    expect(knockout).to_have_text(answer["readout"])
    other = 1 - best
    for words in (f"Loss on the repeats {intact['loss_repeat']:.3f} → {ablated['loss_repeat']:.3f} nats",
                  f"first occurrences (tokens new to the sequence, which no head can copy) "
                  f"{intact['loss_first']:.3f} → {ablated['loss_first']:.3f}",
                  f"L1 H{other} keeps its pattern (induction score {intact['scores']['induction'][1][other]:.3f})"):
        assert words in answer["readout"]
    expect(widget.locator('[data-output="loss"]')).to_have_attribute("data-value", f"{ablated['loss_repeat']:.3f}")
    help_text = "Knocking out a head zeroes its output and measures the loss again (Python, in your browser)."
    widget.locator(f'button[data-layer="1"][data-head="{other}"]').click()  # another head: the readout is not its
    expect(knockout).to_have_text(help_text)
    expect(widget.locator('button[name="knockout"]')).to_have_attribute("aria-pressed", "false")
    both = training_evaluate(run["config"], run["seed"], run["checkpoints"][-1]["params"], [[1, 0], [1, 1]])
    assert intact["loss_repeat"] < ablated["loss_repeat"] < both["ablated"]["loss_repeat"] / 2
    cell.click()
    expect(knockout).to_have_text(answer["readout"])
    widget.locator('button[name="knockout"]').click()  # restore
    expect(widget.locator('[data-output="loss"]')).to_have_attribute("data-value", f"{intact['loss_repeat']:.3f}")
    expect(knockout).to_have_text(help_text)


def test_a_learning_rate_that_diverges(fresh_widget):
    widget = fresh_widget("training")
    widget.locator('button[name="experiment"][value="diverge"]').click()
    expect(widget.locator('select[name="lr"]')).to_have_value("1.0")
    expect(widget.locator('[data-output="run-error"]')).to_have_text(re.compile(
        r"Training diverged at step \d+: the loss reached .+ \(a uniform guess scores 3\.47\); "
        r"try a learning rate smaller than 1\."), timeout=120_000)
    expect(widget).to_have_attribute("data-state", "error")
    expect(widget.locator('[data-output="run"]')).to_have_text("Shown: your run, up to its last good checkpoint.")
    expect(widget.locator('button[name="experiment"]').first).to_be_enabled()
