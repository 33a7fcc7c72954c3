"""The "Try this" links beside the shape calculator: each one, clicked, loads the page with the
calculator set to the link's sizes, and the calculator shows mha_core's answer for them. The reader clicks
them one after another, the first on the page as it opens, each next on the page the last one set."""
from __future__ import annotations

from urllib.parse import urlsplit

import conftest
from conftest import wait_ready
from tests.helpers import assert_shows, calculator

LINK = 'article a:not(.headerlink)[href*="#the-shape-calculator"][href*="?"]'  # (the heading's own link takes the page's query)
LINKS = f"() => [...document.querySelectorAll('{LINK}')].map(a => a.href)"


def test_each_link_sets_the_calculator(page, site_url, shapes_path):
    conftest.open_widget(page, site_url + shapes_path, "shapes")
    hrefs = page.evaluate(LINKS)
    assert len(hrefs) == 5, hrefs
    for i, href in enumerate(hrefs):
        with page.expect_navigation(url=href):  # a reload, as the page says (not Material's instant navigation)
            page.locator(LINK).nth(i).click()
        wait_ready(page)
        widget = page.locator('[data-mha-widget="shapes"]').first
        assert_shows(widget, **calculator(urlsplit(href).query))
