"""Firefox and WebKit, beside the Chromium of tests/browser: every page of the built site with a widget opens,
Python gets ready, each widget computes once (sitevisit/engines/probe.js: by the widgets' data-state
contract, so that a widget added later is covered as it comes; one whose views are all in the page shows
another), each exercise loads its code editor and checks its skeleton in the exercises' own Python, the page's
formulas are whole, and no page error is logged. One browser per engine: the first page is loaded, each next one
reached by its link, as a reader moves on (instant navigation), so that one Python serves them all and the
exercises' Python starts from the memory the first start kept. A missing engine fails."""
from __future__ import annotations

import re

import pytest

from sitevisit.engines import EngineMissing
from sitevisit.engines.firefox import visit_in_firefox
from sitevisit.engines.webkit import visit_in_webkit
from sitevisit.site import pages_with

ENGINES = {"firefox": visit_in_firefox, "webkit": visit_in_webkit}
TIMEOUT_S = 120  # a page's start and its widgets' answers, on a loaded 2-core machine
# Firefox now and then (not in every run) logs this for the mechanism page, whose formulas are all whole once
# it has loaded, in every engine: accepted only when the loaded page has no such formula (report["mathml"]).
WHILE_PARSING = re.compile(r"^page error: Invalid markup: Incorrect number of children for <m\w+/> tag\.$")


def failures(report: dict, widgets_in_html: int) -> list[str]:
    """What went wrong on one page, each as a line naming the page (and the widget)."""
    where = report["path"]
    if report["runtime"] != "ready":
        return [f"{where}: Python not ready (data-mha-runtime={report['runtime']}: {report['status']!r}; "
                f"the page {report['visibility']}, handed over {report['handedOver']}; {report.get('idle', '')})",
                *report["problems"]]
    out = [f"{where}: {p}" for p in report["problems"] if not WHILE_PARSING.match(p)]
    out += [f"{where}: a formula with the wrong number of parts: {m}" for m in report["mathml"]]
    if len(report["widgets"]) != widgets_in_html:
        out.append(f"{where}: {len(report['widgets'])} widgets in the page, {widgets_in_html} in its HTML")
    for w in report["widgets"]:
        widget = f"{where}: the {w['name']} widget #{w['id']}"
        if w["kind"] == "exercise":  # its skeleton, checked: "fail" with the case, which only the checks give
            if "busy" not in w["states"] or w["state"] not in ("pass", "fail"):
                out.append(f"{widget} was not checked (states {w['states']}): {w['message']}")
            if w["editor"] != "true":
                out.append(f"{widget}: its code editor did not load (data-editor-loaded: {w['editor']})")
        elif w["kind"] == "precomputed":  # its views made at build time: a control shows another, live at last
            if not w["changed"] or w["state"] != "live":
                out.append(f"{widget} did not show another view after {w['control']} (state {w['state']})")
        elif "busy" not in w["states"]:
            out.append(f"{widget} never asked Python (last control tried: {w['control']})")
        elif w["state"] != "live":
            out.append(f"{widget} ended {w['state']} after {w['control']}: {w['message']}")
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_every_widget_page_gets_python_ready_and_each_widget_computes_once(engine, built_site, site_url):
    paths = pages_with(built_site, "data-mha-widget=")
    assert paths, "no page of the built site holds a widget"
    try:
        reports = ENGINES[engine](site_url, paths, TIMEOUT_S)
    except EngineMissing as e:
        pytest.fail(f"{engine}: {e}", pytrace=False)
    assert [r["path"] for r in reports] == paths
    widgets = {p: (built_site / p / "index.html").read_text(encoding="utf-8").count("data-mha-widget=") for p in paths}
    problems = [line for r in reports for line in failures(r, widgets[r["path"]])]
    assert problems == [], "\n".join(problems)
