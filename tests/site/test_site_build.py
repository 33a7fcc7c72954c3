"""`python build.py --out DIR`: a complete, self-contained site. (Reproducible: test_readme.py builds it twice more
and compares.)"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import mha_core
import mha_page

from sitebuild import assets, csp, widgets
from tests.helpers import one_vs_many_expected

PACKAGES = {"mha_core": Path(mha_core.__file__).parent, "mha_page": Path(mha_page.__file__).parent}  # the site's wheels
URL_ATTR = re.compile(r'\b(?:src|href)="([^"]*)"')
EXTERNAL_OK = re.compile(r'<a [^>]*href="https?://')  # links a reader may follow; nothing loads them


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_pyodide_numpy_temml_and_the_wheel_are_in_the_site(plain_site):
    """Every file the worker loads is in the site as config.js says, its sha256 (after decompression) the one
    config.js gives; Pyodide's own files are the pinned ones."""
    site = plain_site
    # Temml's css and font, no script: the math is typeset at build time
    assert sorted(p.name for p in (site / "assets" / "temml").iterdir()) == ["Temml.woff2", "temml.css"]
    assert not (site / "assets" / "katex").exists()
    config = json.loads((site / "assets" / "widgets" / "runtime" / "config.js").read_text()
                        .partition("export default ")[2].rstrip().rstrip(";"))
    assert config["pyodide"] is None
    wheels = [sorted((site / "assets" / "wheels").glob(f"{name}-*-py3-none-any.whl.gz")) for name in PACKAGES]
    assert all(len(found) == 1 for found in wheels) and len(list((site / "assets" / "wheels").iterdir())) == 2
    for package, entry, [packed] in zip(PACKAGES.values(), config["wheels"], wheels):
        wheel = gzip.decompress(packed.read_bytes())
        assert entry == {"name": packed.name.removesuffix(".gz"), "path": packed.name, "gzip": True,
                         "sha256": hashlib.sha256(wheel).hexdigest(), "bytes": packed.stat().st_size}
        with zipfile.ZipFile(io.BytesIO(wheel)) as members:  # as the site hosts Python, its wheels are compiled too
            compiled = sorted(n for n in members.namelist() if n.startswith(f"{package.name}/"))
            assert compiled == sorted(f"{package.name}/{p.relative_to(package).as_posix()}c"
                                      for p in package.rglob("*.py"))
            assert all(members.read(n).startswith((3531).to_bytes(2, "little") + b"\r\n") for n in compiled)
            assert {i.compress_type for i in members.infolist()} == {zipfile.ZIP_STORED}  # the gzip compresses
    files = config["files"]
    assert set(files) == {"pyodide.mjs", "pyodide.asm.wasm", "pyodide.asm.js", "python_stdlib.zip",
                          "pyodide-lock.json", assets.NUMPY_WHEEL}
    for name, file in files.items():
        data = (site / "assets" / "pyodide" / file["path"]).read_bytes()
        assert len(data) == file["bytes"] and file["gzip"] == file["path"].endswith(".gz")
        assert hashlib.sha256(gzip.decompress(data) if file["gzip"] else data).hexdigest() == file["sha256"], name
    for name in ("pyodide.mjs", "pyodide.asm.wasm", "pyodide.asm.js"):
        assert files[name]["sha256"] == assets.PYODIDE_FILES[name]
    assert sum(f["bytes"] for f in files.values()) < 7.5e6


def test_every_page_has_a_sealed_csp_and_loads_nothing_from_elsewhere(plain_site):
    policies = set()
    for page in pages(plain_site):
        html = page.read_text(encoding="utf-8")
        policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        assert policy and csp.PLACEHOLDER not in html, page
        policy = policy.group(1)
        assert "'wasm-unsafe-eval'" in policy and "'unsafe-eval'" not in policy.replace("'wasm-unsafe-eval'", "")
        assert "'unsafe-inline'" not in policy.split("; ")[1], page  # script-src: only the site's own scripts
        for attrs, body in csp.INLINE_SCRIPT.findall(html):
            assert "application/json" in attrs or csp.inline_hashes(f"<script>{body}</script>") in policy
        policies.add(policy)
        stripped = EXTERNAL_OK.sub("<a ", html)
        assert [u for u in URL_ATTR.findall(stripped) if re.match(r"(https?:)?//", u)] == [], page
    assert len(policies) == 1  # instant navigation keeps the first page's policy: every page has the same


MODULE = re.compile(r'<script type="module" src="[./]*assets/widgets/(\w+)/\1\.js">')


def test_each_page_loads_its_widgets_modules_and_every_widgets_style_in_one_stylesheet(plain_site):
    """A page loads the runtime, the module that loads the widgets' modules a page brought in by instant navigation
    holds (widgets/widgets.js), and the modules of its own widgets, no other; every widget's style, in one file (a
    page brought in without a new document finds its widgets' styles there), each widget's as it is written, the
    runtime's first. (The runtime starts Python only near a widget, and the modules mount the widgets on a page
    brought in: tests/browser/test_site.py.)"""
    site = plain_site
    loaded = set()
    for page in pages(site):
        html = page.read_text(encoding="utf-8")
        held = {name.replace("-", "_") for name in re.findall(r'data-mha-widget="([\w-]+)"', html)}
        assert set(MODULE.findall(html)) == held, page
        loaded |= held
        for asset in ["runtime/bridge.js", "widgets.js", "widgets.css"]:
            assert f"assets/widgets/{asset}" in html, (page, asset)
        assert html.count('rel="stylesheet"') == 6, page  # Material's two, Temml's, docs/stylesheets' two, the widgets'
    assert loaded == set(widgets.names())  # (every widget is on some page)
    joined = (site / "assets" / "widgets" / "widgets.css").read_text(encoding="utf-8")
    styles = ["runtime/common.css"] + [f"{n}/{n}.css" for n in sorted(widgets.names())]
    at = [joined.index((widgets.WIDGETS / style).read_text(encoding="utf-8")) for style in styles]
    assert at == sorted(at) and not list((site / "assets" / "widgets").rglob("*/*.css"))


def test_the_search_index_leaves_out_what_the_widgets_templates_hold(plain_site):
    """A <template> holds a widget's data (the training widget's last checkpoint, as JSON) or the rows its script clones:
    nothing a reader reads as it is, so nothing the search should find."""
    site = plain_site
    docs = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    text = " ".join(doc["text"] for doc in docs)
    held = [m for page in pages(site) for m in re.findall(r"<template[^>]*>(.{40})", page.read_text(encoding="utf-8"))]
    assert any(h.startswith('{"') for h in held)  # the JSON of a widget's data
    assert [h for h in held if h.strip() and h in text] == []
    assert "data:image/png" not in text and "A single attention head" in text


def widgets_built(site: Path, html_of_one: str, name: str) -> list[str]:
    """The HTML of each widget that html_of_one (a regular expression) matches, on every page; none fails."""
    found = [w for page in pages(site) for w in re.findall(html_of_one, page.read_text(encoding="utf-8"), re.S)]
    assert found, f"no page holds a {name} widget"
    return found


def test_each_shapes_widget_is_prerendered_with_mha_core_numbers(plain_site):
    for widget in widgets_built(plain_site, r'<div class="mha-shapes".*?data-output="flops"[^>]*>', "shapes"):
        form = dict(re.findall(r'<input type="number" id="[^"]+" name="(\w+)"[^>]*value="(\d+)"', widget))
        report = mha_core.shape_report(**{k: int(v) for k, v in form.items()})
        assert 'data-state="initial"' in widget
        assert f'data-output="params" data-value="{report["params"]["total"]}"' in widget
        for t in report["tensors"]:
            assert f'data-tensor="{t["name"]}" data-output="tensor-{t["name"]}" data-shape="{",".join(map(str, t["shape"]))}"' in widget


def test_the_one_vs_many_widget_is_prerendered_with_mha_core_numbers(plain_site):
    """Every output at first paint is mha_core's value for the sliders' and the checkbox's values as built."""
    for widget in widgets_built(plain_site, r'<div class="mha-ovm".*?data-output="summary"', "one-vs-many"):
        form = {name: float(value) for name, value in
                re.findall(r'<input type="range" id="[^"]+" name="(\w+)" min="0" max="100" step="1" value="(\d+)"', widget)}
        form["wide"] = bool(re.search(r'<input type="checkbox" name="wide"[^>]* checked', widget))
        assert sorted(form) == ["clause", "previous", "subject", "wide"]
        assert 'data-mha-widget="one-vs-many" data-state="initial"' in widget
        assert dict(re.findall(r'data-output="([\w-]+)" data-value="([^"]*)"', widget)) == one_vs_many_expected(**form)


def test_with_a_site_url_the_404_page_links_its_files_under_the_sub_path(built_site, site_url):
    mount = urlsplit(site_url).path  # the sub-path the site was built for
    html = (built_site / "404.html").read_text(encoding="utf-8")
    local = [u for u in URL_ATTR.findall(EXTERNAL_OK.sub("<a ", html)) if not u.startswith(("#", "data:"))]
    assert mount != "/" and local and all(u.startswith(mount) for u in local), local
    assert all((built_site / u.removeprefix(mount).split("#")[0].split("?")[0]).exists() for u in local)


def test_search_previews_show_each_formula_once_as_text(plain_site):
    """Material's search index holds each formula as text with <sub> and <sup> (search previews show it): not its
    TeX, and not its MathML's text ("a_{ij}" typeset is "aij", each symbol twice with the TeX)."""
    docs = json.loads((plain_site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    text = " ".join(doc["title"] + " " + doc["text"] for doc in docs)
    assert "A single attention head turns each query position i into one probability distribution" in text
    assert "a<sub>ij</sub>=softmax<sub>j</sub>((q<sub>i</sub>⋅k<sub>j</sub>)/√(d<sub>k</sub>))" in text
    assert not re.search(r"\\[(\[]|\\frac|\\mathrm", text)
    assert "aij" not in text and "\u200b" not in text
