"""The Python the browser downloads (sitebuild/python_bundle.py): trimmed of what the site never imports, yet
holding everything mha_core imports; compiled to Python 3.12 bytecode; archives stored, then gzipped as a whole;
reproducible."""
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

from sitebuild import CACHE, assets, python_bundle

ROOT = Path(__file__).resolve().parents[2]
PYTHON_312_BYTECODE = (3531).to_bytes(2, "little") + b"\r\n"  # the magic number opening a 3.12 .pyc
# The standard-library modules CPython 3.12 carries frozen in: never read from the archive, so left out of it.
FROZEN = {"_collections_abc", "_sitebuiltins", "abc", "codecs", "genericpath", "io", "ntpath", "os", "posixpath",
          "site", "stat", "zipimport", "importlib/machinery", "importlib/util"}


@pytest.fixture(scope="module")
def trimmed() -> dict[str, bytes]:
    return python_bundle.trimmed(assets.fetch_pyodide(), assets.NUMPY_WHEEL)


@pytest.fixture(scope="module")
def bundled() -> tuple[Path, dict[str, dict]]:
    """(the folder of the .gz files, the manifest), as the build takes them."""
    return python_bundle.bundle(assets.fetch_pyodide(), assets.NUMPY_WHEEL, assets.PYODIDE_PINS, CACHE)


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
    return {name.split("/")[0].removesuffix(".pyc").removesuffix(".py") for name in archive.namelist()}


def modules(archive: zipfile.ZipFile, suffix: str) -> set[str]:
    return {name.removesuffix(suffix) for name in archive.namelist() if name.endswith(suffix)}


def test_the_trimmed_standard_library_holds_every_module_mha_core_imports(trimmed):
    stdlib = zipfile.ZipFile(io.BytesIO(trimmed[python_bundle.STDLIB]))
    full = top_level(zipfile.ZipFile(assets.fetch_pyodide() / python_bundle.STDLIB))
    frozen = {name.split("/")[0] for name in FROZEN}
    imported = stdlib_imports(ROOT / "mha_core") | stdlib_imports(ROOT / "mha_page")
    missing = {m for m in imported if m in full} - top_level(stdlib) - frozen  # or built in
    assert not missing, f"add {sorted(missing)} to python_bundle.STDLIB_KEEP"
    assert {"json", "inspect", "dataclasses", "encodings", "asyncio"} <= top_level(stdlib)
    assert not top_level(stdlib) & {"unittest", "xml", "pydoc", "multiprocessing"}
    assert all(info.compress_type == zipfile.ZIP_STORED for info in stdlib.infolist())
    assert not modules(stdlib, ".py") and {"encodings/utf_8", "encodings/cp437"} <= modules(stdlib, ".pyc")
    assert not modules(stdlib, ".pyc") & {"encodings/cp1252", "encodings/big5", "encodings/idna"}


def test_every_python_source_is_compiled_and_only_frozen_modules_are_left_out(trimmed):
    """Each .py of the trimmed archives is there as Python 3.12 bytecode alone (no source for Python to compile
    or compare it with), except the modules Python has frozen in, which it never reads from the archive."""
    source = zipfile.ZipFile(io.BytesIO(python_bundle.restored(
        (assets.fetch_pyodide() / python_bundle.STDLIB).read_bytes(), python_bundle.stdlib_kept)))
    for name, was in ((python_bundle.STDLIB, modules(source, ".py")), (assets.NUMPY_WHEEL, None)):
        archive = zipfile.ZipFile(io.BytesIO(trimmed[name]))
        assert not modules(archive, ".py"), name
        compiled = modules(archive, ".pyc")
        assert all(archive.read(f"{m}.pyc").startswith(PYTHON_312_BYTECODE) for m in compiled)
        if was is not None:
            assert was - compiled == FROZEN


def test_numpy_keeps_what_import_numpy_loads_and_its_lock_entry_points_at_it(trimmed):
    wheel = trimmed[assets.NUMPY_WHEEL]
    names = zipfile.ZipFile(io.BytesIO(wheel)).namelist()
    for kept in ("numpy/__init__.pyc", "numpy/_core/_multiarray_umath.cpython-312-wasm32-emscripten.so",
                 "numpy/_core/_multiarray_tests.cpython-312-wasm32-emscripten.so",  # `import numpy` loads it
                 "numpy/linalg/_umath_linalg.cpython-312-wasm32-emscripten.so",  # and this
                 "numpy/linalg/__init__.pyc", "numpy-2.0.2.dist-info/METADATA"):
        assert kept in names
    dropped = ("numpy/fft/", "numpy/f2py/", "numpy/random/", "numpy/_core/include/", "numpy/linalg/lapack_lite.",
               "numpy/_core/_umath_tests.")
    assert not [n for n in names if n.startswith(dropped) or n.endswith((".pyi", ".pxd", ".h", ".a"))]
    lock = json.loads(trimmed[python_bundle.LOCK])
    assert list(lock["packages"]) == ["numpy"]
    assert lock["packages"]["numpy"]["sha256"] == hashlib.sha256(wheel).hexdigest()


def test_the_bundle_is_reproducible_and_decompresses_to_its_manifest(trimmed, bundled):
    """Trimming and compiling again (trimmed, here) gives the very bytes the build's bundle holds (made by another
    compile), each .gz as its manifest says."""
    folder, manifest = bundled
    assert set(manifest) == set(trimmed)
    for name, entry in manifest.items():
        packed = (folder / entry["path"]).read_bytes()
        assert len(packed) == entry["bytes"] and gzip.decompress(packed) == trimmed[name], name
        assert entry["sha256"] == hashlib.sha256(trimmed[name]).hexdigest()
    lock = trimmed[python_bundle.LOCK]
    assert python_bundle.packed_for_the_wire(lock) == python_bundle.packed_for_the_wire(lock)


def test_the_bundle_on_the_wire_is_smaller_than_gzip_at_its_best(trimmed, bundled):
    """What packed_for_the_wire's docstring says: the bundle 4 % smaller than gzip -9 would make it."""
    _, manifest = bundled
    gzip_9 = sum(len(gzip.compress(data, 9, mtime=0)) for data in trimmed.values())
    assert sum(entry["bytes"] for entry in manifest.values()) < 0.965 * gzip_9


def test_the_sizes_given_for_the_cdn_are_those_of_the_pinned_files():
    folder = assets.fetch_pyodide()
    assert assets.BROWSER_SIZES == {name: (folder / name).stat().st_size for name in assets.BROWSER_PINS}


def test_mha_core_never_touches_numpy_random_which_the_bundle_leaves_out():
    """mha_core draws with mha_core.rng; a use of numpy.random would fail in the browser only."""
    for source in [*(ROOT / "mha_core").rglob("*.py"), *(ROOT / "mha_page").rglob("*.py")]:
        tree = ast.parse(source.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            imported = ([alias.name for alias in node.names] if isinstance(node, ast.Import) else
                        [f"{node.module}.{alias.name}" for alias in node.names] if isinstance(node, ast.ImportFrom) else [])
            assert not [name for name in imported if name.startswith("numpy.random")], source.name
            if isinstance(node, ast.Attribute) and node.attr == "random" and isinstance(node.value, ast.Name):
                assert node.value.id not in ("np", "numpy"), f"{source.name}:{node.lineno} uses numpy.random"
