"""widgets/runtime/pyodide_internals.js relies on Pyodide's and Emscripten's internals for the memory kept for a
revisit and for how the worker starts Python. Each fact its contract lists is read here from the pinned Pyodide
files (.cache/, as build.py fetches them, each checked by its sha256), with the offsets, flags and path the module
itself declares; and the files it was checked against are recorded here by their sha256: a new Pyodide fails here
until the module has been checked against it."""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest

from sitebuild import assets

MODULE = Path(__file__).resolve().parents[2] / "widgets" / "runtime" / "pyodide_internals.js"


def declared(name: str) -> str:
    """The text of the module's `const NAME = ...;` (its value as written)."""
    found = re.search(rf"const {name} = (.+?);\n", MODULE.read_text(encoding="utf-8"), re.S)
    assert found, f"pyodide_internals.js no longer declares {name}"
    return found.group(1)


def js_object(text: str) -> dict:
    """{key: value} of a flat object literal of numbers and booleans."""
    return {k: json.loads(v) for k, v in re.findall(r"(\w+): (\w+)", text)}


# The files the contract was last checked against: a change of the pinned Pyodide changes them.
CHECKED_AGAINST = {
    "pyodide.mjs": "04c052c815abb0bf2981fa38c2dfa58e3120ee5288c956df2b2a15e301782c5f",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
}
DSO = js_object(declared("DSO"))
LOADING = js_object(declared("LOADING"))


@pytest.fixture(scope="module")
def pyodide() -> dict[str, str]:
    folder = assets.fetch_pyodide()
    return {name: (folder / name).read_text(encoding="utf-8") for name in ("pyodide.mjs", "pyodide.asm.js")}


def test_the_module_was_checked_against_the_pyodide_the_site_ships(pyodide):
    for name, sha256 in CHECKED_AGAINST.items():
        assert assets.PYODIDE_FILES[name] == sha256, (
            f"Pyodide's {name} changed: check each point of pyodide_internals.js's contract against the new files "
            "(this file's tests and worker.js's behaviour in tests/browser/test_runtime.py and test_network.py), "
            "then record the new sha256 in CHECKED_AGAINST")
    assert json.loads(declared("PYODIDE_VERSION")) == assets.PYODIDE_VERSION
    assert f'"{assets.PYODIDE_VERSION}"' in pyodide["pyodide.mjs"]  # the version loadPyodide checks the API against


def test_load_pyodide_takes_the_private_snapshot_options(pyodide):  # contract 1
    assert re.search(r"\b\w+\._loadSnapshot\)\{let \w+=await \w+\._loadSnapshot", pyodide["pyodide.mjs"])
    asm = pyodide["pyodide.asm.js"]
    assert "makeMemorySnapshot({serializer:e}={}){if(!API.config._makeSnapshot)" in asm
    assert declared("snapshotOptions").count("_loadSnapshot: memory") == 1
    assert "{ _makeSnapshot: true }" in declared("snapshotOptions")


def test_a_snapshot_is_a_header_whose_length_is_its_word_1_then_the_memory(pyodide):  # contract 2
    asm = pyodide["pyodide.asm.js"]
    made = re.search(r"makeSnapshot=function\(\w\)\{.{0,600}?return (\w)\[0\]=[\w$]+,\1\[1\]=(\w),.{0,80}?"
                     r"\.subarray\(\2\)\.set\(Module\.HEAP8\)", asm)
    assert made, "makeSnapshot no longer writes the header's length at word 1, then the memory"
    restored = re.search(r"API\.restoreSnapshot=function\((\w)\)\{let (\w)=new Uint32Array\(\1\.buffer.{0,200}?"
                         r"let (\w)=\2\[1\],.{0,400}?\1=\1\.subarray\(\3\)", asm)
    assert restored, "restoreSnapshot no longer reads the memory past the header length at word 1"


def test_the_linker_keeps_what_the_module_reads(pyodide):  # contract 3
    asm = pyodide["pyodide.asm.js"]
    assert "var LDSO={loadedLibsByName:{},loadedLibsByHandle:{}" in asm
    assert "loadDynamicLibrary(libName,flags={global:true,nodelete:true},localScope,handle){" in asm
    assert "if(handle){LDSO.loadedLibsByHandle[handle]=dso}" in asm
    for name in ("_calloc", "LDSO", "loadDynamicLibrary", "HEAP8", "HEAPU32", "wasmTable"):
        assert f'Module["{name}"]' in asm, name


def test_a_handle_records_where_its_library_went_at_the_declared_offsets(pyodide):  # contract 4
    asm = pyodide["pyodide.asm.js"]
    recorded = (f"if(handle){{HEAP8[handle+{DSO['loaded']}>>>0]=1;"
                f"HEAPU32[handle+{DSO['memoryBase']}>>>2>>>0]=memoryBase;"
                f"HEAP32[handle+{DSO['memorySize']}>>>2>>>0]=metadata.memorySize;"
                f"HEAPU32[handle+{DSO['tableBase']}>>>2>>>0]=tableBase;"
                f"HEAP32[handle+{DSO['tableSize']}>>>2>>>0]=metadata.tableSize}}")
    assert recorded in asm
    reloaded = (f"var firstLoad=!handle||!HEAP8[handle+{DSO['loaded']}>>>0];" in asm and
                f"memoryBase=HEAPU32[handle+{DSO['memoryBase']}>>>2>>>0];"
                f"tableBase=HEAPU32[handle+{DSO['tableBase']}>>>2>>>0]" in asm)
    assert reloaded, "a handle whose flag is set no longer loads its library at the places it records"
    assert (f"var data=HEAPU32[handle+{DSO['data']}>>>2>>>0];"
            f"var dataSize=HEAPU32[handle+{DSO['dataSize']}>>>2>>>0];if(data&&dataSize)") in asm
    read = {int(n) for n in re.findall(r"\bhandle\+(\d+)>>>", asm)}
    assert max(read) + 4 == DSO["bytes"], f"the linker reads a handle up to +{max(read)}: DSO.bytes is {DSO['bytes']}"


def test_pyodide_loads_a_library_with_the_flags_the_module_uses(pyodide):  # contract 5
    asm = pyodide["pyodide.asm.js"]
    call = re.search(r"loadDynamicLibrary\(\w,\{loadAsync:!0,nodelete:!0,allowUndefined:!0,global:(\w),fs:\w\},\w\)", asm)
    assert call, "Pyodide's loadDynlib no longer loads a library with these flags"
    assert LOADING == {"loadAsync": True, "nodelete": True, "allowUndefined": True, "global": False}
    assert re.search(r"LDSO\.loadedLibsByName\[(\w)\]\|\|\(.{0,40}LDSO\.loadedLibsByName\[\1\]=", asm), \
        "Pyodide no longer registers a library under its file name too"


def test_the_factory_and_the_fatal_flag(pyodide):  # contracts 6 and 7
    assert 'typeof _createPyodideModule!="function"' in pyodide["pyodide.mjs"]
    assert re.search(r"\b_createPyodideModule\b", pyodide["pyodide.asm.js"])
    assert "if(t&&t.pyodide_fatal_error)return;" in pyodide["pyodide.asm.js"]
    assert "err?.pyodide_fatal_error" in declared("isFatal")


def test_pyodide_fetches_its_other_files_with_the_global_fetch_at_each_request(pyodide):  # contract 8
    mjs = pyodide["pyodide.mjs"]
    assert "{response:fetch(o,t?{integrity:t}:{})}}s(ce,\"browser_getBinaryResponse\")" in mjs  # .wasm, stdlib
    assert re.search(r"await\(await fetch\(\w\)\)\.json\(\)\}s\(\w+,\"loadLockFile\"\)", mjs)
    assert 'e.indexURL+"python_stdlib.zip"' in mjs and 'F(e+"pyodide.asm.wasm")' in mjs
    uses = re.findall(r"(?<![\w.$])fetch\b.?", mjs)
    assert uses and set(uses) == {"fetch("}, f"Pyodide keeps fetch somewhere before it asks: {set(uses)}"


def test_a_wasm_that_does_not_compile_is_only_printed(pyodide):  # contract 9
    mjs, asm = pyodide["pyodide.mjs"], pyodide["pyodide.asm.js"]
    caught = re.search(r"catch\((\w)\)\{console\.warn\(\"wasm instantiation failed!\"\),console\.warn\(\1\)\}\}", mjs)
    assert caught, "Pyodide no longer prints a .wasm that does not compile (and swallows the error)"
    assert 'what="Aborted("+what+")";err(what)' in asm and 'var err=Module["printErr"]' in asm
    assert "printErr:e.stderr" in mjs  # loadPyodide's stderr, which loadWatched sends to console.warn
    fatal = re.compile(re.search(r"const FATAL = /(.+?)/;", MODULE.read_text(encoding="utf-8")).group(1))
    for line in ("wasm instantiation failed!", "CompileError: WebAssembly.instantiate(): expected magic word",
                 "Aborted(CompileError: WebAssembly.instantiate())"):
        assert fatal.search(line), line
    assert not fatal.search("Loading numpy")


def test_packages_go_into_the_declared_site_packages(pyodide):  # contract 10
    assert "o.API.sitePackages=`/lib/python${r}.${a}/site-packages`" in pyodide["pyodide.mjs"]
    lock = json.loads((assets.fetch_pyodide() / "pyodide-lock.json").read_text(encoding="utf-8"))
    major, minor = lock["info"]["python"].split(".")[:2]
    assert json.loads(declared("SITE_PACKAGES")) == f"/lib/python{major}.{minor}/site-packages"


def test_python_keeps_a_folders_finder_until_its_modification_time_changes():  # contract 11
    with zipfile.ZipFile(assets.fetch_pyodide() / "python_stdlib.zip") as stdlib:
        source = io.TextIOWrapper(stdlib.open("importlib/_bootstrap_external.py"), encoding="utf-8").read()
    assert "finder = sys.path_importer_cache[path]" in source
    assert re.search(r"if mtime != self\._path_mtime:\n\s+self\._fill_cache\(\)", source), \
        "FileFinder no longer lists its folder again only when its modification time changes"
