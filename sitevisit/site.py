"""The site built as a reader of the README builds it, and served under a sub-path as GitHub Pages serves a
project."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sitebuild.serving import make_server

ROOT = Path(__file__).resolve().parents[1]
MOUNT = "/mha/"  # a sub-path, as https://USER.github.io/REPO/


class Build:
    """`python build.py --out out [options]` run as a reader of the README would, in the background;
    site() waits for it and returns out, or raises if it failed or warned."""

    def __init__(self, out: Path, *options: str):
        self.out = out
        self.said = tempfile.TemporaryFile("w+")  # its output, which no pipe could hold unread
        self.process = subprocess.Popen([sys.executable, str(ROOT / "build.py"), "--out", str(out), *options],
                                        stdout=self.said, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})

    def site(self) -> Path:
        failed = self.process.wait()
        self.said.seek(0)
        said = self.said.read()
        if failed or "WARNING" in said:
            raise RuntimeError(f"build.py failed or warned:\n{said}")
        return self.out


def build_into(out: Path, *options: str) -> Path:
    """Build the site into out as a reader of the README would (Build), and wait for it."""
    return Build(out, *options).site()


def serve(root: Path, mount: str = MOUNT, caching: str | None = None):
    """(server, base URL) for root on 127.0.0.1 (caching: the Cache-Control sent); the caller shuts it down."""
    server = make_server(root, 0, mount, caching)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}{mount}"


@contextlib.contextmanager
def served_site(site: Path | None = None):
    """(site, base URL): site, or one built now into a temporary folder (removed on exit), served."""
    with tempfile.TemporaryDirectory(prefix="mha-site-") as tmp:
        site = site or build_into(Path(tmp) / "site")
        server, base = serve(site)
        try:
            yield site, base
        finally:
            server.shutdown()


def pages_with(site: Path, marker: str) -> list[str]:
    """URL paths (relative to the site) of the pages whose HTML holds marker."""
    return sorted(p.parent.relative_to(site).as_posix() + "/" for p in site.rglob("index.html")
                  if marker in p.read_text(encoding="utf-8"))
