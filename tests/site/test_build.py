"""build.py's parts: fetching checked by sha256, the wheel, widget markers, the CSP, the server."""
from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pytest

import build
from build import BuildError

from tests.helpers import serve

ROOT = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- sha256 checks

def test_store_keeps_only_data_with_the_pinned_hash(tmp_path):
    data = b"pyodide"
    build.store(data, tmp_path / "ok.bin", hashlib.sha256(data).hexdigest())
    assert (tmp_path / "ok.bin").read_bytes() == data
    with pytest.raises(BuildError, match="does not match the pinned"):
        build.store(b"tampered", tmp_path / "bad.bin", hashlib.sha256(data).hexdigest())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.bin"]


def test_a_tampered_cached_pyodide_file_stops_the_build(tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(build.fetch_pyodide().parent, cache, ignore=shutil.ignore_patterns("katex-*"))
    folder = build.fetch_pyodide(cache)  # every file present and intact: nothing is fetched
    wasm = folder / "pyodide.asm.wasm"
    with open(wasm, "r+b") as f:
        f.write(b"\0asm-tampered")
    with pytest.raises(BuildError) as error:
        build.fetch_pyodide(cache)
    message = str(error.value)
    assert "pyodide.asm.wasm" in message and build.PYODIDE_FILES["pyodide.asm.wasm"] in message
    assert "was not used" in message


def test_the_pins_match_the_lock_file_of_pyodide():
    lock = json.loads((build.fetch_pyodide() / "pyodide-lock.json").read_text())
    numpy = lock["packages"]["numpy"]
    assert lock["info"]["version"] == build.PYODIDE_VERSION and numpy["depends"] == []
    assert (numpy["file_name"], numpy["sha256"]) == (build.NUMPY_WHEEL, build.NUMPY_SHA256)


# ---------------------------------------------------------------- the mha_core wheel

def test_the_wheel_is_byte_identical_across_builds_and_importable(tmp_path):
    first = build.build_wheel(ROOT / "mha_core", tmp_path / "a")
    second = build.build_wheel(ROOT / "mha_core", tmp_path / "b")
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
    with zipfile.ZipFile(first) as z:
        names = z.namelist()
        record = z.read(next(n for n in names if n.endswith("RECORD"))).decode()
        for line in record.splitlines():
            name, digest, size = line.split(",")
            if digest:
                data = z.read(name)
                expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert digest == f"sha256={expected}" and int(size) == len(data)
    assert "mha_core/bridge.py" in names and not any("__pycache__" in n for n in names)
    code = "import json, mha_core.bridge as b; print(json.loads(b.call('check_config', '{\"d_model\": 8, \"n_heads\": 2}'))['ok'])"
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path[:0] = [{str(first)!r}]; {code}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout.strip() == "True", out.stderr


# ---------------------------------------------------------------- widget markers

def test_marker_options_are_typed_by_the_widget():
    assert build.parse_marker(" shapes d_model=512 n_heads=8 bias=false ") == (
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
        build.parse_marker(marker)


def test_markers_become_widgets_outside_code_fences_only():
    page = ("# T\n\n<!-- widget: shapes d_model=64 n_heads=4 -->\n\n```\n<!-- widget: shapes -->\n```\n"
            "Write `<!-- widget: shapes -->` on a line of its own.\n")
    text, used = build.expand_markers(page, build.template_env(), "page.md")
    assert used == ["shapes"]
    widget = text.split("\n\n")[1]
    assert widget.startswith('<div class="mha-shapes" id="mha-shapes-1" data-mha-widget="shapes"')
    assert "\n\n" not in widget.strip() and 'data-value="16640"' in widget  # 4·64² + 4·64
    assert "```\n<!-- widget: shapes -->\n```" in text


@pytest.mark.parametrize("line, message", [
    ("<!-- widget: shapes n_heads=3 d_model=10 -->", "page.md:2: shapes widget: d_model=10 is not divisible by n_heads=3"),
    ("Text <!-- widget: shapes --> inline", "page.md:2: a widget marker must stand alone"),
])
def test_marker_errors_name_the_page_and_line(line, message):
    with pytest.raises(BuildError, match=message):
        build.expand_markers(f"# T\n{line}\n", build.template_env(), "page.md")


def test_templates_escape_what_they_render():
    assert build.template_env().from_string("{{ x }}").render(x='<img src=x onerror="1">') == \
        "&lt;img src=x onerror=&#34;1&#34;&gt;"


# ---------------------------------------------------------------- CSP and serving

def test_the_csp_lists_the_hash_of_each_inline_script_that_runs():
    html = ('<script>a=1</script><script id="c" type="application/json">{"x": 1}</script>'
            '<script src="x.js"></script><script>a=1</script><script>b=2</script>')
    digest = lambda s: "'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'"  # noqa: E731
    assert build.inline_hashes([html]) == f"{digest('a=1')} {digest('b=2')}"


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
