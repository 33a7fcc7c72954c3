"""What the site takes from Material for MkDocs beyond its documented settings, checked in the installed package:
search on demand (overrides/assets/javascripts/workers/search-on-demand.js, whose top states the contract, and the
config rewrite in overrides/main.html) and the search partial copied for the dialog's name
(overrides/partials/search.html); which pages instant navigation takes for the site's (the sitemap a build without
a site address gets, sitebuild/serving.py); what the search index keeps of a formula's markup (sitebuild/typeset.py);
which code highlighting classes draw as plain text (sitebuild/highlight.py).
A new Material fails here until those have been checked against it."""
from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import material
import pytest

from sitebuild.highlight import PLAIN

ROOT = Path(__file__).resolve().parents[2]
MATERIAL = Path(material.__file__).parent / "templates"
OVERRIDES = ROOT / "overrides"
ON_DEMAND = OVERRIDES / "assets" / "javascripts" / "workers" / "search-on-demand.js"
REQUIREMENT = re.search(r"^mkdocs-material==([\d.]+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)


def one(pattern: str) -> str:
    found = sorted(MATERIAL.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0].read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def worker() -> str:
    return one("assets/javascripts/workers/search.*.min.js")


@pytest.fixture(scope="module")
def bundle() -> str:
    return one("assets/javascripts/bundle.*.min.js")


def test_the_modules_name_the_material_that_is_pinned_and_installed():
    assert version("mkdocs-material") == REQUIREMENT
    assert f"mkdocs-material {REQUIREMENT}" in ON_DEMAND.read_text(encoding="utf-8")
    assert f"mkdocs-material {REQUIREMENT}" in (OVERRIDES / "partials" / "search.html").read_text(encoding="utf-8")


def test_the_config_names_the_search_worker_where_main_html_rewrites_it():  # contract 1
    config = re.search(r"{% block config %}(.*?){% endblock %}", (MATERIAL / "base.html").read_text(), re.S).group(1)
    worker_path = re.search(r'"search": "(assets/javascripts/workers/(search\.\w+\.min\.js))" \| url', config)
    assert worker_path, "Material's config no longer names its search worker's script"
    rewrite = re.search(r'replace\("([^"]+)", "([^"]+)"\)', (OVERRIDES / "main.html").read_text()).groups()
    assert rewrite == ("/workers/search.", "/workers/search-on-demand.js?material=search.")
    name = worker_path.group(2)
    assert re.fullmatch(r"search\.\w+\.min\.js", name)  # what search-on-demand.js accepts as ?material=
    assert re.search(r"\^search\\\.\\w\+\\\.min\\\.js\$", ON_DEMAND.read_text()), "search-on-demand.js's check changed"
    assert (MATERIAL / worker_path.group(1)).is_file()


def test_page_and_worker_exchange_the_message_numbers_search_on_demand_uses(worker, bundle):  # contract 2
    numbers = dict(re.findall(r"^const (SETUP|READY|QUERY|RESULT) = (\d);$", ON_DEMAND.read_text(), re.M))
    assert numbers == {"SETUP": "0", "READY": "1", "QUERY": "2", "RESULT": "3"}
    answers = re.search(r"switch\(\w\.type\)\{case 0:.{0,80}?\{type:1\};case 2:.{0,60}?\{type:3,data:", worker)
    assert answers, "Material's worker no longer answers SETUP (0) with READY (1) and QUERY (2) with RESULT (3)"
    assert re.search(r"\{type:0,data:\{config:\w,docs:\w", bundle), "the page no longer sends SETUP (0) with the docs"
    assert re.search(r"\{type:2,data:\w\}", bundle), "the page no longer sends QUERY (2) with the field's text"
    assert re.search(r"function \w+\(\w\)\{return \w\.type===1\}function \w+\(\w\)\{return \w\.type===3\}", bundle)


def test_material_s_worker_listens_and_answers_as_search_on_demand_expects(worker):  # contract 3
    assert re.search(r'addEventListener\("message",\w=>.{0,40}?\{postMessage\(yield \w+\(\w\.data\)\)\}', worker)


def test_the_search_partial_is_material_s_with_the_dialog_named():
    def markup(text: str) -> str:
        return re.sub(r"^\{#-.*?-#\}\n", "", text, flags=re.S)
    ours = markup((OVERRIDES / "partials" / "search.html").read_text(encoding="utf-8"))
    theirs = markup((MATERIAL / "partials" / "search.html").read_text(encoding="utf-8"))
    named = ' aria-label="{{ lang.t(\'search\') }}"'
    assert named in ours
    assert ours.replace(named, "", 1) == theirs


def test_instant_navigation_takes_the_sitemaps_pages_with_the_pages_host_and_the_sitemaps_port(bundle):
    """sitebuild/serving.py's local sitemap: Material reads sitemap.xml beside the site's base and keeps each
    location's port, taking only the protocol and host name of the page shown."""
    assert re.search(r'function (\w+)\(e\)\{return \w+\(new URL\("sitemap\.xml",e\)\)', bundle)
    rebased = re.search(r"function (\w+)\(e,t\)\{return e\.protocol=t\.protocol,e\.hostname=t\.hostname,e\}", bundle)
    assert rebased, "Material no longer rebases the sitemap's locations on the page's protocol and host name"
    assert re.search(rf"\[{rebased[1]}\(new URL\(\w+\.textContent\),t\)\]", bundle)  # each <loc>, so rebased


def test_the_search_index_keeps_sub_and_sup():
    """sitebuild/typeset.py writes a formula in the search index as text with <sub> and <sup>, the markup
    Material's search keeps (and shows in its previews) besides paragraphs, code and lists."""
    plugin = (MATERIAL.parent / "plugins" / "search" / "plugin.py").read_text(encoding="utf-8")
    keep = re.search(r"self\.keep = set\(\[(.*?)\]\)", plugin, re.S)
    assert keep and {'"sub"', '"sup"'} <= set(re.findall(r'"\w+"', keep[1]))


def rules(css: str) -> list[tuple[list[str], str]]:
    """(selectors, declarations) of each rule of css, at-rules' blocks flattened."""
    return [([sel.strip() for sel in selectors.split(",")], body)
            for selectors, body in re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"@[^{]+\{", "", css))]


def test_the_classes_whose_spans_are_taken_out_draw_as_the_code_s_own_text():
    """sitebuild/highlight.py takes the spans of PLAIN's classes out of the code blocks: in Material's stylesheet
    (and the site's, which come after it) no rule styles them but the name colour's, which is the code's colour."""
    sheets = [one("assets/stylesheets/main.*.min.css")] + [path.read_text(encoding="utf-8")
                                                           for path in sorted((ROOT / "docs").rglob("*.css"))]
    styled = {}
    for selectors, body in rules("\n".join(sheets)):
        for cls in PLAIN:
            if any(re.search(rf"\.{cls}(?![\w-])", sel) and ".highlight" in sel for sel in selectors):
                styled.setdefault(cls, []).append(body)
    assert "w" not in styled
    assert all(body == "color:var(--md-code-hl-name-color)" for cls in PLAIN for body in styled.get(cls, [])), styled
    names = re.findall(r"--md-code-hl-name-color:\s*([^;}]+)", "\n".join(sheets))
    assert names and set(names) == {"var(--md-code-fg-color)"}
