"""How the site is made. mkdocs.yml declares hooks.py, so `mkdocs build` and `mkdocs serve` make the whole
site from the files that build.py fetched into .cache/:

    assets.py   the pinned Pyodide, NumPy and Temml files: fetched once, checked by sha256; the runtime's config
    python_bundle.py  the Python the browser downloads: trimmed, compiled to bytecode (bytecode.mjs: Pyodide's
                own Python, run in Node), compressed
    wheel.py    the mha_core wheel, built by pyproject.toml's build backend, byte-identical between builds
    widgets.py  each `<!-- widget: NAME key=value -->` line rendered from widgets/NAME/ (widget.py, template)
    figures.py  each `<!-- figure: NAME -->` line drawn as an inline SVG (with mha_core's numbers)
    facts.py    each `<!-- fact: NAME -->` replaced by the number widgets/*/facts.py computes from its model
    typeset.py  the formulas typeset into MathML by Temml at build time (typeset.mjs, in Node)
    csp.py      the Content-Security-Policy of each page, with the hashes of its inline scripts
    hooks.py    the MkDocs hooks that put these into the build
    serving.py  a static server of a built site (the types Pyodide needs, under a sub-path), for the tests
"""
from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"


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
