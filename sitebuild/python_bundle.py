"""The Python a reader's browser downloads, made small and quick to start: Pyodide's files trimmed of what the
site never imports, their Python compiled to bytecode, then gzip-compressed (libdeflate), so that a host that does
not compress still sends a fraction (the worker decompresses them with DecompressionStream and checks each one's
sha256 before use).

    pyodide.asm.wasm, pyodide.asm.js   as Pyodide ships them
    python_stdlib.zip                  only the top-level modules in STDLIB_KEEP (of encodings, the codecs in
                                       ENCODINGS_KEEP), stored: the gzip around the whole archive compresses
                                       across files, which per-file deflate cannot
    numpy wheel                        without NUMPY_DROP (parts NumPy imports only on request), stored
    pyodide-lock.json                  NumPy's entry alone, pointing at the trimmed wheel
    mha_core wheel                     stored, like NumPy's (wheel_for_the_wire)

The standard library and NumPy go as bytecode compiled by Pyodide's own Python (bytecode.mjs, in Node): a
start that compiles no source is several times quicker (loadPyodide about 1.5 s instead of 4 on a 2-core
machine, importing NumPy 0.4 s instead of 1).

Each goes out as NAME.gz, made once per set of inputs and kept under .cache/. The manifest says, for each file
Pyodide asks for, where its .gz is, the sha256 of the bytes after decompression and the size on the wire.
"""
from __future__ import annotations

import hashlib
import io
import json
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitebuild import cache_lock, kept, node

# Every top-level module Pyodide's start, NumPy's import and mha_core import (recorded from sys.modules after
# every bridge function ran, in Pyodide under Node, the wheels unpacked and loaded as worker.js does: Pyodide's
# package loader, which needed email, tarfile, csv and hashlib, is not used); tests/site/test_python_bundle.py
# checks that importing mha_core needs nothing else from the standard library.
STDLIB_KEEP = frozenset("""
    __future__ _collections_abc _compat_pickle _compression _pyodide _sitebuiltins _weakrefset abc ast asyncio
    base64 bisect bz2 codecs collections concurrent contextlib contextvars copy copyreg ctypes dataclasses
    datetime dis encodings enum fnmatch functools genericpath heapq importlib inspect io ipaddress json keyword
    linecache locale logging ntpath numbers opcode operator os pathlib pickle platform posixpath pyodide random
    re reprlib selectors shutil signal site socket stat string struct subprocess tempfile textwrap threading
    token tokenize traceback types typing urllib warnings weakref zipfile zipimport
""".split())
# The codecs Python itself may look up (cp437: the names in zip archives); mha_core decodes no bytes.
ENCODINGS_KEEP = frozenset("""
    __init__ aliases ascii cp437 latin_1 raw_unicode_escape unicode_escape utf_8 utf_8_sig utf_16 utf_16_be
    utf_16_le utf_32 utf_32_be utf_32_le
""".split())
# Parts of NumPy's wheel that `import numpy` and mha_core never load (NumPy imports fft, polynomial, ma and
# random only when asked for them; mha_core draws its random numbers with mha_core.rng), what only compilers
# read (C headers, static libraries, Cython declarations), and extension modules of NumPy's own tests. The
# worker loads every .so of the wheels at each start, so each one dropped is also start-up time saved.
NUMPY_DROP = ("numpy/f2py/", "numpy/testing/", "numpy/_pyinstaller/", "numpy/doc/", "numpy/fft/",
              "numpy/polynomial/", "numpy/ma/", "numpy/random/", "numpy/_core/include/", "numpy/_core/lib/",
              "numpy/linalg/lapack_lite.", "numpy/_core/_rational_tests.",
              "numpy/_core/_umath_tests.", "numpy/_core/_struct_ufunc_tests.", "numpy/_core/_operand_flag_tests.",
              "numpy/_core/_simd.")
NUMPY_DROP_SUFFIXES = (".pyi", ".pxd")
AS_IS = ("pyodide.asm.wasm", "pyodide.asm.js")
STDLIB, LOCK = "python_stdlib.zip", "pyodide-lock.json"
FIXED_DATE = (1980, 1, 1, 0, 0, 0)
BYTECODE = Path(__file__).with_name("bytecode.mjs")
# Where the archives' modules are in the browser (the paths tracebacks show): the standard library's, a wheel's.
STDLIB_PATH, SITE_PACKAGES = "/lib/python312.zip/", "/lib/python3.12/site-packages/"


def restored(archive: bytes, keep) -> bytes:
    """archive (a zip) with only the members keep(name) accepts, stored uncompressed with fixed dates."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if keep(info.filename):
                member = zipfile.ZipInfo(info.filename, FIXED_DATE)
                member.external_attr = info.external_attr
                dst.writestr(member, src.read(info))
    return out.getvalue()


def stdlib_kept(name: str) -> bool:
    top, _, rest = name.partition("/")
    if top == "encodings":
        return rest.removesuffix(".py") in ENCODINGS_KEEP
    return top.removesuffix(".py") in STDLIB_KEEP


def numpy_kept(name: str) -> bool:
    return not (name.startswith(NUMPY_DROP) or name.endswith(NUMPY_DROP_SUFFIXES))


def numpy_lock(lock: dict, wheel_name: str, wheel: bytes) -> bytes:
    """pyodide-lock.json with NumPy's entry alone, its sha256 that of the trimmed wheel."""
    entry = {**lock["packages"]["numpy"], "file_name": wheel_name,
             "sha256": hashlib.sha256(wheel).hexdigest(), "depends": []}
    return json.dumps({"info": lock["info"], "packages": {"numpy": entry}}, indent=1, sort_keys=True).encode()


def compiled(archives: dict[str, bytes], pyodide: Path) -> dict[str, bytes]:
    """archives ({name: zip}: the standard library, wheels) with their Python compiled to bytecode by the
    Python of the Pyodide in the folder pyodide (bytecode.mjs)."""
    where = {name: STDLIB_PATH if name == STDLIB else SITE_PACKAGES for name in archives}
    with tempfile.TemporaryDirectory(prefix="mha-bytecode-") as tmp:
        for name, data in archives.items():
            (Path(tmp) / name).write_bytes(data)
        node(BYTECODE, str(pyodide), tmp, json.dumps(where), doing="Compiling Python for the browser")
        return {name: (Path(tmp) / name).read_bytes() for name in archives}


def compiled_wheel(name: str, wheel: bytes, pyodide: Path, cache: Path) -> bytes:
    """The wheel name with its Python compiled to bytecode like NumPy's, made once per wheel and kept in cache."""
    key = hashlib.sha256(wheel + BYTECODE.read_bytes()).hexdigest()[:16]
    return kept(cache / "compiled-wheels" / f"{key}-{name}", lambda: compiled({name: wheel}, pyodide)[name])


def trimmed(source: Path, numpy_wheel: str) -> dict[str, bytes]:
    """The files the browser needs, by the name Pyodide asks for, from the verified files in source."""
    files = {name: (source / name).read_bytes() for name in AS_IS}
    files |= compiled({STDLIB: restored((source / STDLIB).read_bytes(), stdlib_kept),
                       numpy_wheel: restored((source / numpy_wheel).read_bytes(), numpy_kept)}, source)
    lock = json.loads((source / LOCK).read_text())
    files[LOCK] = numpy_lock(lock, numpy_wheel, files[numpy_wheel])
    return files


def packed_for_the_wire(data: bytes) -> bytes:
    """data gzip-compressed by libdeflate at its highest level (the bundle 4 % smaller than with gzip -9); any
    gzip reader decompresses it."""
    import deflate  # here, not above: fetching imports this module before pip has installed the requirements

    return deflate.gzip_compress(data, 12)


def wheel_for_the_wire(wheel: bytes, cache: Path) -> tuple[bytes, bytes]:
    """(the wheel with its members stored, as the worker reads it; that gzip-compressed, as it goes on the wire,
    made once per wheel and kept in cache). One gzip around the whole wheel is
    smaller than each member deflated, and the worker then slices its files out instead of inflating them."""
    stored = restored(wheel, lambda name: True)
    key = hashlib.sha256(stored).hexdigest()[:16]
    return stored, kept(cache / "packed-wheels" / f"{key}.whl.gz", lambda: packed_for_the_wire(stored))


def write_bundle(source: Path, numpy_wheel: str, dest: Path) -> dict[str, dict]:
    """Write NAME.gz for each file into dest (byte-identical between builds) and manifest.json; return the
    manifest {name: {"path": "NAME.gz", "gzip": True, "sha256": of the decompressed bytes, "bytes": size on
    the wire}}."""
    dest.mkdir(parents=True, exist_ok=True)
    files = trimmed(source, numpy_wheel)
    # libdeflate lets go of the GIL: the files are compressed side by side, the largest (Python's .wasm, half the
    # time) first.
    largest_first = sorted(files, key=lambda name: -len(files[name]))
    with ThreadPoolExecutor() as pool:
        packed = dict(zip(largest_first, pool.map(lambda name: packed_for_the_wire(files[name]), largest_first)))
    manifest = {}
    for name, data in files.items():
        (dest / f"{name}.gz").write_bytes(packed[name])
        manifest[name] = {"path": f"{name}.gz", "gzip": True,
                          "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(packed[name])}
    (dest / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def bundle(source: Path, numpy_wheel: str, pins: dict[str, str], cache: Path) -> tuple[Path, dict[str, dict]]:
    """(the folder of the .gz files, the manifest), made from the pinned files in source once for these pins
    and this module's rules, then taken from cache."""
    rules = Path(__file__).read_bytes() + BYTECODE.read_bytes()
    key = hashlib.sha256(json.dumps(pins, sort_keys=True).encode() + rules).hexdigest()[:16]
    folder = cache / f"python-bundle-{key}"
    with cache_lock():
        if not (folder / "manifest.json").exists():
            part = folder.with_name(folder.name + ".part")
            write_bundle(source, numpy_wheel, part)
            part.replace(folder)
    return folder, json.loads((folder / "manifest.json").read_text())
