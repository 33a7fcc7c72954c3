"""The explainer in docs/: every page builds strictly, links and headings hold, figures carry text,
every code snippet it shows runs, its math parses, and each number it quotes that mha_core can compute
is the number mha_core computes."""

from __future__ import annotations

import ast
import html
import json
import re
import runpy
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import numpy as np
import pytest

import mha_core
from mha_core import param_count, shape_report
from mha_page.views.shapes import shapes_display
from tests.helpers import calculator

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"\s*$', re.M)
SECTION = "# --8<-- [{}:{}]"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
MiB, GiB = 2**20, 2**30


@pytest.fixture(scope="module")
def site(cdn_site) -> Path:
    """The site as build.py builds it (widgets rendered, mkdocs --strict), without Pyodide's files."""
    return cdn_site


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
        elif tag == "svg":  # hidden: inside an element hidden from assistive technology
            self.svgs.append({"attrs": a, "title": "", "hidden": any(h for _, _, h in self.stack)})
        elif tag == "title" and any(t == "svg" for t, _, _ in self.stack):
            self.svg_title = self.svgs[-1]
        if tag not in self.VOID:
            skip = tag in self.SKIP or "arithmatex" in (a.get("class") or "").split()
            self.stack.append((tag, skip, a.get("aria-hidden") == "true"))

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
        if not any(skip for _, skip, _ in self.stack):
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
    markers = [
        ("parameters-and-shapes.md", "<!-- widget: shapes d_model=512 n_heads=8 seq_len=10 batch=2 -->", "shapes"),
        ("what-heads-learn.md", "<!-- widget: heads -->", "heads"),
        ("mechanism.md", "<!-- widget: worked -->", "worked"),
        ("mechanism.md", "<!-- widget: memory -->", "memory"),
        ("why-heads.md", "<!-- widget: one_vs_many -->", "one-vs-many"),
        ("what-heads-learn.md", "<!-- widget: circuits -->", "circuits"),
        ("parameters-and-shapes.md", "<!-- widget: tiling -->", "tiling"),
    ]
    for page in PAGES:
        lines = [line.strip() for line in (DOCS / page).read_text(encoding="utf-8").splitlines()]
        for marked_page, marker, name in markers:
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
            if a.get("aria-hidden") == "true" or svg["hidden"]:
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
        symbol = shape.replace(" each", "").replace(" ", "")
        for name in label.replace(" (the pattern)", "").split(", "):
            drawn.append(name)
            assert report[name]["symbol"] == symbol, (name, symbol)
    assert drawn == list(report)
    assert "one fused matmul" in svg and "d_head" not in svg, "the text's d_k and its one fused projection"
    views = re.findall(r'class="op (view|copy)"', svg)
    assert views == ["view", "copy"]
    assert report["q_heads"]["view"] and not report["merged"]["view"]


def test_math_is_caught_by_arithmatex(pages):
    """A `$` left in the prose means math that was not recognised (and would show as source)."""
    for page in PAGES:
        text = "".join(pages[page]["art"].prose)
        assert "$" not in text, f"{page}: unrendered math near {text[max(0, text.find('$') - 60):text.find('$') + 60]!r}"


def test_every_formula_is_typeset_at_build_time(pages):
    """Each arithmatex element holds MathML (the browser lays it out and reads it to screen readers), none its TeX
    source, and no page loads a script to typeset."""
    formulas = 0
    for page in PAGES:
        text = pages[page]["html"]
        inline = text.count('<span class="arithmatex"><math>')
        display = text.count('<div class="arithmatex"><math display="block"')
        assert inline + display == text.count('class="arithmatex"') == text.count("<math"), page
        assert "\\(" not in text and "\\[" not in text and "<merror" not in text, page
        assert "temml.mjs" not in text and "katex" not in text and "auto-render" not in text, page
        formulas += inline + display
    assert formulas > 300


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
        called = {node.func.id for node in ast.walk(body[-1]) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        helpers = [name for name in names[:-1] if not name.startswith("_") and name not in called]
        assert not helpers, f"{path}:{section} shows public {helpers}, which {section} does not call"


@pytest.mark.parametrize("demo", sorted({path for _, path, _ in snippets() if path.startswith("docs/")
                                         and path.endswith(".py")}))
def test_demonstrations_run(demo):
    """Each demonstration shown in the docs runs as written; its asserts are the facts the page states."""
    runpy.run_path(str(ROOT / demo), run_name="__main__")


# ---------------------------------------------------------------- the numbers the pages quote

def preset(key: str) -> dict:
    return next(p for p in mha_core.presets() if p["key"] == key)


def quoted(page: str, *texts: str) -> None:
    """Each computed number in texts is stated on page, as written there (line breaks as spaces)."""
    body = " ".join(prose(page).split())
    for text in texts:
        assert " ".join(text.split()) in body, f"{page} should say {text!r}"


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
    assert gemma["d_model"] % gemma["n_heads"] == 0, "Gemma's width divides by its heads: not the point"
    assert gemma["n_heads"] * gemma["d_head"] != gemma["d_model"], "the point: h·d_k is not d_model"
    quoted("parameters-and-shapes.md", "$d_\\text{model} = 3072$ does divide by its 16 heads, giving "
           f"{3072 // 16}", "sets $d_k = 256$", f"$16 \\cdot 256 = {16 * 256}$", f"= {gemma_count:,}$ parameters")

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


def test_the_tiles_save_what_the_page_says():
    """The tiling section's numbers: its question's online softmax over sat's row, fed a key at a time, and one
    GPT-2 small head's counts (n = 1024, d_k = 64) in tiles of 128 and of 64, with and without the mask."""
    scores, values = [0.5, 2.0, 1.0], np.eye(3)  # sat's row on the first page; each key's value marks it
    m, l, o = np.full(1, -np.inf), np.zeros(1), np.zeros((1, 3))
    sums = []
    for j, s in enumerate(scores):
        factor = float(np.exp(m[0] - max(m[0], s)))
        m, l, o = mha_core.online_softmax_update(m, l, o, np.array([[s]]), values[j:j + 1])
        sums.append((float(m[0]), round(float(l[0]), 3), round(factor, 3)))
    assert sums == [(0.5, 1.0, 0.0), (2.0, 1.223, 0.223), (2.0, 1.591, 1.0)]
    cat = float(o[0, 1] / l[0])
    assert round(cat, 3) == round(float(mha_core.softmax(np.array(scores))[1]), 3) == 0.629
    quoted("parameters-and-shapes.md", "$m = 0.5$, $\\ell = 1$", "multiplied by $e^{0.5 - 2} = 0.223$",
           "$\\ell = 0.223 + 1 = 1.223$", "$\\ell = 1.223 + e^{1 - 2} = 1.591$", "$1 / 1.591 = 0.629$")
    n, d = 1024, 64
    assert (preset("gpt2-small")["d_model"] // preset("gpt2-small")["n_heads"]) == d
    c, small = mha_core.flash_counts(n, n, d, d, 128, 128), mha_core.flash_counts(n, n, d, d, 64, 64)
    causal = mha_core.flash_counts(n, n, d, d, 128, 128, causal=True)
    moved = {way: c[way]["reads"] + c[way]["writes"] for way in ("ordinary", "tiled")}
    assert moved["ordinary"] == 4 * n * d + 4 * n * n and c["tiled"]["reads"] == n * d + 2 * (n // 128) * n * d
    quoted("parameters-and-shapes.md", f"holds ${c['held']:,}$ scores at a time instead of ${c['full']:,}$",
           f"moves ${moved['tiled']:,}$ numbers instead of ${moved['ordinary']:,}$",
           f"it skips {causal['skipped']} of its {causal['tiles'] + causal['skipped']} tiles",
           f"The scores held fall four times, to ${small['held']:,}$",
           f"The traffic rises to ${small['tiled']['reads'] + small['tiled']['writes']:,}$",
           f"{n // 64} query blocks instead of {n // 128}")
    assert small["held"] * 4 == c["held"]


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
            usual = memory.split(" (")[0]  # the case of the table's sizes; exceptions in brackets
            assert t["view"] == ("view" in usual or "in place" in usual), (name, memory)
            assert ("copy" in usual) == (name == "merged"), (name, memory)
    assert order == [t["name"] for t in report]


def test_the_demonstration_backs_the_strides_in_the_prose():
    demo = runpy.run_path(str(DOCS / "snippets" / "split_is_a_view.py"))
    d_model, itemsize = demo["d_model"], demo["q"].itemsize
    assert demo["q_heads"].strides[-1] == itemsize == 8 and demo["q_heads"].strides[2] == d_model * itemsize
    quoted("mechanism.md", "(stride 8 bytes, one float64)", f"({d_model * itemsize} bytes here)")
    # mha_core's own layer: q is a slice of the fused projection, whose rows are 3·d_model wide
    steps = mha_core.attention.attention_steps(demo["x"], demo["W_Q"], demo["W_K"], demo["W_V"], demo["W_Q"],
                                               demo["h"], None, None, False)
    fused_row = 3 * d_model * itemsize
    assert steps["q"].strides[1] == steps["q_heads"].strides[2] == fused_row == 12_288
    assert np.may_share_memory(steps["q"], steps["k"]) and not steps["q"].flags.c_contiguous, "slices of one array"
    quoted("mechanism.md", "rows, which are $3 d_\\text{model}$", f"the step is {fused_row:,} bytes")


def test_the_verb_example_counts_right():
    from mha_core.heads import tokenize

    sentence = "The report that the committee members wrote about the rules was"
    tokens = tokenize(sentence)
    assert tokens.index("was") - tokens.index("report") == 9 and tokens[-2] == "rules"
    quoted("why-heads.md", f"> {sentence.replace('was', '**was**')} ...", "*report*, nine tokens back",
           "the nearest noun, *rules*", "the previous token**, *rules*")


def test_the_merge_is_a_view_only_when_h_or_n_is_1():
    def merged_is_view(h, n, B=2):
        return next(t for t in shape_report(512, h, n, B)["tensors"] if t["name"] == "merged")["view"]

    assert not merged_is_view(8, 10) and not merged_is_view(8, 10, B=1)
    assert merged_is_view(1, 10) and merged_is_view(8, 1)


def test_an_explicit_head_width_lifts_the_divisibility_rule():
    assert not mha_core.check_config(512, 6)["ok"]
    assert mha_core.check_config(512, 6, d_head=64)["ok"]
    assert mha_core.AttentionConfig(512, 6, d_head=64).d_q == 384
    quoted("parameters-and-shapes.md", "$d_\\text{model} = 512$ and $h = 6$", "say $d_k = 64$",
           "6 heads of 64 make 384 query columns")


def test_the_kv_cache_follows_the_key_width_not_the_head_count():
    caches = {h: shape_report(512, h, 10, 2, dtype_bytes=4)["kv_cache_bytes"] for h in (1, 8, 16, 64)}
    assert set(caches.values()) == {81_920}
    assert shape_report(512, 8, 10, 2, n_kv_heads=2)["kv_cache_bytes"] == 81_920 // 4
    shown = {shapes_display(shape_report(512, h, 10, 2, dtype_bytes=4))["totals"]["kv_cache"]["text"] for h in (1, 8, 16, 64)}
    assert shown == {"80.0 KiB"}, "what the calculator shows"
    quoted("caveats-and-the-block.md", "$d_\\text{model} = 512$, $B = 2$, $n = 10$ in float32",
           "80.0 KiB (81,920 bytes) per layer for $h$ = 1, 8, 16 or 64")


def test_the_calculator_is_one_layer_and_a_model_has_many():
    p = preset("llama2-7b")
    layers = p.get("n_layers", 32)  # 32, from the published configuration (references page)
    assert layers == 32
    per_layer = shape_report(p["d_model"], p["n_heads"], 4096, 1, n_kv_heads=p["n_kv_heads"],
                             d_head=p["d_head"], dtype_bytes=2)["kv_cache_bytes"]
    assert per_layer == 64 * MiB and layers * per_layer == 2 * GiB
    # The caveats' question links the calculator set to Llama 2 7B and says what it shows.
    link = re.search(r"\]\(parameters-and-shapes\.md\?([^)#]+)#the-shape-calculator\)", prose("caveats-and-the-block.md"))
    args = calculator(link.group(1))
    totals = shapes_display(shape_report(**args))["totals"]
    assert (totals["kv_cache"]["text"], totals["kv_cache_model"]["text"]) == ("64.0 MiB", "2.00 GiB")
    assert {k: args[k] for k in ("d_model", "n_heads", "n_layers")} == {"d_model": p["d_model"], "n_heads": p["n_heads"], "n_layers": layers}
    quoted("caveats-and-the-block.md", "shows 64.0 MiB for one layer and 2.00 GiB for the whole model of 32 layers")


def test_the_averaged_head_counts_right():
    """'Four heads' spanning 'two layers', three of them in layer 0, as the core builds them."""
    from mha_core.heads import HEAD_KINDS, HEAD_LAYER

    heads = [kind for kind in HEAD_KINDS if HEAD_LAYER[kind] is not None]
    layers = sorted({HEAD_LAYER[kind] for kind in heads})
    words = {3: "three", 4: "four"}
    assert len(heads) == 4 and layers == [0, 1]
    in_layer0 = sum(HEAD_LAYER[kind] == 0 for kind in heads)
    quoted("what-heads-learn.md", f"mean of the {words[len(heads)]} heads' patterns",
           f"The {words[len(heads)]} heads span two layers, {words[in_layer0]} reading the embeddings",
           "diluted to a quarter")
    # The page's claim about dilution: where all four look at different keys, each keeps a quarter.
    patterns = mha_core.head_patterns("a b c d e f g a b c d e f g")
    mean = np.mean([patterns["heads"][kind] for kind in heads], axis=0)
    assert np.allclose(mean, patterns["heads"]["averaged"])


def test_try_this_links_set_the_calculator_and_their_claims_hold():
    body = prose("parameters-and-shapes.md")
    links = {text: calculator(query) for text, query in
             re.findall(r"\[([^\]]+)\]\(\?([^)#]+)#the-shape-calculator\)", body)}
    assert len(links) == 5, links

    def report(args):
        return shape_report(**args)

    def tensor(r, name):
        return next(t for t in r["tensors"] if t["name"] == name)

    base = {"d_model": 512, "n_heads": 8, "seq_len": 10, "batch": 2}
    one_head, doubled, many_heads, llama2, llama3 = (report(q) for q in links.values())
    assert tensor(one_head, "merged")["view"] and not tensor(report(base), "merged")["view"]
    assert tensor(doubled, "scores")["bytes"] == 4 * tensor(report(base), "scores")["bytes"]
    assert tensor(doubled, "q")["bytes"] == 2 * tensor(report(base), "q")["bytes"]
    for key in ("kv_cache_bytes", "flops"):
        assert many_heads[key] == report(base)[key]
    assert many_heads["params"] == report(base)["params"]
    assert tensor(many_heads, "scores")["bytes"] == 8 * tensor(report(base), "scores")["bytes"]
    for key, r, text in (("llama2-7b", llama2, "Llama 2 7B"), ("llama3-8b", llama3, "Llama 3 8B")):
        p = preset(key)  # every field the preset has, its layers too (as tests/core/test_presets.py publishes them)
        assert links[text]["n_layers"] == p["kv_layers"] and links[text]["seq_len"] == 4096
        assert {k: r["config"][k] for k in ("d_model", "n_heads", "n_kv_heads", "d_head", "bias")} == \
            {k: p[k] for k in ("d_model", "n_heads", "n_kv_heads", "d_head", "bias")}
    assert llama3["kv_cache_bytes"] * 4 == llama2["kv_cache_bytes"]


def test_the_grouping_diagram_is_the_cores_grouping():
    """Each line of the diagram joins a query head to the key/value head mha_core gives it."""
    svg = (DOCS / "assets" / "gqa.svg").read_text(encoding="utf-8")
    assert not re.search(r"#[0-9a-fA-F]{3,6}\b|rgb\(|hsl\(", svg), "colours come from currentColor and the CSS"
    panels = re.findall(r'<g class="panel" data-n-kv-heads="(\d+)">(.*?)</g>', svg, re.S)
    assert [int(h_kv) for h_kv, _ in panels] == [8, 2, 1]
    h, d_k, d_model, n = 8, 2, 16, 5
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, d_model))
    W_Q, W_O = rng.standard_normal((d_model, h * d_k)), np.eye(h * d_k, d_model)
    for h_kv, body in panels:
        h_kv = int(h_kv)
        lines = sorted((int(q), int(kv)) for q, kv in re.findall(r'data-query="(\d+)" data-kv="(\d+)"', body))
        assert [q for q, _ in lines] == list(range(h))
        W_K, W_V = rng.standard_normal((2, d_model, h_kv * d_k))
        _, weights = mha_core.multi_head_attention(x, W_Q, W_K, W_V, W_O, h)  # [h, n, n]
        k_heads = mha_core.split_heads(x @ W_K, h_kv)  # [h_kv, n, d_k]
        q_heads = mha_core.split_heads(x @ W_Q, h)
        for q, kv in lines:
            _, alone = mha_core.scaled_dot_product_attention(q_heads[q], k_heads[kv], k_heads[kv])
            assert np.allclose(weights[q], alone), (h_kv, q, kv)


# ---------------------------------------------------------------- teaching: titles, paragraphs, symbols

def nav() -> list[tuple[str, str]]:
    from mkdocs.config import load_config
    entries = load_config(str(ROOT / "mkdocs.yml"))["nav"]
    return [next(iter(entry.items())) for entry in entries]


def test_nav_labels_are_page_titles():
    for label, page in nav():
        title = re.search(r"^# (.+)$", (DOCS / page).read_text(encoding="utf-8"), re.M).group(1)
        assert label == title, (page, label, title)


MAX_WORDS = 90


def paragraphs(page: str) -> list[str]:
    """The page's prose paragraphs (list items count as paragraphs); code, math, tables and HTML left out."""
    out, fenced, math = [], False, False
    blocks = re.split(r"\n\s*\n", (DOCS / page).read_text(encoding="utf-8"))
    for block in blocks:
        stripped = block.strip()
        if stripped.startswith("```") or fenced:
            fenced = (stripped.count("```") % 2 == 1) != fenced
            continue
        if stripped.startswith("$$") or math:
            math = (stripped.count("$$") % 2 == 1) != math
            continue
        if not stripped or stripped[0] in "#|<" or stripped.startswith("--8<--"):
            continue
        out.extend(item for item in re.split(r"\n(?=- |\d+\. )", stripped) if item.strip())
    return out


def words(paragraph: str) -> int:
    paragraph = re.sub(r"<!--\s*fact:\s*\S+?\s*-->", "N", paragraph)  # a fact marker is one number on the page
    return len(re.sub(r"\$[^$]*\$", "M", re.sub(r"\]\([^)]*\)", "]", paragraph)).split())


@pytest.mark.parametrize("page", PAGES)
def test_no_paragraph_is_too_long(page):
    found = paragraphs(page)
    assert found
    long = [(words(p), p[:60]) for p in found if words(p) > MAX_WORDS]
    assert not long, f"{page}: paragraphs over {MAX_WORDS} words: {long}"


def test_paragraph_counting_can_fail():
    assert words(" ".join(["word"] * (MAX_WORDS + 1))) > MAX_WORDS
    assert words("a $x + y = z$ b [link](page.md#anchor)") == 4
    assert words("the loss is <!-- fact: first_loss_peak --> nats") == 5


# symbol -> (how the text writes it, where it is defined): the definition must come before every use,
# reading the pages in the nav's order.
SYMBOLS = {
    "q": (r"(?<![\w\\])q(?=_|\b)(?!\.)", r"A \*\*query\*\*\{#query\} \$q_i\$"),
    "k": (r"(?<![\w\\])k(?=_j|_i|\b)(?![.\-])", r"A \*\*key\*\*\{#key\} \$k_j\$"),
    "v": (r"(?<![\w\\])v(?=_j|_i|\b)(?![.\-])", r"A \*\*value\*\*\{#value\} \$v_j\$"),
    "d_model": (r"d_\\text\{model\}|d_model", r"a vector of \$d_\\text\{model\}\$ numbers, the model's width"),
    "W^O": (r"W\^O|W_O", r"an \*\*output projection\*\* \$W\^O\$"),
    "d_k": (r"d_k|d_head", r"Here \$W\^Q\$ and \$W\^K\$ are\n\$d_\\text\{model\} \\times d_k\$"),
    "h_kv": (r"h_\{kv\}|h_kv|n_kv_heads", r"gives keys and values only\n\$h_\{kv\}\$ heads"),
    "B": (r"(?<![\w\\])B(?=\s*(?:,|=|\\times|n\b|\$|\\cdot))", r"over a batch of \$B\$ sequences of \$n\$ tokens\s+costs"),
}


def uses(text: str, pattern: str) -> list[int]:
    """Where pattern occurs in text's math, code and prose (link targets and HTML ids left out)."""
    text = re.sub(r"\]\([^)]*\)|id=\"[^\"]*\"", lambda m: " " * len(m.group()), text)
    return [m.start() for m in re.finditer(pattern, text)]


@pytest.mark.parametrize("symbol", SYMBOLS)
def test_symbols_are_defined_before_they_are_used(symbol):
    use, definition = SYMBOLS[symbol]
    pages = [page for _, page in nav()]
    texts = [(DOCS / page).read_text(encoding="utf-8") for page in pages]
    text = "\n".join(texts)
    starts = [sum(len(t) + 1 for t in texts[:i]) for i in range(len(texts))]
    defined = [m.start() for m in re.finditer(definition, text)]
    assert len(defined) == 1, f"{symbol}: one definition, found {len(defined)}"
    first = min(uses(text, use))
    page = pages[max(i for i, start in enumerate(starts) if start <= first)]
    assert first >= defined[0], f"{symbol} is used on {page} before its definition: {text[first - 80:first + 40]!r}"


def test_the_symbol_check_can_fail():
    use, _ = SYMBOLS["h_kv"]
    assert uses("with $h_{kv}$ heads", use) and uses("`n_kv_heads`", use)
    assert not uses("[GQA](mechanism.md#h_kv)", use)
    assert uses("$q_i \\cdot k_j$", SYMBOLS["q"][0]) and uses("$q_i \\cdot k_j$", SYMBOLS["k"][0])
    assert not uses("quick kettle", SYMBOLS["q"][0]) and not uses("\\qquad", SYMBOLS["q"][0])
    assert uses("$B \\times n$", SYMBOLS["B"][0]) and uses("`[B, n, d_model]`", SYMBOLS["B"][0])
    assert not uses("the token $[B]$ and Bob", SYMBOLS["B"][0])


def test_the_memory_section_quotes_numpy():
    from mha_core.memory import memory_steps

    right, wrong = memory_steps(3, 2), memory_steps(3, 2, wrong=True)
    reshaped = next(s for s in right["steps"] if s["name"] == "reshape")
    assert reshaped["strides_bytes"] == [64, 32, 8] and reshaped["strides_elements"] == [8, 4, 1]
    assert right["itemsize"] == 8 and right["d_model"] == 8 and right["d_k"] == 4
    quoted("mechanism.md", "$n = 3$ tokens with $d_\\text{model} = 8$ and $h = 2$ heads of $d_k = 4$",
           "strides (64, 32, 8) in bytes, has strides (8, 4, 1) in elements")
    head_1 = wrong["steps"][1]["read"][:3 * 4]  # the wrong "head 1": its n rows of d_k numbers
    pieces = list(dict.fromkeys((c["token"] + 1, c["head"]) for c in head_1))
    assert pieces == [(1, 0), (1, 1), (2, 0)]  # token 1's two halves, token 2's first half
    quoted("mechanism.md", '"head 1" gets both halves of token 1 and the first half of token 2')
    patterns = np.array(right["patterns"]["right"])
    assert patterns[0, 2, 1] > 0.9 and patterns[1, 2, 2] > 0.9  # previous token; the token itself
    quoted("mechanism.md", "head 1\nattends to the previous token and head 2 to the token itself")


def test_the_worked_example_is_the_size_the_page_says():
    from mha_core.worked import D_HEAD, D_MODEL, N_HEADS, N_TOKENS, worked_example

    words = {2: "two", 3: "Three"}
    m = worked_example()["matrices"]
    assert (len(m["X"]["values"]), len(m["X"]["values"][0]), len(m["W_O"]["values"]) // len(m["z_0"]["values"][0])) \
        == (N_TOKENS, D_MODEL, N_HEADS)
    quoted("mechanism.md", f"{words[N_TOKENS]} tokens, $d_\\text{{model}} = {D_MODEL}$ and $h = {N_HEADS}$ heads of "
           f"$d_k = {D_HEAD}$")
