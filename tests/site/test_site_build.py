"""`python build.py --out DIR`, run twice: a complete, self-contained, reproducible site."""
from __future__ import annotations

import filecmp
import json
import re
from pathlib import Path

import build
import mha_core
import pytest

from sitebuild import assets, csp
from tests.helpers import build_into

URL_ATTR = re.compile(r'\b(?:src|href)="([^"]*)"')
EXTERNAL_OK = re.compile(r'<a [^>]*href="https?://')  # links a reader may follow; nothing loads them


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    base = tmp_path_factory.mktemp("builds")
    return build_into(base / "one"), build_into(base / "two")


def pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def differing(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b)
    out = [str(a / n) for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
    for sub in cmp.common_dirs:
        out += differing(a / sub, b / sub)
    return out


def test_two_builds_give_identical_files(sites):
    one, two = sites
    assert differing(one, two) == []
    filecmp.clear_cache()
    mismatched = [p for p in one.rglob("*") if p.is_file() and
                  not filecmp.cmp(p, two / p.relative_to(one), shallow=False)]
    assert mismatched == []


def test_pyodide_numpy_katex_and_the_wheel_are_in_the_site(sites):
    site = sites[0]
    for name, pin in assets.PYODIDE_PINS.items():
        assert assets.sha256(site / "assets" / "pyodide" / name) == pin
    for name in ("katex.min.css", "katex.min.js", "contrib/auto-render.min.js", "fonts/KaTeX_Main-Regular.woff2"):
        assert (site / "assets" / "katex" / name).is_file()
    wheels = list((site / "assets" / "wheels").glob("mha_core-*-py3-none-any.whl"))
    config = (site / "assets" / "widgets" / "runtime" / "config.js").read_text()
    assert len(wheels) == 1 and assets.sha256(wheels[0]) in config and '"pyodide": null' in config
    pins = json.loads(config.partition("export default ")[2].rstrip().rstrip(";"))["pyodide_sha256"]
    assert {assets.sha256(site / "assets" / "pyodide" / name) for name in pins} == set(pins.values())
    assert {"pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip", assets.NUMPY_WHEEL} <= set(pins)  # the worker checks these


def test_every_page_has_a_sealed_csp_and_loads_nothing_from_elsewhere(sites):
    for page in pages(sites[0]):
        html = page.read_text(encoding="utf-8")
        policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        assert policy and csp.PLACEHOLDER not in html, page
        policy = policy.group(1)
        assert "'wasm-unsafe-eval'" in policy and "'unsafe-eval'" not in policy.replace("'wasm-unsafe-eval'", "")
        assert "'unsafe-inline'" not in policy.split("; ")[1], page  # script-src: only the page's own scripts
        for attrs, body in csp.INLINE_SCRIPT.findall(html):
            assert "application/json" in attrs or csp.inline_hashes(f"<script>{body}</script>") in policy
        stripped = EXTERNAL_OK.sub("<a ", html)
        assert [u for u in URL_ATTR.findall(stripped) if re.match(r"(https?:)?//", u)] == [], page


def test_only_pages_with_widgets_load_the_runtime(sites):
    site = sites[0]
    for page in pages(site):
        html = page.read_text(encoding="utf-8")
        has_widget = "data-mha-widget=" in html
        assert ("assets/widgets/runtime/bridge.js" in html) == has_widget, page
        assert ("assets/widgets/runtime/common.css" in html) == has_widget, page  # the controls' shared styles
        for name in re.findall(r'data-mha-widget="(\w+)"', html):
            assert f"assets/widgets/{name}/{name}.js" in html


def test_each_shapes_widget_is_prerendered_with_mha_core_numbers(sites):
    found = 0
    for page in pages(sites[0]):
        html = page.read_text(encoding="utf-8")
        for widget in re.findall(r'<div class="mha-shapes".*?data-output="flops"[^>]*>', html, re.S):
            found += 1
            form = dict(re.findall(r'<input type="number" id="[^"]+" name="(\w+)"[^>]*value="(\d+)"', widget))
            report = mha_core.shape_report(**{k: int(v) for k, v in form.items()})
            assert 'data-state="initial"' in widget
            assert f'data-output="params" data-value="{report["params"]["total"]}"' in widget
            for t in report["tensors"]:
                assert f'data-tensor="{t["name"]}" data-shape="{",".join(map(str, t["shape"]))}"' in widget
    assert found, "no page holds a shapes widget"


def test_with_a_site_url_the_404_page_links_its_files_under_the_sub_path(tmp_path):
    site = build.build_site(tmp_path / "site", site_url="https://example.org/mha/")
    html = (site / "404.html").read_text(encoding="utf-8")
    local = [u for u in URL_ATTR.findall(EXTERNAL_OK.sub("<a ", html)) if not u.startswith(("#", "data:"))]
    assert local and all(u.startswith("/mha/") for u in local), local
    assert all((site / u.removeprefix("/mha/").split("#")[0].split("?")[0]).exists() for u in local)
