"""The "Try this" links beside the shape calculator: each one, clicked, loads the page with the
calculator set to the link's sizes, and the calculator shows mha_core's answer for them."""
from __future__ import annotations

import re
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import expect

import conftest
from conftest import wait_ready
from tests.helpers import assert_shows

LINK = 'article a[href*="#the-shape-calculator"][href*="?"]'
LINKS = f"() => [...document.querySelectorAll('{LINK}')].map(a => a.href)"


def config_of(href: str) -> dict:
    values = dict(parse_qsl(urlsplit(href).query))
    return {k: (v == "1" if k == "bias" else int(v)) for k, v in values.items()}


@pytest.mark.returning_reader
def test_each_link_sets_the_calculator(page, site_url, shapes_path):
    conftest.open_widget(page, site_url + shapes_path, "shapes")
    hrefs = page.evaluate(LINKS)
    assert len(hrefs) == 5, hrefs
    for i, href in enumerate(hrefs):
        page.goto(site_url + shapes_path)
        page.locator(LINK).nth(i).click()
        expect(page).to_have_url(re.compile(re.escape(site_url + shapes_path + "?")))
        wait_ready(page)
        widget = page.locator('[data-mha-widget="shapes"]').first
        assert_shows(widget, **config_of(href))
