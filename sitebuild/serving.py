"""Serving the site: a static server of a built site (for the tests and benchmarks: under a sub-path, as
GitHub Pages serves a project, with the types Pyodide needs), and `mkdocs serve` with live reload."""
from __future__ import annotations

import functools
import gzip
import http.server
import io
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
# The types GitHub Pages sends gzip'd to a browser that accepts it (Content-Encoding: gzip); the others as they are.
COMPRESSED_TYPES = ("text/", "application/javascript", "application/json", "application/xml", "image/svg+xml")
PORT = 8000  # where `make serve` serves, and where a build made without a site address expects to be served
LOCAL_URL = f"http://127.0.0.1:{PORT}/"


@functools.lru_cache(maxsize=256)
def gzipped(path: str, mtime_ns: int) -> bytes:
    """path's bytes gzip'd, kept while the file is unchanged (mtime_ns) so that a file asked again costs nothing."""
    return gzip.compress(Path(path).read_bytes(), mtime=0)


def handler_class(mount: str = "/", caching: str | None = None, compress: bool = False):
    """A quiet static-file handler for the server's folder (server.root), mounted under the URL path
    mount (e.g. /mha/), with the MIME types Pyodide needs, caching as Cache-Control if given, and with
    compress as GitHub Pages serves: the text types gzip'd for a client that accepts gzip, and connections
    kept open from one request to the next (HTTP/1.1; Pages speaks HTTP/2) rather than one for each file."""
    mount = "/" + mount.strip("/") + "/" if mount.strip("/") else "/"

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}
        protocol_version = "HTTP/1.1" if compress else "HTTP/1.0"

        def __init__(self, request, client_address, server):
            super().__init__(request, client_address, server, directory=str(server.root))

        def translate_path(self, path):
            path = path.split("?", 1)[0].split("#", 1)[0]
            if not (path + "/").startswith(mount):
                return str(Path(self.directory) / ".outside-the-mount" / "404")  # no such file
            return super().translate_path("/" + path[len(mount):])

        def send_head(self):
            path = self.translate_path(self.path)
            if os.path.isdir(path) and self.path.split("?", 1)[0].endswith("/"):
                path = os.path.join(path, "index.html")
            if not (compress and os.path.isfile(path) and self.guess_type(path).startswith(COMPRESSED_TYPES)
                    and "gzip" in self.headers.get("Accept-Encoding", "")):
                return super().send_head()
            body = gzipped(path, os.stat(path).st_mtime_ns)
            self.send_response(200)
            self.send_header("Content-Type", self.guess_type(path))
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Vary", "Accept-Encoding")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            return io.BytesIO(body)

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


def make_server(root: Path, port: int = 0, mount: str = "/", caching: str | None = None,
                compress: bool = False) -> Server:
    """A threaded server of root on 127.0.0.1 (port 0: any free port); call serve_forever in a thread.
    Setting server.root to another folder serves that one from the next request on."""
    server = Server(("127.0.0.1", port), handler_class(mount, caching, compress))
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
