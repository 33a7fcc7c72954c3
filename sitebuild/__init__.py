"""How the site is made. mkdocs.yml declares hooks.py, so `mkdocs build` and `mkdocs serve` make the whole
site from the files that build.py fetched into .cache/:

    assets.py   the pinned Pyodide, NumPy and Temml files: fetched once, checked by sha256; the runtime's config
    python_bundle.py  the Python the browser downloads: trimmed, compiled to bytecode (bytecode.mjs: Pyodide's
                own Python, run in Node), compressed
    wheel.py    the mha_core and mha_page wheels, built by flit (pyproject.toml's), byte-identical between builds
    widgets.py  each `<!-- widget: NAME key=value -->` line rendered from widgets/NAME/ (widget.py, template)
    figures.py  each `<!-- figure: NAME -->` line drawn as an inline SVG (with mha_core's numbers)
    facts.py    each `<!-- fact: NAME -->` replaced by the number widgets/*/facts.py computes from its model
    typeset.py  the formulas typeset into MathML by Temml at build time (typeset.mjs, in Node)
    csp.py      the Content-Security-Policy of each page, with the hashes of its inline scripts
    hooks.py    the MkDocs hooks that put these into the build
    serving.py  a static server of a built site (the types Pyodide needs, under a sub-path), for the tests
"""
from __future__ import annotations

import contextlib
import fcntl
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
# The build's options a widget reads (hooks.on_config sets them from mkdocs.yml's extra): model_cdn, the URL of
# the wheel the real model comes from in a build that takes it from a registry's CDN (None: from the site).
# Here, not in widgets.py, so that a widget.py reads it without importing the module that loads it.
BUILD: dict = {"model_cdn": None}
_lock_depth = threading.local()  # how deep this thread is in cache_lock: the lock is taken once, at the outermost


@contextlib.contextmanager
def cache_lock():
    """.cache/ to this process alone while it fills it: builds run side by side (the tests run several), and two
    filling one entry at once would each write the other's half-made files. Re-entrant within a thread."""
    depth = getattr(_lock_depth, "n", 0)
    if depth:
        _lock_depth.n = depth + 1
        try:
            yield
        finally:
            _lock_depth.n = depth
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file is closed
        _lock_depth.n = 1
        try:
            yield
        finally:
            _lock_depth.n = 0


def kept(path: Path, make) -> bytes:
    """The bytes of the cache file path, written whole by make() the first time, under cache_lock."""
    with cache_lock():
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            part = path.with_name(path.name + ".part")
            part.write_bytes(make())
            part.replace(path)
        return path.read_bytes()


class BuildError(Exception):
    """A build step failed; the message says which and what to do."""


def node(script: Path, *args: str, stdin: str = "", doing: str) -> str:
    """The output of `node script args...` (Node.js, which the fetch's npm needs too); a BuildError that says what
    was being done (doing) and why it failed otherwise."""
    try:
        done = subprocess.run(["node", str(script), *args], input=stdin, capture_output=True, text=True)
    except FileNotFoundError:
        raise BuildError(f"{doing} needs Node.js (`node`), which is not installed") from None
    if done.returncode:
        raise BuildError(f"{doing} failed:\n{done.stderr.strip()[-3000:]}")
    return done.stdout
