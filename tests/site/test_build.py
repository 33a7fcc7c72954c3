"""The site pipeline's parts (sitebuild/): fetching checked by sha256, the wheel, widget markers and
widget-owned files, the CSP, the MkDocs hooks' errors, the server."""
from __future__ import annotations

import base64
import gzip
import hashlib
import http.client
import io
import json
import logging
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from sitebuild import BuildError, assets, csp, highlight, typeset, widgets
from sitebuild.serving import GITHUB_PAGES_CACHING, make_server
from sitebuild.wheel import build_wheel, build_wheels
from sitevisit.site import serve

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- sha256 checks

def test_store_keeps_only_data_with_the_pinned_hash(tmp_path):
    data = b"pyodide"
    assets.store(data, tmp_path / "ok.bin", hashlib.sha256(data).hexdigest())
    assert (tmp_path / "ok.bin").read_bytes() == data
    with pytest.raises(BuildError, match="does not match the pinned"):
        assets.store(b"tampered", tmp_path / "bad.bin", hashlib.sha256(data).hexdigest())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.bin"]


def test_a_tampered_cached_pyodide_file_stops_the_build(tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(assets.fetch_pyodide(), assets.pyodide_folder(cache))
    folder = assets.fetch_pyodide(cache)  # every file present and intact: nothing is fetched
    with open(folder / "pyodide.asm.wasm", "r+b") as f:
        f.write(b"\0asm-tampered")
    for step in (assets.fetch_pyodide, assets.pyodide_files):  # fetching, and a build taking the files
        with pytest.raises(BuildError) as error:
            step(cache)
        message = str(error.value)
        assert "pyodide.asm.wasm" in message and assets.PYODIDE_FILES["pyodide.asm.wasm"] in message
        assert "was not used" in message


def test_fetching_needs_only_python_s_standard_library():
    """make test fetches while pip installs the requirements: build.py's imports must not need them (-S: no
    site-packages)."""
    done = subprocess.run([sys.executable, "-S", "build.py", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and "fetch" in done.stdout, done.stderr[-2000:]


def test_a_build_without_the_fetched_files_says_how_to_fetch_them(tmp_path):
    for step in (assets.pyodide_files, assets.temml_files):
        with pytest.raises(BuildError, match=r"is missing: fetch it with `make fetch` \(or `python build.py fetch`\)"):
            step(tmp_path)


def test_the_pins_match_the_lock_file_of_pyodide():
    lock = json.loads((assets.fetch_pyodide() / "pyodide-lock.json").read_text())
    numpy = lock["packages"]["numpy"]
    assert lock["info"]["version"] == assets.PYODIDE_VERSION and numpy["depends"] == []
    assert (numpy["file_name"], numpy["sha256"]) == (assets.NUMPY_WHEEL, assets.NUMPY_SHA256)


# ---------------------------------------------------------------- the wheels

def test_the_wheel_is_byte_identical_across_builds_and_importable(tmp_path):
    name, first = build_wheel()
    assert (name, first) == build_wheel()
    assert name == "mha_core-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(io.BytesIO(first)) as z:
        names = z.namelist()
        metadata = z.read("mha_core-0.1.0.dist-info/METADATA").decode()
        assert [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")] == ["Requires-Dist: numpy"]
        record = z.read(next(n for n in names if n.endswith("RECORD"))).decode()
        for line in record.splitlines():
            member, digest, size = line.split(",")
            if digest:
                data = z.read(member)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == f"sha256={expected}" and int(size) == len(data)
    assert "mha_core/fields.py" in names and not any(n.startswith("mha_page/") or "__pycache__" in n for n in names)


def test_the_page_wheel_holds_mha_page_alone_and_imports_beside_mha_core(tmp_path):
    """pip install . gives the numerics; the browser installs mha_page's wheel beside it (the views, the bridge)."""
    wheels = build_wheels()
    assert wheels == build_wheels() and [name for name, _ in wheels] == [
        "mha_core-0.1.0-py3-none-any.whl", "mha_page-0.1.0-py3-none-any.whl"]
    with zipfile.ZipFile(io.BytesIO(wheels[1][1])) as z:
        names = z.namelist()
        metadata = z.read("mha_page-0.1.0.dist-info/METADATA").decode()
    assert [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")] == ["Requires-Dist: mha-core"]
    assert "mha_page/bridge/__init__.py" in names and not any(n.startswith("mha_core/") or "__pycache__" in n
                                                              for n in names)
    for name, data in wheels:
        (tmp_path / name).write_bytes(data)
    paths = [str(tmp_path / name) for name, _ in wheels]
    code = "import json, mha_page.bridge as b; print(json.loads(b.call('check_config', '{\"d_model\": 8, \"n_heads\": 2}'))['ok'])"
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path[:0] = {paths!r}; {code}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "True", out.stderr


# ---------------------------------------------------------------- widget markers

def test_marker_options_are_typed_by_the_widget():
    assert widgets.parse_marker(" shapes d_model=512 n_heads=8 bias=false ") == (
        "shapes", {"d_model": 512, "n_heads": 8, "bias": False})


@pytest.mark.parametrize("marker, message", [
    ("nosuch d_model=1", "unknown widget 'nosuch'"),
    ("shapes d_modle=512", "unknown option 'd_modle=512' for widget 'shapes'"),
    ("shapes d_model", "unknown option 'd_model'"),
    ("shapes d_model=big", "d_model='big' of widget 'shapes' is not a valid int"),
    ("../shapes", "unknown widget"),
    ("  ", "needs a widget name"),
])
def test_bad_markers_fail_with_a_clear_message(marker, message):
    with pytest.raises(BuildError, match=message.replace("(", r"\(")):
        widgets.parse_marker(marker)


def test_markers_become_widgets_outside_code_fences_only():
    page = ("# T\n\n<!-- widget: shapes d_model=64 n_heads=4 -->\n\n```\n<!-- widget: shapes -->\n```\n"
            "Write `<!-- widget: shapes -->` on a line of its own.\n")
    text, names = widgets.expand_markers(page, widgets.template_env(), "page.md")
    assert names == ["shapes"]
    widget = text.split("\n\n")[1]
    assert widget.startswith('<div class="mha-shapes" id="mha-shapes-1" data-mha-widget="shapes"')
    assert "\n\n" not in widget.strip() and 'data-value="16640"' in widget  # 4·64² + 4·64
    assert "```\n<!-- widget: shapes -->\n```" in text
    assert text.count('data-mha-widget="shapes"') == 1


@pytest.mark.parametrize("line, message", [
    ("<!-- widget: shapes n_heads=3 d_model=10 -->", "page.md:2: shapes widget: d_model=10 is not divisible by n_heads=3"),
    ("Text <!-- widget: shapes --> inline", "page.md:2: a widget marker must stand alone"),
])
def test_marker_errors_name_the_page_and_line(line, message):
    with pytest.raises(BuildError, match=message):
        widgets.expand_markers(f"# T\n{line}\n", widgets.template_env(), "page.md")


def test_mkdocs_build_stops_on_a_bad_marker_naming_the_page_and_line(tmp_path, caplog):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import Abort

    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    (docs / "index.md").write_text("# T\n\n<!-- widget: shapes n_heads=3 d_model=10 -->\n", encoding="utf-8")
    config = load_config(str(ROOT / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(tmp_path / "site"))
    with caplog.at_level(logging.ERROR, logger="mkdocs"), pytest.raises(Abort):
        build(config)
    assert "index.md:3: shapes widget: d_model=10 is not divisible by n_heads=3" in caplog.text


def test_templates_escape_what_they_render():
    assert widgets.template_env().from_string("{{ x }}").render(x='<img src=x onerror="1">') == \
        "&lt;img src=x onerror=&#34;1&#34;&gt;"


def test_files_a_widget_makes_are_written_beside_its_scripts(tmp_path, monkeypatch):
    """widgets/NAME/widget.py's assets() -> {name: bytes} become assets/widgets/NAME/name in the site."""
    from sitebuild import hooks

    shutil.copytree(ROOT / "widgets", tmp_path / "widgets")
    (tmp_path / "widgets" / "made").mkdir()
    (tmp_path / "widgets" / "made" / "widget.py").write_text(
        "import mha_core\nOPTIONS = {}\ndef context():\n    return {}\n"
        "def assets():\n    return {'weights.bin': bytes(range(4)), 'about.json': b'{\"n_heads\": 8}'}\n")
    monkeypatch.setattr(widgets, "WIDGETS", tmp_path / "widgets")
    try:
        files = hooks.site_files(pyodide_cdn=True)
    finally:
        widgets.widget_module.cache_clear()  # "made" is no widget of the site
    assert files["assets/widgets/made/weights.bin"] == bytes(range(4))
    assert files["assets/widgets/made/about.json"] == b'{"n_heads": 8}'


# ---------------------------------------------------------------- CSP and serving

def digest(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def test_the_csp_lists_the_hash_of_each_inline_script_that_runs():
    html = ('<script>a=1</script><script id="c" type="application/json">{"x": 1}</script>'
            '<script src="x.js"></script><script>a=1</script><script>b=2</script>')
    assert csp.inline_hashes(html) == f"{digest('a=1')} {digest('b=2')}"


def test_every_page_is_sealed_with_the_sites_hashes_or_for_live_reload_with_inline_scripts_allowed(tmp_path):
    """One policy for the whole site: with instant navigation the first page's stays in force."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{csp.policy(False)}">'
    for live_reload, sources in ((False, f"{digest('a=1')} {digest('b=2')}"), (True, "'unsafe-inline'")):
        (tmp_path / "sub").mkdir(exist_ok=True)
        (tmp_path / "index.html").write_text(meta + "<script>a=1</script>")
        (tmp_path / "sub" / "index.html").write_text(meta + "<script>b=2</script>")
        csp.seal_site(tmp_path, live_reload)
        for page in (tmp_path / "index.html", tmp_path / "sub" / "index.html"):
            assert f"script-src 'self' 'wasm-unsafe-eval' {sources}; style-src" in page.read_text()
    assert "https://cdn.jsdelivr.net" in csp.seal(meta.replace(csp.policy(False), csp.policy(True)), "")


@pytest.fixture
def served(tmp_path):
    for name in ("a.wasm", "b.mjs", "c.js", "d.whl", "e.json", "f.zip"):
        (tmp_path / name).write_bytes(b"x")
    server, url = serve(tmp_path, "/mha/")
    yield url.removesuffix("/mha/")
    server.shutdown()


def test_the_server_sends_the_right_types_under_its_mount_only(served):
    types = {"a.wasm": "application/wasm", "b.mjs": "text/javascript", "c.js": "text/javascript",
             "d.whl": "application/zip", "e.json": "application/json", "f.zip": "application/zip"}
    for name, mime in types.items():
        with urllib.request.urlopen(f"{served}/mha/{name}?v=1") as r:
            assert r.headers["Content-Type"] == mime
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(f"{served}/a.wasm")
    assert error.value.code == 404


def test_the_server_sends_github_pages_caching_only_when_asked(served, tmp_path):
    with urllib.request.urlopen(f"{served}/mha/a.wasm") as r:
        assert r.headers["Cache-Control"] is None
    server, url = serve(tmp_path, "/mha/", caching=GITHUB_PAGES_CACHING)
    try:
        with urllib.request.urlopen(f"{url}a.wasm") as r:
            assert r.headers["Cache-Control"] == "max-age=600" and r.read() == b"x"
    finally:
        server.shutdown()


def test_the_server_compresses_text_as_github_pages_does_only_when_asked(tmp_path):
    """With compress, the text types go gzip'd to a client that accepts gzip, over one kept-alive connection; the
    other types, and every type to a client that does not accept gzip or from a server not asked, go as they are."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text("<p>attention</p>" * 100)
    (tmp_path / "a.wasm").write_bytes(b"\0asm" * 100)
    files = {"/mha/sub/": tmp_path / "sub" / "index.html", "/mha/a.wasm": tmp_path / "a.wasm"}
    for compress in (True, False):
        server, url = serve(tmp_path, "/mha/", compress=compress)
        try:
            connection = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port)
            for path, accepts in (("/mha/sub/", True), ("/mha/a.wasm", True), ("/mha/sub/", False)):
                connection.request("GET", path, headers={"Accept-Encoding": "gzip"} if accepts else {})
                response = connection.getresponse()
                body = response.read()
                zipped = compress and accepts and path.endswith("/")
                assert response.headers["Content-Encoding"] == ("gzip" if zipped else None), (compress, path)
                assert (gzip.decompress(body) if zipped else body) == files[path].read_bytes()
                assert response.version == (11 if compress else 10)
                if not compress:  # HTTP/1.0: the server closes the connection after each response
                    connection = http.client.HTTPConnection(urlsplit(url).hostname, urlsplit(url).port)
        finally:
            server.shutdown()


def test_the_server_ignores_a_client_that_hangs_up_and_reports_other_errors(capsys):
    server = make_server(ROOT, 0)
    try:
        for error, reported in ((ConnectionResetError(104, "reset by peer"), False), (BrokenPipeError(), False),
                                (ValueError("a bug"), True)):
            try:
                raise error
            except Exception:
                server.handle_error(None, ("127.0.0.1", 1))
            assert (type(error).__name__ in capsys.readouterr().err) == reported
    finally:
        server.server_close()


# ---------------------------------------------------------------- the code blocks

def test_the_code_blocks_lose_only_the_spans_that_draw_as_plain_text_and_carry_their_number_of_lines():
    block = ('<div class="highlight"><pre><span></span><code><span class="k">def</span><span class="w"> </span>'
             '<span class="nf">f</span><span class="p">(</span><span class="n">x</span><span class="p">):</span>\n'
             '<span class="hll">    <span class="k">return</span> <span class="n">x</span> <span class="ow">is</span> '
             '<span class="kc">None</span>\n</span></code></pre></div>')
    outside = '<p><span class="n">n</span></p>'
    done = highlight.code_blocks(outside + block)
    assert done == outside + block.replace('<span class="w"> </span>', " ").replace('<span class="n">x</span>', "x").replace(
        '<span class="kc">None</span>', "None").replace('class="highlight">', 'class="highlight" style="--mha-lines: 2">')
    assert re.sub(r"<[^>]+>", "", done) == re.sub(r"<[^>]+>", "", outside + block)  # the same text


# ---------------------------------------------------------------- the math, typeset at build time

def test_formulas_are_typeset_with_their_markup_unescaped_and_a_bad_one_stops_the_build():
    page = ('<p><span class="arithmatex">\\(a &lt; b\\)</span></p>'
            '<div class="arithmatex">\\[\n\\begin{aligned} x &amp;= 1 \\end{aligned}\n\\]</div>')
    done = typeset.typeset(page, assets.temml_module(), "page.md")
    assert done.startswith('<p><span class="arithmatex"><math><mrow><mi>a</mi><mo>&lt;</mo><mi>b</mi>')
    assert '<div class="arithmatex"><math display="block"' in done and "<mtable" in done
    assert "<annotation" not in done and "<semantics" not in done  # the TeX again, which no browser shows
    assert "\\(" not in done and "\\[" not in done
    assert typeset.typeset("<p>no math</p>", assets.temml_module(), "page.md") == "<p>no math</p>"
    with pytest.raises(BuildError, match=r"page\.md: typesetting its formulas failed:\n\\frac\{1\}: "):
        typeset.typeset('<span class="arithmatex">\\(\\frac{1}\\)</span>', assets.temml_module(), "page.md")


def test_formulas_typeset_once_are_kept_and_a_changed_one_is_typeset_again(tmp_path, monkeypatch):
    formulas, temml = [{"tex": "x^2", "display": False}], assets.temml_module()
    first = typeset.mathml(formulas, temml, "page.md", tmp_path)
    assert first[0].startswith("<math>") and len(list((tmp_path / "typeset").iterdir())) == 1

    def no_node(*args, **kwargs):
        raise AssertionError("Node ran for formulas already typeset")
    monkeypatch.setattr(typeset, "node", no_node)
    assert typeset.mathml(formulas, temml, "page.md", tmp_path) == first
    with pytest.raises(AssertionError, match="Node ran"):
        typeset.mathml([{"tex": "x^3", "display": False}], temml, "page.md", tmp_path)


def test_the_search_index_shows_formulas_as_text_with_sub_and_sup(tmp_path):
    """Search previews show the index's text: each formula there becomes text with the <sub> and <sup> that
    Material's search keeps, its markup escaped, in titles too; code, and the rest of the index, left as written."""
    index = tmp_path / "search_index.json"
    docs = [{"location": "a/", "title": "The matrix \\(W_E\\)",
             "text": "<p>Rows of \\(W^Q_i\\), \\(a &lt; b\\)</p>"},
            {"location": "b/", "title": "Scores",
             "text": "\\[ \\frac{QK^\\top}{\\sqrt{d_k}}, \\underbrace{x}_{W^O} \\]"},
            {"location": "c/", "title": "No math",
             "text": "<p>(a) [b] \\ c</p><pre><code>re.compile(r'\\(\\w\\)')</code></pre>"}]
    index.write_text(json.dumps({"config": {"lang": ["en"]}, "docs": docs}), encoding="utf-8")
    typeset.search_previews(index, assets.temml_module())
    done = json.loads(index.read_text(encoding="utf-8"))
    assert done["config"] == {"lang": ["en"]}
    assert [d["title"] for d in done["docs"]] == ["The matrix W<sub>E</sub>", "Scores", "No math"]
    assert done["docs"][0]["text"] == "<p>Rows of W<sub>i</sub><sup>Q</sup>, a&lt;b</p>"
    assert done["docs"][1]["text"] == "(QK<sup>⊤</sup>)/√(d<sub>k</sub>),x<sub>W<sup>O</sup></sub>"
    assert done["docs"][2] == docs[2]
