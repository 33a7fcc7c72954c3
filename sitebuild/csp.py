"""The Content-Security-Policy of every page: nothing from elsewhere (but jsDelivr when Pyodide comes from
it, and the model's host when the model comes from a registry's CDN), WebAssembly allowed, and of inline scripts only those the page was built with, by their sha256.

overrides/main.html writes policy() into a meta tag with PLACEHOLDER where the hashes go; seal_site() puts
the hashes of the whole site's inline scripts there once every page is written: with instant navigation the
first page's policy stays in force on the pages the reader moves to, so every page has the same one."""
from __future__ import annotations

import base64
import hashlib
import re
import urllib.parse
from pathlib import Path

from sitebuild.assets import PYODIDE_CDN

CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{script}; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'{connect}; worker-src 'self'; "
       "object-src 'none'; base-uri 'self'; form-action 'self'")
PLACEHOLDER = "__MHA_INLINE_SCRIPT_HASHES__"
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", re.S)


def origin(url: str) -> str:
    """https://host[:port] of url."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def policy(pyodide_cdn: bool, model_cdn: str | None = None) -> str:
    """The policy of a build that takes Pyodide from jsDelivr or not, and the model from the URL model_cdn or not."""
    cdn = " " + origin(PYODIDE_CDN) if pyodide_cdn else ""
    model = " " + origin(model_cdn) if model_cdn else ""
    return CSP.format(script=" " + PLACEHOLDER + cdn, connect=cdn + model)


def inline_hashes(*pages: str) -> str:
    """CSP source list of the sha256 of each inline script that runs (JSON data blocks do not) in pages."""
    hashes = [base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
              for html in pages for attrs, body in INLINE_SCRIPT.findall(html) if "application/json" not in attrs]
    return " ".join(f"'sha256-{h}'" for h in dict.fromkeys(hashes))


def seal(html: str, sources: str) -> str:
    """The page with sources in its policy's script-src."""
    return html.replace(" " + PLACEHOLDER, (" " + sources).rstrip())


def seal_site(site: Path, live_reload: bool = False) -> None:
    """Every page of site with the hashes of all the site's inline scripts in its policy. mkdocs serve adds a
    live-reload script to each page as it sends it, unknown at build time: with live_reload, inline scripts
    are allowed instead."""
    pages = {page: page.read_text(encoding="utf-8") for page in sorted(site.rglob("*.html"))}
    sources = "'unsafe-inline'" if live_reload else inline_hashes(*pages.values())
    for page, html in pages.items():
        if PLACEHOLDER in html:
            page.write_text(seal(html, sources), encoding="utf-8")
