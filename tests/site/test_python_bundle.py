"""The Python the browser downloads (sitebuild/python_bundle.py): trimmed of what the site never imports, yet
holding everything mha_core imports; archives stored, then gzipped as a whole; reproducible."""
from __future__ import annotations

import ast
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sitebuild import assets, python_bundle

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def trimmed() -> dict[str, bytes]:
    return python_bundle.trimmed(assets.fetch_pyodide(), assets.NUMPY_WHEEL)


def stdlib_imports(package: Path) -> set[str]:
    """The top-level standard-library modules package's sources import, anywhere in them (lazy imports too),
    and every module importing the package loads (the imports of those imports)."""
    loaded = subprocess.run([sys.executable, "-c", f"import sys, {package.name}; print(*sys.modules)"],
                            cwd=package.parent, capture_output=True, text=True, check=True).stdout.split()
    names = {name.split(".")[0] for name in loaded}
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names.add(node.module.split(".")[0])
    return names & sys.stdlib_module_names


def top_level(archive: zipfile.ZipFile) -> set[str]:
    return {name.split("/")[0].removesuffix(".py") for name in archive.namelist()}


def test_the_trimmed_standard_library_holds_every_module_mha_core_imports(trimmed):
    stdlib = zipfile.ZipFile(io.BytesIO(trimmed[python_bundle.STDLIB]))
    full = top_level(zipfile.ZipFile(assets.fetch_pyodide() / python_bundle.STDLIB))
    missing = {m for m in stdlib_imports(ROOT / "mha_core") if m in full} - top_level(stdlib)  # the rest is built in
    assert not missing, f"add {sorted(missing)} to python_bundle.STDLIB_KEEP"
    assert {"json", "inspect", "dataclasses", "encodings", "asyncio"} <= top_level(stdlib)
    assert not top_level(stdlib) & {"unittest", "xml", "pydoc", "multiprocessing"}
    assert all(info.compress_type == zipfile.ZIP_STORED for info in stdlib.infolist())


def test_numpy_keeps_what_import_numpy_loads_and_its_lock_entry_points_at_it(trimmed):
    wheel = trimmed[assets.NUMPY_WHEEL]
    names = zipfile.ZipFile(io.BytesIO(wheel)).namelist()
    for kept in ("numpy/__init__.py", "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so",
                 "numpy/_core/_multiarray_tests.cpython-312-wasm32-emscripten.so",  # `import numpy` loads it
                 "numpy/linalg/_umath_linalg.cpython-312-wasm32-emscripten.so",  # and this
                 "numpy/random/_generator.cpython-312-wasm32-emscripten.so",  # default_rng
                 "numpy/linalg/__init__.py", "numpy/random/__init__.py", "numpy-2.0.2.dist-info/METADATA"):
        assert kept in names
    dropped = ("numpy/fft/", "numpy/f2py/", "numpy/_core/include/", "numpy/linalg/lapack_lite.", "numpy/_core/_umath_tests.")
    assert not [n for n in names if n.startswith(dropped) or n.endswith((".pyi", ".pxd", ".h", ".a"))]
    lock = json.loads(trimmed[python_bundle.LOCK])
    assert list(lock["packages"]) == ["numpy"]
    assert lock["packages"]["numpy"]["sha256"] == hashlib.sha256(wheel).hexdigest()


def test_the_bundle_is_reproducible_and_decompresses_to_its_manifest(tmp_path, trimmed):
    first = python_bundle.write_bundle(assets.fetch_pyodide(), assets.NUMPY_WHEEL, tmp_path / "a")
    second = python_bundle.write_bundle(assets.fetch_pyodide(), assets.NUMPY_WHEEL, tmp_path / "b")
    assert first == second
    for name, entry in first.items():
        packed = (tmp_path / "a" / entry["path"]).read_bytes()
        assert packed == (tmp_path / "b" / entry["path"]).read_bytes() and len(packed) == entry["bytes"]
        assert gzip.decompress(packed) == trimmed[name]


def test_the_sizes_given_for_the_cdn_are_those_of_the_pinned_files():
    folder = assets.fetch_pyodide()
    assert assets.BROWSER_SIZES == {name: (folder / name).stat().st_size for name in assets.BROWSER_PINS}


def test_what_a_fresh_start_imports_before_keeping_its_memory_is_in_the_standard_library_kept():
    worker = (ROOT / "widgets/runtime/worker.js").read_text()
    names = re.search(r'KEPT_IMPORTS = ((?:"[^"]*"\s*\+?\s*)+);', worker).group(1)
    modules = {m.strip().split(".")[0] for m in "".join(re.findall(r'"([^"]*)"', names)).split(",")}
    full = top_level(zipfile.ZipFile(assets.fetch_pyodide() / python_bundle.STDLIB))
    assert {"json", "decimal", "importlib"} <= modules
    assert not {m for m in modules if m in full} - python_bundle.STDLIB_KEEP  # the rest is built into Pyodide
