"""Serving the site: a static server of a built site (for the tests and benchmarks: under a sub-path, as
GitHub Pages serves a project, with the types Pyodide needs), and `mkdocs serve` with live reload."""
from __future__ import annotations

import gzip
import http.server
import os
import socket
import sys
from pathlib import Path

from sitebuild import ROOT, BuildError

MIME_TYPES = {
    ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
    ".whl": "application/zip", ".zip": "application/zip", ".gz": "application/gzip", ".json": "application/json",
    ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml", ".woff2": "font/woff2",
}
GITHUB_PAGES_CACHING = "max-age=600"  # the Cache-Control GitHub Pages sends with every file
PORT = 8000  # where `make serve` serves, and where a build made without a site address expects to be served
LOCAL_URL = f"http://127.0.0.1:{PORT}/"


def handler_class(mount: str = "/", caching: str | None = None):
    """A quiet static-file handler for the server's folder (server.root), mounted under the URL path
    mount (e.g. /mha/), with the MIME types Pyodide needs, and caching as Cache-Control if given."""
    mount = "/" + mount.strip("/") + "/" if mount.strip("/") else "/"

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}

        def __init__(self, request, client_address, server):
            super().__init__(request, client_address, server, directory=str(server.root))

        def translate_path(self, path):
            path = path.split("?", 1)[0].split("#", 1)[0]
            if not (path + "/").startswith(mount):
                return str(Path(self.directory) / ".outside-the-mount" / "404")  # no such file
            return super().translate_path("/" + path[len(mount):])

        def end_headers(self):
            if caching:
                self.send_header("Cache-Control", caching)
            super().end_headers()

        def log_message(self, *args):
            pass

    return Handler


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):  # else the client hung up
            super().handle_error(request, client_address)


def local_sitemap(site: Path) -> None:
    """A build without a site address (site_url) gets a sitemap that names its pages at LOCAL_URL, not an empty one.
    Material's instant navigation takes the site's pages from sitemap.xml, each with the host of the page shown
    but the port as written there (tests/site/test_material_internals.py): so the site navigates instantly when
    served on PORT, on any host."""
    pages = sorted(p.relative_to(site).as_posix().removesuffix("index.html") for p in site.rglob("*.html")
                   if p.name != "404.html")
    urls = "".join(f"    <url>\n         <loc>{LOCAL_URL}{page}</loc>\n    </url>\n" for page in pages)
    text = (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
            f"{urls}</urlset>").encode()
    (site / "sitemap.xml").write_bytes(text)
    (site / "sitemap.xml.gz").write_bytes(gzip.compress(text, mtime=0))


def make_server(root: Path, port: int = 0, mount: str = "/", caching: str | None = None) -> Server:
    """A threaded server of root on 127.0.0.1 (port 0: any free port); call serve_forever in a thread.
    Setting server.root to another folder serves that one from the next request on."""
    server = Server(("127.0.0.1", port), handler_class(mount, caching))
    server.root = root
    return server


def check_port(port: int) -> None:
    """Stop with a clear message, before any build, if port is taken on 127.0.0.1."""
    try:
        socket.create_server(("127.0.0.1", port)).close()
    except OSError as e:
        raise BuildError(f"port {port} is not free ({os.strerror(e.errno)}): choose another, "
                         f"e.g. `make serve PORT={port + 1}`") from None


def live(port: int, pyodide_cdn: bool) -> None:
    """`mkdocs serve` on 127.0.0.1:port: rebuilt, and the open pages reloaded, on every change."""
    from mkdocs.commands.serve import serve

    if pyodide_cdn:
        os.environ["MHA_PYODIDE_CDN"] = "true"  # read by mkdocs.yml
    serve(str(ROOT / "mkdocs.yml"), dev_addr=f"127.0.0.1:{port}", livereload=True)
