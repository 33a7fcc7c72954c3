"""The explainer in docs/: every page builds strictly, links and headings hold, figures carry text,
every code snippet it shows runs, its math parses, and each number it quotes that mha_core can compute
is the number mha_core computes."""

from __future__ import annotations

import ast
import html
import json
import re
import runpy
import subprocess
import tarfile
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

import build
import mha_core
from mha_core import param_count, shape_report

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)
SECTION = "# --8<-- [{}:{}]"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
MiB, GiB = 2**20, 2**30


@pytest.fixture(scope="module")
def build_module():
    return build


@pytest.fixture(scope="module")
def site(build_module, tmp_path_factory) -> Path:
    """The site as build.py builds it (widgets rendered, mkdocs --strict), without Pyodide's files."""
    return build_module.build_site(tmp_path_factory.mktemp("site"), pyodide_cdn=True)


def page_url(page: str) -> str:
    """docs path -> site path of its HTML (use_directory_urls)."""
    stem = page[:-3]
    return "index.html" if stem == "index" else (stem[:-len("index")] if stem.endswith("/index") else stem + "/") + "index.html"


def prose(page: str) -> str:
    """A page's Markdown with LaTeX thousands separators ({,}) made plain."""
    return (DOCS / page).read_text(encoding="utf-8").replace("{,}", ",")


def article(html_text: str) -> str:
    m = re.search(r'<article class="md-content__inner[^"]*">(.*)</article>', html_text, re.S)
    assert m, "no Material article in the page"
    return m.group(1)


class Parsed(HTMLParser):
    """What the checks need from one page: ids, and inside the article its headings, links, images,
    SVGs and visible prose (outside code and math)."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
    SKIP = {"code", "pre", "script", "style", "svg", "textarea"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.ids, self.headings, self.links, self.images, self.svgs, self.prose = set(), [], [], [], [], []
        self.stack, self.svg_title = [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if re.fullmatch(r"h[1-6]", tag):
            self.headings.append(int(tag[1]))
        elif tag == "a" and "href" in a:
            self.links.append(a["href"])
        elif tag == "img":
            self.images.append(a)
        elif tag == "svg":
            self.svgs.append({"attrs": a, "title": ""})
        elif tag == "title" and any(t == "svg" for t, _ in self.stack):
            self.svg_title = self.svgs[-1]
        if tag not in self.VOID:
            skip = tag in self.SKIP or "arithmatex" in (a.get("class") or "").split()
            self.stack.append((tag, skip))

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "img":
            self.images.append(a)

    def handle_endtag(self, tag):
        if tag == "title":
            self.svg_title = None
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break

    def handle_data(self, data):
        if self.svg_title is not None:
            self.svg_title["title"] += data
        if not any(skip for _, skip in self.stack):
            self.prose.append(data)


@pytest.fixture(scope="module")
def pages(site) -> dict[str, dict]:
    """docs page -> {"html": whole page, "doc": Parsed(whole page), "art": Parsed(article)}."""
    out = {}
    for page in PAGES:
        text = (site / page_url(page)).read_text(encoding="utf-8")
        out[page] = {"html": text, "doc": Parsed(text), "art": Parsed(article(text))}
    return out


# ---------------------------------------------------------------- build, navigation, search

def test_every_page_is_in_the_nav_and_built(site):
    from mkdocs.config import load_config

    nav = load_config(str(ROOT / "mkdocs.yml"))["nav"]
    listed = [next(iter(entry.values())) for entry in nav]
    assert sorted(listed) == PAGES, "every page in docs/ is in the nav, and nothing else"
    for page in PAGES:
        assert (site / page_url(page)).is_file(), page


def test_search_indexes_every_page(site):
    index = json.loads((site / "search" / "search_index.json").read_text(encoding="utf-8"))
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    for page in PAGES:
        url = page_url(page)
        assert url.removesuffix("index.html") in locations, page


def test_widgets_are_placed_where_the_text_expects_them(pages):
    markers = {
        "parameters-and-shapes.md": ("<!-- widget: shapes d_model=512 n_heads=8 seq_len=10 batch=2 -->", "shapes"),
        "what-heads-learn.md": ("<!-- widget: heads -->", "heads"),
    }
    for page in PAGES:
        lines = [line.strip() for line in (DOCS / page).read_text(encoding="utf-8").splitlines()]
        for marked_page, (marker, name) in markers.items():
            assert lines.count(marker) == (1 if page == marked_page else 0), (page, marker)
            count = pages[page]["html"].count(f'data-mha-widget="{name}"')
            assert count == (1 if page == marked_page else 0), (page, name)


# ---------------------------------------------------------------- links, headings, figures, math

def test_internal_links_and_anchors_resolve(site, pages):
    for page in PAGES:
        base = "http://site/" + page_url(page)
        for href in pages[page]["art"].links:
            parts = urlsplit(urljoin(base, href))
            if parts.netloc != "site":
                assert parts.scheme == "https", f"{page}: external link not over https: {href}"
                continue
            path = parts.path.lstrip("/")
            target = site / (path + "index.html" if path.endswith("/") or not path else path)
            assert target.is_file(), f"{page}: broken link {href}"
            if parts.fragment and target.suffix == ".html":
                target_page = next((p for p in PAGES if site / page_url(p) == target), None)
                ids = pages[target_page]["doc"].ids if target_page else Parsed(target.read_text()).ids
                assert parts.fragment in ids, f"{page}: no anchor #{parts.fragment} in {href}"


def test_headings_are_in_order(pages):
    for page in PAGES:
        levels = pages[page]["art"].headings
        assert levels and levels[0] == 1 and levels.count(1) == 1, f"{page}: one h1, first"
        for before, after in zip(levels, levels[1:]):
            assert after <= before + 1, f"{page}: heading level jumps from h{before} to h{after}"


def test_every_figure_has_a_text_alternative(pages):
    for page in PAGES:
        art = pages[page]["art"]
        for img in art.images:
            assert (img.get("alt") or "").strip(), f"{page}: <img src={img.get('src')}> has no alt text"
        for svg in art.svgs:
            a = svg["attrs"]
            if a.get("aria-hidden") == "true":
                continue
            assert a.get("role") == "img", f"{page}: an <svg> without role=img or aria-hidden"
            assert (a.get("aria-label") or svg["title"]).strip(), f"{page}: an <svg> without a title"


def test_pipeline_diagram_follows_the_theme_and_the_core():
    svg = (DOCS / "assets" / "pipeline.svg").read_text(encoding="utf-8")
    assert not re.search(r"#[0-9a-fA-F]{3,6}\b|rgb\(|hsl\(", svg), "colours come from currentColor and the CSS"
    assert re.search(r"<title id=\"mha-pipeline-title\">[^<]+</title>", svg)
    assert re.search(r"<desc id=\"mha-pipeline-desc\">[^<]+</desc>", svg)
    # The boxes name the core's tensors in pipeline order, with the core's symbolic shapes.
    names = re.findall(r'<text class="name"[^>]*>([^<]+)</text>', svg)
    shapes = re.findall(r'<text class="shape"[^>]*>([^<]+)</text>', svg)
    report = {t["name"]: t for t in shape_report(512, 8, 10, 2)["tensors"]}
    drawn = []
    for label, shape in zip(names, shapes):
        symbol = shape.replace(" each", "").replace(" ", "").replace("d_head", "d_k")
        for name in label.replace(" (the pattern)", "").split(", "):
            drawn.append(name)
            assert report[name]["symbol"] == symbol, (name, symbol)
    assert drawn == list(report)
    views = re.findall(r'class="op (view|copy)"', svg)
    assert views == ["view", "copy"]
    assert report["q_heads"]["view"] and not report["merged"]["view"]


def test_math_is_caught_by_arithmatex(pages):
    """A `$` left in the prose means math that was not recognised (and would show as source)."""
    for page in PAGES:
        text = "".join(pages[page]["art"].prose)
        assert "$" not in text, f"{page}: unrendered math near {text[max(0, text.find('$') - 60):text.find('$') + 60]!r}"


def test_every_formula_parses_in_katex(build_module, pages, tmp_path):
    formulas = []
    for page in PAGES:
        for m in re.finditer(r'<(span|div) class="arithmatex">(.*?)</\1>', pages[page]["html"], re.S):
            tex = html.unescape(m.group(2)).strip()
            display = tex.startswith("\\[")
            assert tex[:2] in ("\\(", "\\[") and tex[-2:] in ("\\)", "\\]"), tex
            formulas.append({"page": page, "tex": tex[2:-2], "display": display})
    assert formulas
    with tarfile.open(build_module.fetch_katex()) as tgz:
        member = tgz.getmember("package/dist/katex.min.js")
        (tmp_path / "katex.min.js").write_bytes(tgz.extractfile(member).read())
    (tmp_path / "formulas.json").write_text(json.dumps(formulas), encoding="utf-8")
    script = """
        const katex = require('./katex.min.js');
        const errors = [];
        for (const f of require('./formulas.json')) {
          try { katex.renderToString(f.tex, {displayMode: f.display, throwOnError: true}); }
          catch (e) { errors.push(f.page + ': ' + e.message); }
        }
        console.log(JSON.stringify(errors));
    """
    run = subprocess.run(["node", "-e", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == []


# ---------------------------------------------------------------- code: shown, therefore run

def snippets() -> list[tuple[str, str, str | None]]:
    """(page, file, section) for every snippet line in the docs."""
    found = []
    for page in PAGES:
        for target in SNIPPET.findall((DOCS / page).read_text(encoding="utf-8")):
            path, _, section = target.partition(":")
            found.append((page, path, section or None))
    return found


def section_text(path: str, section: str) -> str:
    text = (ROOT / path).read_text(encoding="utf-8")
    start, end = text.find(SECTION.format("start", section)), text.find(SECTION.format("end", section))
    assert 0 <= start < end, f"no section {section!r} in {path}"
    body = text[text.index("\n", start) + 1:end]
    return "\n".join(line for line in body.splitlines() if "# --8<--" not in line)


def test_every_snippet_exists_and_each_section_shown_is_the_functions_it_names():
    """A section of mha_core named after a function (a leading _ dropped) holds whole definitions: that
    function and the private ones it calls, nothing cut off and nothing else."""
    shown = snippets()
    assert shown, "the docs show no code"
    for page, path, section in shown:
        assert (ROOT / path).is_file(), f"{page}: {path} is missing"
        if not section:
            continue
        code = section_text(path, section)  # fails if the section is missing
        try:
            body = ast.parse(code).body
        except SyntaxError as e:
            raise AssertionError(f"{page}: {path}:{section} is not whole Python: {e}") from None
        if not path.startswith("mha_core/"):
            continue  # demonstrations in docs/: sections of one script, run whole by the next test
        assert all(isinstance(node, ast.FunctionDef) for node in body), f"{path}:{section} holds more than defs"
        names = [node.name for node in body]
        assert names and names[-1].lstrip("_") == section, f"{path}:{section} ends with {names}, not {section}"
        assert all(name.startswith("_") for name in names[:-1]), f"{path}:{section} shows public {names[:-1]}"


@pytest.mark.parametrize("demo", sorted({path for _, path, _ in snippets() if path.startswith("docs/")
                                         and path.endswith(".py")}))
def test_demonstrations_run(demo):
    """Each demonstration shown in the docs runs as written; its asserts are the facts the page states."""
    runpy.run_path(str(ROOT / demo), run_name="__main__")


# ---------------------------------------------------------------- the numbers the pages quote

def preset(key: str) -> dict:
    return next(p for p in mha_core.presets() if p["key"] == key)


def quoted(page: str, *texts: str) -> None:
    body = prose(page)
    for text in texts:
        assert text in body, f"{page} should say {text!r}"


def test_original_sizes():
    cfg = mha_core.AttentionConfig(512, 8)
    assert cfg.d_head == 64
    quoted("mechanism.md", "$d_\\text{model} = 512$ and $h = 8$", "$d_k = 64$")


def test_parameter_counts():
    base, base_no_bias = param_count(512, 8), param_count(512, 8, bias=False)
    assert base == 4 * 512**2 + 4 * 512 and base_no_bias == 4 * 512**2
    assert param_count(512, 1) == base, "the count does not depend on the number of heads"
    quoted("parameters-and-shapes.md", f"= {base_no_bias:,}$ weights", f"= {base:,}$ parameters")
    assert preset("transformer-base")["param_count"] in (base, base_no_bias)

    gemma = preset("gemma-7b")
    assert (gemma["d_model"], gemma["n_heads"], gemma["d_head"], gemma["bias"]) == (3072, 16, 256, False)
    gemma_count = param_count(3072, 16, d_head=256, bias=False)
    assert gemma_count == gemma["param_count"] == 4 * 3072 * 4096
    quoted("parameters-and-shapes.md", "$d_\\text{model} = 3072$ and 16 heads of $d_k = 256$",
           f"{16 * 256}", f"= {gemma_count:,}$ parameters")

    llama3 = preset("llama3-8b")
    assert (llama3["d_model"], llama3["n_heads"], llama3["n_kv_heads"], llama3["d_head"]) == (4096, 32, 8, 128)
    quoted("parameters-and-shapes.md", f"${llama3['param_count']:,}$ attention parameters",
           f"${param_count(4096, 32, bias=False):,}$ for full multi-head")


def test_scores_memory():
    gpt2 = preset("gpt2-small")
    assert (gpt2["d_model"], gpt2["n_heads"]) == (768, 12)
    scores = next(t for t in shape_report(768, 12, 1024, 1, dtype_bytes=4)["tensors"] if t["name"] == "scores")
    assert scores["shape"] == [1, 12, 1024, 1024]
    assert scores["bytes"] == 48 * MiB
    quoted("parameters-and-shapes.md", f"= {scores['bytes']:,}$ bytes, 48 MiB")
    quadrupled = shape_report(768, 12, 2048, 1, dtype_bytes=4)["tensors"][7]["bytes"]
    assert quadrupled == 4 * scores["bytes"]


def test_flops_formula_matches_the_core():
    for d_model, h, n, B in ((512, 8, 10, 2), (768, 12, 1024, 1), (64, 1, 7, 3)):
        flops = shape_report(d_model, h, n, B)["flops"]
        assert flops == 8 * B * n * d_model**2 + 4 * B * n**2 * d_model
        assert flops == shape_report(d_model, 1, n, B)["flops"], "independent of h"
    quoted("mechanism.md", "$8 B n d_\\text{model}^2 + 4 B n^2 d_\\text{model}$")


def test_kv_cache_sizes():
    layers = 32  # both models, from their published configurations (references page)

    def per_token(key):
        p = preset(key)
        one_layer = shape_report(p["d_model"], p["n_heads"], 1, 1, n_kv_heads=p["n_kv_heads"],
                                 d_head=p["d_head"], dtype_bytes=2)["kv_cache_bytes"]
        assert one_layer == 2 * p["n_kv_heads"] * p["d_head"] * 2
        return layers * one_layer

    llama2, llama3 = per_token("llama2-7b"), per_token("llama3-8b")
    assert (llama2, llama3) == (512 * 1024, 128 * 1024) and llama2 == 4 * llama3
    assert 4096 * llama2 == 2 * GiB
    quoted("caveats-and-the-block.md", f"${llama2:,}$ bytes, 512 KiB, per token", "2 GiB for a single 4096-token",
           f"${llama3:,}$ bytes, 128 KiB, per", "a quarter of Llama-2-7B's")


def test_shapes_table_matches_the_core():
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in prose("parameters-and-shapes.md").splitlines() if re.match(r"\| .* \| `B×", line)]
    report = shape_report(512, 8, 10, 2)["tensors"]
    by_name, order = {t["name"]: t for t in report}, []
    for _, names, shape, memory in rows:
        for name in re.findall(r"`(\w+)`", names):
            order.append(name)
            t = by_name[name]
            assert t["symbol"] == shape.strip("`"), (name, shape)
            assert t["view"] == ("view" in memory or "in place" in memory), (name, memory)
            assert ("copy" in memory) == (name == "merged"), (name, memory)
    assert order == [t["name"] for t in report]


def test_the_demonstration_backs_the_strides_in_the_prose():
    demo = runpy.run_path(str(DOCS / "snippets" / "split_is_a_view.py"))
    d_model, itemsize = demo["d_model"], demo["q"].itemsize
    assert demo["q_heads"].strides[-1] == itemsize == 8 and demo["q_heads"].strides[2] == d_model * itemsize
    quoted("mechanism.md", "(stride 8 bytes, one float64)", f"({d_model * itemsize} bytes here)")


def test_the_verb_example_counts_right():
    from mha_core.heads import tokenize

    sentence = "The report that the committee members wrote about the rules was"
    tokens = tokenize(sentence)
    assert tokens.index("was") - tokens.index("report") == 9 and tokens[-2] == "rules"
    quoted("why-heads.md", f"> {sentence.replace('was', '**was**')} ...", "*report*, nine tokens back",
           "the nearest noun, *rules*", "the previous token**, *rules*")
