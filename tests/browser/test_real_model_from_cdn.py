"""The real model taken from a registry's CDN (a build with --model-cdn), in Chromium: Load downloads the wheel
from another origin (a server on 127.0.0.1 playing PyPI's file host, with its CORS header) with byte progress,
checks it, inflates the GGUF and has the page's Python cut it; the reader's text then gives the scores mha_core
computes here in CPython; a revisit downloads nothing; a wheel that is not the pinned one is refused, said so.
conftest fails a test on any page error, console error, CSP violation or request off 127.0.0.1."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import conftest
from sitebuild.assets import model_wheel_path
from sitevisit.site import pages_with, serve
from test_real_model_widget import LOAD_TIMEOUT_MS, MODEL_FILE, NAME, assert_scores, expected, gguf  # noqa: F401

pytestmark = pytest.mark.computes  # runs a real model: conftest.BASELINE_COMPILERS


@pytest.fixture(scope="module")
def widget_url(model_cdn_site):
    server, base = serve(model_cdn_site)
    yield base + pages_with(model_cdn_site, f'data-mha-widget="{NAME}"')[0]
    server.shutdown()


def from_cdn(page_log, wheel_url) -> list[str]:
    return [url for url in page_log.requests if url == wheel_url]


def test_load_takes_the_wheel_from_the_cdn_and_a_revisit_downloads_nothing(page, page_log, widget_url,
                                                                           model_cdn_url, gguf):
    widget = conftest.open_widget(page, widget_url, NAME)
    widget.locator('button[name="load"]').click()
    expect(widget.locator('[data-output="progress"]')).to_contain_text(
        re.compile(r"Downloading the model: [\d.]+ of [\d.]+ MB"), timeout=LOAD_TIMEOUT_MS)
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    assert from_cdn(page_log, model_cdn_url) == [model_cdn_url]
    assert not [url for url in page_log.requests if MODEL_FILE.search(url)]  # nothing of the model from the site
    text = widget.locator('textarea[name="text"]')
    assert_scores(widget, expected(gguf, text.input_value())[1])

    again = page.context.new_page()  # the same reader, a new visit: the wheel comes from what was kept
    revisit = conftest.open_widget(again, widget_url, NAME)
    revisit.locator('button[name="load"]').click()
    expect(revisit).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    assert from_cdn(page_log, model_cdn_url) == [model_cdn_url]
    assert_scores(revisit, expected(gguf, revisit.locator('textarea[name="text"]').input_value())[1])


def test_a_wheel_that_is_not_the_pinned_one_is_refused_with_a_clear_message(page, page_log, widget_url,
                                                                            model_cdn_url):
    """The CDN answers with other bytes (the wheel's first MB, one bit changed): refused by the wheel's sha256."""
    page_log.allow("Failed to load resource|net::ERR")
    other = bytearray(model_wheel_path().read_bytes()[:1 << 20])
    other[-1] ^= 1
    page.context.route(model_cdn_url, lambda route: route.fulfill(
        status=200, body=bytes(other), headers={"Access-Control-Allow-Origin": "*",
                                               "Content-Type": "application/octet-stream"}))
    widget = conftest.open_widget(page, widget_url, NAME)
    widget.locator('button[name="load"]').click()
    expect(widget).to_have_attribute("data-state", "error", timeout=LOAD_TIMEOUT_MS)
    wheel = model_cdn_url.rsplit("/", 1)[1]
    expect(widget.locator('[data-message="error"]')).to_contain_text(
        f"{wheel} is not the file this site was built with (its sha256 differs)")
    expect(widget.locator('button[name="retry"]')).to_be_visible()
