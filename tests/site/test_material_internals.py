"""What the site takes from Material for MkDocs beyond its documented settings, checked in the installed package:
search on demand (overrides/assets/javascripts/workers/search-on-demand.js, whose top states the contract, and the
config rewrite in overrides/main.html) and the search partial copied for the dialog's name
(overrides/partials/search.html); the palette shown and switched by the site (overrides/partials/javascripts/palette.html,
whose top states the contract, with Material's toggle copied without its component name: overrides/partials/palette.html);
the stylesheets' addresses resolved before instant navigation does (overrides/partials/javascripts/resolved-stylesheets.html); which pages instant navigation takes for the site's (the sitemap a build without
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
PALETTE = OVERRIDES / "partials" / "javascripts" / "palette.html"
RESOLVED = OVERRIDES / "partials" / "javascripts" / "resolved-stylesheets.html"
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
    for partial in ("search.html", "palette.html", "javascripts/palette.html", "javascripts/resolved-stylesheets.html"):
        assert f"mkdocs-material {REQUIREMENT}" in (OVERRIDES / "partials" / partial).read_text(encoding="utf-8")


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


def markup(text: str) -> str:
    """A partial without its opening comment."""
    return re.sub(r"^\{#-.*?-#\}\n", "", text, flags=re.S)


def test_the_search_partial_is_material_s_with_the_dialog_named():
    ours = markup((OVERRIDES / "partials" / "search.html").read_text(encoding="utf-8"))
    theirs = markup((MATERIAL / "partials" / "search.html").read_text(encoding="utf-8"))
    named = ' aria-label="{{ lang.t(\'search\') }}"'
    assert named in ours
    assert ours.replace(named, "", 1) == theirs


def test_the_palette_partial_is_material_s_without_its_component_name():  # palette contract 1
    ours = markup((OVERRIDES / "partials" / "palette.html").read_text(encoding="utf-8"))
    theirs = markup((MATERIAL / "partials" / "palette.html").read_text(encoding="utf-8"))
    assert theirs.count(' data-md-component="palette"') == 1
    assert ours == theirs.replace(' data-md-component="palette"', "", 1)


def test_material_mounts_its_palette_on_the_element_named_for_it_only(bundle):  # palette contract 1
    assert re.search(r"function (\w+)\(e,t=document\)\{return \w+\(`\[data-md-component=\$\{e\}\]`", bundle)
    assert len(re.findall(r'"palette"', bundle)) == 1, "Material finds its palette some other way too"
    assert re.search(r'\.\.\.\w+\("palette"\)\.map\(e=>\w+\(e\)\)', bundle)
    header = (MATERIAL / "partials" / "header.html").read_text(encoding="utf-8")
    includes = re.findall(r'{% include "(partials/(?:javascripts/)?palette\.html)" %}', header)
    assert includes == ["partials/palette.html", "partials/javascripts/palette.html"]


def test_material_s_palette_is_the_body_s_attributes_from_the_input_picked(bundle):  # palette contract 2
    picked = re.search(r"for\(let\[(\w),(\w)\]of Object\.entries\(\w\.color\)\)document\.body\.setAttribute\("
                       r"`data-md-color-\$\{\1\}`,\2\);for\(let (\w)=0;\3<\w\.length;\3\+\+\)\{let (\w)=\w\[\3\]"
                       r"\.nextElementSibling;\4 instanceof HTMLElement&&\(\4\.hidden=\w\.index!==\3\)\}", bundle)
    assert picked, "Material's palette no longer sets the body's attributes and shows the picked input's label"
    keys = re.search(r"media:(\w)\.getAttribute\(\"data-md-color-media\"\),scheme:\1\.getAttribute\(\"data-md-color-"
                     r"scheme\"\),primary:\1\.getAttribute\(\"data-md-color-primary\"\),accent:\1\.getAttribute\(\"data-md-"
                     r"color-accent\"\)", bundle)
    assert keys and '["media", "scheme", "primary", "accent"]' in PALETTE.read_text(encoding="utf-8")
    assert 'document.body.setAttribute("data-md-color-switching","")' in bundle
    palette_css = one("assets/stylesheets/palette.*.min.css")
    assert "[data-md-color-switching] *,[data-md-color-switching] :after,[data-md-color-switching] :before" \
           "{transition-duration:0s!important}" in palette_css


def test_material_keeps_the_palette_where_the_site_s_palette_does(bundle):  # palette contract 3
    assert re.search(r'__md_set\("__palette",\w\)', bundle)
    assert re.search(r'__md_get\("__palette"\)\|\|\{index:\w+\.findIndex\(', bundle)
    helpers = (MATERIAL / "partials" / "javascripts" / "base.html").read_text(encoding="utf-8")
    assert "__md_get=(e,_=localStorage,t=__md_scope)=>" in helpers and "__md_set=(e,_,t=localStorage,a=__md_scope)=>" in helpers
    ours = PALETTE.read_text(encoding="utf-8")
    assert '__md_get("__palette")?.index' in ours and '__md_set("__palette", { index, color: show(index) })' in ours


def test_instant_navigation_keeps_the_header_and_the_palette_s_meta_tags(bundle):  # palette contract 4
    replaced = re.search(r'for\(let \w of\[((?:"\[data-md-component=[\w-]+\]",)+)', bundle)
    assert replaced, "Material's instant navigation no longer lists the components it replaces"
    assert "header" not in replaced[1].replace("header-topic", "")
    assert re.search(r'(\w)!=="theme-color"&&\1!=="color-scheme"&&\w\.remove\(\)', bundle)


def test_instant_navigation_resolves_the_relative_addresses_of_the_page_as_it_starts(bundle):  # resolved contract 1
    resolve = re.search(r'function (\w+)\(e\)\{for\(let t of \w+\("\[href\], \[src\]",e\)\)for\(let r of\["href","src"\]\)'
                        r'\{let o=t\.getAttribute\(r\);if\(o&&!/\^\(\?:\[a-z\]\+:\)\?\\/\\//i\.test\(o\)\)\{t\[r\]=t\[r\];break\}\}'
                        r'return [\w$]+\(e\)\}', bundle)
    assert resolve, "instant navigation no longer resolves a relative href or src by setting it to itself"
    assert re.search(rf'[\w$]+\(document\)\.subscribe\({resolve[1]}\)', bundle), "nor does it to the page as it starts"
    assert re.search(rf'\w+\({resolve[1]}\),\w+\(\w+\),\w+\(\)\);return', bundle), "nor to the page it brings in"
    ours = RESOLVED.read_text(encoding="utf-8")
    assert 'link.setAttribute("href", link.href)' in ours
    assert '{% include "partials/javascripts/resolved-stylesheets.html" %}\n{% endblock %}' in \
           re.search(r"{% block extrahead %}.*?{% endblock %}", (OVERRIDES / "main.html").read_text(), re.S)[0]


def test_instant_navigation_matches_the_head_of_a_page_by_each_element_s_markup(bundle):  # resolved contract 2
    assert re.search(r'function \w+\(e\)\{let t=new Map;for\(let r of \w+\(":scope > \*",e\.head\)\)t\.set\(r\.outerHTML,r\);'
                     r'return t\}', bundle)


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
