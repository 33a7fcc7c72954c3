"""One head against several, in Chromium: the page shows mha_core's numbers before Python starts; each control,
moved with the keyboard, brings Python's answer, every data-value equal to what mha_core computes here in
CPython; the controls are native, labelled inputs; it works at a phone's 390 px; axe finds no serious
violation in light and dark. conftest fails a test on any page error, console error, CSP violation or
request off 127.0.0.1."""
from __future__ import annotations

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from conftest import hold_python
from mha_page.views.one_vs_many import one_vs_many_view
from test_accessibility import VIEWPORTS, axe_source, blocking_in_every_look, look  # noqa: F401 (a fixture)
from tests.helpers import one_vs_many_expected, one_vs_many_form, one_vs_many_outputs

NAME = "one-vs-many"
CONTROLS = """root => [...root.querySelectorAll("form input, form select, form textarea, form button")].map(c => ({
  tag: c.tagName.toLowerCase(), type: c.type, name: c.name,
  label: c.labels.length ? c.labels[0].textContent.trim() : "",
}))"""
SEGMENTS = """root => [0, 1, 2].map(b => ["subject", "clause", "previous"].map(r =>
  Number(root.querySelector(`[data-output="one-${b}-${r}"]`).style.getPropertyValue("--v"))))"""


def answered(widget) -> dict:
    """Once the widget is live: its outputs, checked against mha_core for the controls' values."""
    expect(widget).to_have_attribute("data-state", "live")
    form = one_vs_many_form(widget)
    shown = one_vs_many_outputs(widget)
    assert shown == one_vs_many_expected(**form), form
    return shown


def test_first_paint_holds_mha_core_numbers_and_native_labelled_controls(page, site_url, widget_path):
    hold_python(page)  # what a reader sees before Python has started
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    assert widget.get_attribute("data-state") == "initial"
    assert one_vs_many_form(widget) == {"subject": 50, "clause": 50, "previous": 50, "wide": False, "heads": 3,
                                        "alone": "subject"}
    assert one_vs_many_outputs(widget) == one_vs_many_expected(subject=50, clause=50, previous=50, wide=False)
    controls = widget.evaluate(CONTROLS)
    assert [(c["type"], c["name"]) for c in controls] == [("range", "subject"), ("range", "clause"),
                                                          ("range", "previous"), ("checkbox", "wide"),
                                                          ("radio", "heads"), ("radio", "heads"), ("radio", "heads"),
                                                          ("select-one", "alone")]
    assert [c["label"] for c in controls if c["name"] == "heads"] == ["1 head", "2 heads", "3 heads"]
    assert widget.locator('select[name="alone"]').is_disabled()  # it means something with 2 heads only
    assert all(c["tag"] in ("input", "select") and c["label"] for c in controls)
    assert widget.locator('[data-output="summary"]').get_attribute("aria-live") == "polite"


def test_each_control_moved_with_the_keyboard_gives_mha_core_s_answer(fresh_widget):
    widget = fresh_widget(NAME)
    summary = widget.locator('[data-output="summary"]').text_content()
    subject = widget.locator('input[name="subject"]')
    subject.press("End")  # 100, 50, 50
    shown = answered(widget)
    assert shown["share-subject"] == "0.5000" and shown["one-subject"] == "0.5000" and shown["many-subject"] == "1.0000"
    assert widget.locator('[data-output="summary"]').text_content() != summary
    widget.locator('input[name="clause"]').press("Home")  # 100, 0, 50
    answered(widget)
    widget.locator('input[name="previous"]').press("Home")  # 100, 0, 0: all on the subject
    shown = answered(widget)
    assert (shown["one-subject"], shown["one-clause"], shown["one-previous"]) == ("1.0000", "0.0000", "0.0000")
    assert shown["one-number"] == "1.0000" and shown["one-verb"] == "was"
    for _ in range(3):
        widget.locator('input[name="previous"]').press("ArrowRight")  # 100, 0, 3
    assert answered(widget)["share-previous"] == "0.0291"
    subject.press("Home")  # 0, 0, 3: all on the neighbour, plural
    shown = answered(widget)
    assert shown["one-number"] == "-1.0000" and shown["one-verb"] == "were"
    assert (shown["many-subject"], shown["many-number"], shown["many-verb"]) == ("1.0000", "1.0000", "was")


def test_the_wide_head_is_still_one_average(fresh_widget):
    widget = fresh_widget(NAME)
    for name, key in (("subject", "End"), ("clause", "Home"), ("previous", "End")):
        widget.locator(f'input[name="{name}"]').press(key)
    answered(widget)
    narrow = one_vs_many_outputs(widget)
    assert np.allclose(widget.evaluate(SEGMENTS), [[0.5, 0, 0.5], [0, 0, 0], [0, 0, 0]], atol=1e-9)
    widget.locator('input[name="wide"]').press("Space")
    expect(widget).to_have_attribute("data-wide", "true")
    wide = answered(widget)
    assert widget.locator('[data-output="one-label"]').text_content() == "One wide head, d_k = 54 = d_model"
    assert wide == narrow  # the same shares arrive, however wide
    assert np.allclose(widget.evaluate(SEGMENTS), [[0.5, 0, 0.5]] * 3, atol=1e-9)  # three copies of one mixture
    widget.locator('input[name="wide"]').press("Space")
    expect(widget).to_have_attribute("data-wide", "false")
    answered(widget)


def test_two_heads_make_two_relationships_share_one_chosen_with_the_keyboard(fresh_widget):
    widget = fresh_widget(NAME)
    three = widget.locator('input[name="heads"][value="3"]')
    three.focus()
    three.press("ArrowLeft")  # the radio group: 3 -> 2 heads
    expect(widget.locator('input[name="heads"][value="2"]')).to_be_checked()
    expect(widget).to_have_attribute("data-heads", "2")
    shown = answered(widget)
    assert shown["many-label"] == "2"
    assert (shown["many-subject"], shown["many-clause"], shown["many-previous"]) == ("1.0000", "0.5000", "0.5000")
    assert (shown["many-number"], shown["many-verb"]) == ("1.0000", "was")
    expect(widget.locator('[data-output="many-title"]')).to_have_text(
        "two softmaxes for three relationships: the clause and the previous token share one, half each")
    assert widget.locator('[data-output="many-looks"] .mha-ovm__row').count() == 2  # one row per softmax
    alone = widget.locator('select[name="alone"]')
    expect(alone).to_be_enabled()
    alone.focus()
    alone.press("ArrowDown")  # the clause keeps a head of its own: the subject shares with the plural neighbour
    expect(widget).to_have_attribute("data-alone", "clause")
    shown = answered(widget)
    assert (shown["many-subject"], shown["many-clause"], shown["many-previous"]) == ("0.5000", "1.0000", "0.5000")
    assert (shown["many-number"], shown["many-verb"]) == ("0.0000", "was or were?")
    assert "the subject and the previous token share one softmax" in widget.locator('[data-output="summary"]').text_content()
    widget.locator('input[name="heads"][value="2"]').press("ArrowLeft")  # 1 head: all three share it
    expect(widget).to_have_attribute("data-heads", "1")
    shown = answered(widget)
    assert (shown["many-subject"], shown["many-number"], shown["many-verb"]) == ("0.3333", "-0.0417", "were")
    expect(alone).to_be_disabled()


def test_no_weight_at_all_is_explained_and_the_numbers_stay_marked_stale(fresh_widget):
    widget = fresh_widget(NAME)
    for name in ("subject", "clause"):
        widget.locator(f'input[name="{name}"]').press("Home")
    widget.locator('input[name="previous"]').press("End")
    before = answered(widget)  # 0, 0, 100
    widget.locator('input[name="previous"]').press("Home")  # 0, 0, 0
    expect(widget).to_have_attribute("data-state", "error")
    error = widget.locator('[data-message="error"]')
    expect(error).to_be_visible()
    expect(error).to_contain_text("Give at least one relationship some weight")
    assert one_vs_many_outputs(widget) == before
    results = widget.locator("[data-results]")  # the panels, the verdict, the summary and the three shares
    expect(results).to_have_count(6)
    for shown in results.all():
        expect(shown).to_have_attribute("data-stale", "true")  # the old numbers, marked as not the sliders' answer
    note = widget.locator(".mha-stale-note")
    expect(note).to_be_visible()  # and said in words, not only greyed
    widget.locator('input[name="clause"]').press("ArrowRight")
    answered(widget)
    expect(error).to_be_hidden()
    for shown in results.all():
        expect(shown).to_have_attribute("data-stale", "false")
    expect(note).to_be_hidden()


def test_a_keyboard_user_sees_where_the_focus_is(fresh_widget):
    widget = fresh_widget(NAME)
    slider = widget.locator('input[name="clause"]')
    slider.focus()
    slider.press("ArrowRight")
    assert slider.evaluate("el => el.matches(':focus-visible') && getComputedStyle(el).outlineStyle !== 'none'")
    answered(widget)


def test_at_390_px_everything_fits_and_works(fresh_widget):
    widget = fresh_widget(NAME)
    page = widget.page
    conftest.resize(page, VIEWPORTS["phone"])
    widget.scroll_into_view_if_needed()
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")
    for control in widget.locator("form input, form select").all():
        box = control.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= 390, box
    for slider in widget.locator('input[type="range"]').all():
        assert slider.bounding_box()["width"] >= 200  # room to move it with a thumb
    panels = [p.bounding_box() for p in widget.locator(".mha-ovm__panel").all()]
    assert panels[0]["y"] + panels[0]["height"] <= panels[1]["y"]  # one above the other
    first, verdict = widget.locator('input[name="subject"]'), widget.locator('[data-output="verdict"]')
    first.press("PageUp")
    answered(widget)
    assert conftest.on_one_screen(page, first, verdict)  # the verdict is read as the sliders move
    expect(verdict).to_have_text(one_vs_many_view(**one_vs_many_form(widget))["outputs"]["verdict"]["text"])
    widget.locator('input[name="heads"][value="3"]').press("ArrowLeft")  # 2 heads: the longer words
    expect(widget).to_have_attribute("data-heads", "2")
    answered(widget)
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")


def test_no_serious_accessibility_violation_in_light_and_dark_on_desktop_and_phone(fresh_widget,
                                                                                  axe_source):  # noqa: F811
    """As built (initial), live after a change, and with no weight at all (the error), each in both schemes
    and on both screens, on the module's page (the widget mounted afresh): no serious violation."""
    found, selector = [], f'[data-mha-widget="{NAME}"]'
    widget = fresh_widget(NAME)
    page = widget.page

    def check(state):
        found.extend(blocking_in_every_look(page, axe_source, state, selector))

    try:
        check("initial")  # as built: data-state stays "initial" until a control moves
        expect(widget).to_have_attribute("data-state", "initial")
        widget.locator('input[name="wide"]').press("Space")
        answered(widget)
        check("live")
        for name in ("subject", "clause", "previous"):
            widget.locator(f'input[name="{name}"]').press("Home")
        expect(widget).to_have_attribute("data-state", "error")
        check("error")
    finally:
        look(page, "light", "desktop")  # the scheme the module's other tests have (shared_page restores the size)
    assert not found, "\n".join(found)
