"""The circuits widget in Chromium: it arrives with mha_core's circuits at the run's last step; the step control,
moved with the keyboard, shows every score, heatmap and loss mha_core computes here in CPython at that step (from
the run the site ships); it fits a phone's 390 px; axe finds no serious violation in light and dark, on desktop
and phone. The reader's own run, trained in the training widget, is offered once it ends and shows mha_core's
circuits of that run; while both widgets show the same run, the step follows the training widget's slider. conftest
fails a test on any page error, console error, CSP violation or request off 127.0.0.1."""
from __future__ import annotations

import json

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from test_accessibility import VIEWPORTS, axe_source, blocking, blocking_in_every_look, look  # noqa: F401 (a fixture)
from mha_core.detectors import evaluate
from mha_core.model import TrainConfig
from mha_core.training import eval_batch
from mha_core.params_codec import decode_params
from tests.helpers import circuits_expected, png_indices

pytestmark = pytest.mark.computes  # trains or runs a real model: conftest.BASELINE_COMPILERS

NAME = "circuits"
READ = """root => ({
  step: root.querySelector('input[name="step"]').value,
  shown: root.querySelector('[data-output="step"]').textContent,
  k: [...root.querySelectorAll('[data-output="k-composition"]')].map(e =>
    [+e.dataset.sourceHead, +e.dataset.targetHead, e.dataset.value, e.textContent]),
  ov: [...root.querySelectorAll('[data-output="ov-copying"]')].map(e => [+e.dataset.layer, +e.dataset.head, e.dataset.value, e.textContent]),
  maps: [...root.querySelectorAll('[data-output="ov-map"]')].map(e => e.style.getPropertyValue("--map")),
  qk: root.querySelector('[data-output="qk-map"]').style.getPropertyValue("--map"),
  bars: [...root.querySelectorAll('.mha-circuits__bars > .mha-circuits__bar')].map(e => +e.dataset.value),
  marker: [...root.querySelectorAll('[data-output="marker"]')].map(e => Number(e.style.getPropertyValue("--x"))),
  summary: root.querySelector('[data-output="summary"]').textContent,
})"""


@pytest.fixture(scope="module")
def run(built_site) -> dict:
    """The run the site ships (the training widget's asset)."""
    return json.loads((built_site / "assets" / "widgets" / "training" / "run.json").read_bytes())


def assert_shows(widget, run: dict, step: int, prev: int | None = None, rel: float = 0) -> dict:
    """Wait for step to be shown, then compare every score, heatmap and loss with mha_core's at that step (prev:
    the layer-0 head whose QK circuit is shown, if not the one the run's roles name; rel: the scores' tolerance,
    for those the page's Python computes, whose NumPy may round the last bit otherwise)."""
    expect(widget).to_have_attribute("data-step", str(step))
    read = widget.evaluate(READ)
    want = circuits_expected(run, step, prev)
    assert (read["step"], read["shown"]) == (str(step), f"Step {step}")
    assert {(a, b): t for a, b, _, t in read["k"]} == {p: f"{s:.2f}" for p, s in want["k"].items()}
    assert {(a, b): float(v) for a, b, v, _ in read["k"]} == pytest.approx(want["k"], rel=rel, abs=0)
    assert {(layer, h): (float(v), t) for layer, h, v, t in read["ov"]} == {(1, b): (s, f"{s:.2f}") for b, s in want["ov"].items()}
    for b, url in enumerate(read["maps"]):
        assert np.array_equal(png_indices(url), want["ov_levels"][b]), f"L1 H{b}'s full OV circuit at step {step}"
    assert np.array_equal(png_indices(read["qk"]), want["qk_levels"]), f"the positional QK circuit at step {step}"
    assert read["bars"] == pytest.approx(want["positions"], abs=5e-4)
    return read


def test_it_arrives_with_mha_core_s_circuits_at_the_last_step(fresh_widget, run):
    widget = fresh_widget(NAME)
    expect(widget).to_have_attribute("data-state", "live")  # no Python needed: every step is in the widget's asset
    step = widget.locator('input[name="step"]')
    steps = [c["step"] for c in run["checkpoints"]]
    assert (step.get_attribute("type"), step.get_attribute("min"), step.get_attribute("max")) == (
        "range", str(steps[0]), str(steps[-1]))
    assert widget.evaluate("root => root.querySelector('input[name=\"step\"]').labels[0].textContent.trim()")
    assert_shows(widget, run, steps[-1])


def test_the_step_moved_with_the_keyboard_shows_mha_core_s_circuits_there(fresh_widget, run):
    widget = fresh_widget(NAME)
    expect(widget).to_have_attribute("data-state", "live")
    step = widget.locator('input[name="step"]')
    last = assert_shows(widget, run, 600)
    step.press("Home")
    first = assert_shows(widget, run, 0)
    assert first["k"] != last["k"] and first["maps"] != last["maps"] and first["qk"] != last["qk"]
    assert first["marker"] != last["marker"] and first["summary"] != last["summary"]
    assert step.evaluate("el => el.matches(':focus-visible') && getComputedStyle(el).outlineStyle !== 'none'")
    for _ in range(9):
        step.press("ArrowRight")
    during = assert_shows(widget, run, 270)  # the phase change
    assert during["ov"] != first["ov"]
    step.press("End")
    assert assert_shows(widget, run, 600) == last


def test_the_steps_asset_fetched_near_the_widget_and_after_a_failure_by_retry(page, site_url, widget_path, run,
                                                                                   page_log):
    """The page arrives at the last step without the steps' file; a failed fetch is said beside the step control
    with Retry, which fetches it again. (A page loaded afresh, for its fetches; the recorded run's steps need no
    Python, which is held back.)"""
    conftest.hold_python(page)
    failing = [True]
    page.route("**/assets/widgets/circuits/steps-*.json",
               lambda route: route.abort() if failing[0] else route.continue_())
    page_log.allow(r"steps-[0-9a-f]{16}\.json|Failed to load resource")
    page.goto(site_url + widget_path(NAME))
    widget = page.locator(f'[data-mha-widget="{NAME}"]')
    assert not [u for u in page_log.requests if "/circuits/steps-" in u]  # not fetched far from the screen
    assert_shows(widget, run, 600)
    widget.scroll_into_view_if_needed()
    error, retry = widget.locator('[data-message="error"]'), widget.locator('button[name="retry"]')
    expect(error).to_contain_text("The recorded run's steps could not be loaded")
    expect(retry).to_be_visible()
    expect(widget).to_have_attribute("data-state", "error")
    with page.expect_event("requestfailed", lambda request: "/circuits/steps-" in request.url):
        widget.locator('input[name="step"]').press("Home")  # nothing to show yet: it asks for the file again
    expect(retry).to_be_visible()
    failing[0] = False
    retry.click()
    expect(widget).to_have_attribute("data-state", "live")
    expect(error).to_be_hidden()
    expect(retry).to_be_hidden()
    expect(widget.locator('input[name="step"]')).to_be_focused()
    assert_shows(widget, run, 0)  # the step the reader moved to meanwhile


def test_at_390_px_everything_fits(fresh_widget, run):
    widget = fresh_widget(NAME)
    page = widget.page
    conftest.resize(page, VIEWPORTS["phone"])
    widget.scroll_into_view_if_needed()
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")
    assert widget.locator('input[name="step"]').bounding_box()["width"] >= 200  # room to move it with a thumb
    for picture in widget.locator('[role="img"]').all():
        box = picture.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390 and box["width"] >= 120, box
    widget.locator('input[name="step"]').press("PageDown")
    assert_shows(widget, run, int(widget.locator('input[name="step"]').input_value()))
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")


def test_no_serious_accessibility_violation_in_light_and_dark_on_desktop_and_phone(fresh_widget, run,
                                                                                  axe_source):  # noqa: F811
    found, selector = [], f'[data-mha-widget="{NAME}"]'
    widget = fresh_widget(NAME)
    page = widget.page

    def check(state):
        found.extend(blocking_in_every_look(page, axe_source, state, selector))

    try:
        check("as built")
        widget.locator('input[name="step"]').press("Home")
        assert_shows(widget, run, 0)
        check("at step 0")
    finally:
        look(page, "light", "desktop")  # the scheme the module's other tests have (shared_page restores the size)
    assert not found, "\n".join(found)


# Before training: keep the last finished run the training widget announces (its event's detail), as sent.
KEEP_FINISHED = """() => document.addEventListener("mha-training-step", (e) => {
  if (e.detail.finished) window.__finishedRun = { run: e.detail.run, ...e.detail.finished };
})"""


def finished_run(page) -> tuple[dict, int]:
    """(the reader's finished run as the page sent it, in run.json's form; its layer-0 head with the highest
    previous-token score at its last step, computed here)."""
    sent = page.evaluate("() => window.__finishedRun")
    run = {"config": sent["config"], "seed": sent["seed"],
           "checkpoints": [{"step": s, "params": p} for s, p in zip(sent["steps"], sent["params"])]}
    config = TrainConfig(**run["config"])
    last = decode_params(sent["params"][-1], config)
    scores = evaluate(last, eval_batch(config, run["seed"]), config)["scores"]["previous_token"][0]
    return run, int(np.argmax(scores))


def test_the_readers_run_once_it_ends_and_the_step_following_the_training_slider(fresh_widget, run,
                                                                                 axe_source):  # noqa: F811
    """The widgets mounted afresh: no run of the reader's before this one."""
    training = fresh_widget("training")  # in view, as a reader comes to it: its asset, every checkpoint, is fetched
    expect(training).to_have_attribute("data-checkpoints", str(len(run["checkpoints"])))
    page = training.page
    widget = page.locator('[data-mha-widget="circuits"]')
    page.evaluate(KEEP_FINISHED)
    reader, back = widget.locator('button[name="reader"]'), widget.locator('button[name="recorded"]')
    expect(reader).to_be_hidden()
    expect(back).to_be_hidden()
    slider = training.locator('input[name="step"]')
    slider.fill("3")  # the recorded run in both: the circuits' step follows
    assert_shows(widget, run, 90)
    training.locator('button[name="train"]').click()
    expect(training.locator('[data-output="run"]')).to_contain_text("600 steps in", timeout=180_000)
    expect(reader).to_be_visible()
    assert_shows(widget, run, 90)  # nothing changes until the reader asks
    reader.click()
    expect(widget).to_have_attribute("data-run", "reader", timeout=120_000)
    expect(widget).to_have_attribute("data-state", "live")
    expect(back).to_be_focused()  # the pressed button is hidden: the focus moved to the way back
    mine, prev = finished_run(page)
    seed = mine["seed"]
    expect(widget.locator('[data-output="run-label"]')).to_have_text(f"Your run (seed {seed}), at a checkpoint (every 30 steps)")
    expect(widget.locator('[data-output="run-note"]')).to_contain_text(f"L0 H{prev} is taken as its previous-token head")
    step = widget.locator('input[name="step"]')
    assert (step.get_attribute("min"), step.get_attribute("max"), step.get_attribute("step")) == ("0", "600", "30")
    last = assert_shows(widget, mine, 600, prev, rel=1e-12)
    assert not blocking(page, axe_source, "your run shown", '[data-mha-widget="circuits"]')
    slider.press("Home")  # the reader's run in both: the circuits' step follows the training slider
    first = assert_shows(widget, mine, 0, prev, rel=1e-12)
    assert first["k"] != last["k"]
    for _ in range(9):
        slider.press("ArrowRight")
    assert_shows(widget, mine, 270, prev, rel=1e-12)
    back.click()
    expect(widget).to_have_attribute("data-run", "recorded")
    assert_shows(widget, run, 270)
    expect(widget.locator('[data-output="run-label"]')).to_have_text("The recorded run, at a checkpoint (every 30 steps)")
    expect(widget.locator('[data-output="run-note"]')).to_be_hidden()
    slider.press("End")  # the training widget shows the reader's run, this one the recorded: the step stays
    expect(training.locator('[data-output="step"]')).to_have_attribute("data-value", "600")
    assert_shows(widget, run, 270)
    reader.click()  # the reader's run again, made once: at the step the training widget shows
    expect(widget).to_have_attribute("data-run", "reader")
    assert_shows(widget, mine, 600, prev, rel=1e-12)


def test_a_run_of_another_shape_is_declined_in_words(fresh_widget, run):
    training = fresh_widget("training")
    page = training.page
    widget = page.locator('[data-mha-widget="circuits"]')
    training.locator('select[name="n_layers"]').select_option("1")
    training.locator('button[name="train"]').click()
    expect(training.locator('[data-output="run"]')).to_contain_text("600 steps in", timeout=180_000)
    training.locator('select[name="n_layers"]').select_option("2")
    shown = widget.get_attribute("data-run")  # the recorded run (the widgets mounted afresh)
    widget.locator('button[name="reader"]').click()
    expect(widget.locator('[data-output="run-note"]')).to_contain_text("Your run has one layer: there is no K-composition",
                                                                       timeout=120_000)
    expect(widget).to_have_attribute("data-state", "live")
    expect(widget).to_have_attribute("data-run", shown)  # which stays shown
    expect(widget.locator('[data-message="error"]')).to_be_hidden()
