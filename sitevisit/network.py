"""A slow network of our own: a static server of a built site that shares one bandwidth limit across all its
connections (a token bucket) and adds a latency to each request, so that the page and the Python worker's
downloads are throttled alike (DevTools throttling does not reach a dedicated worker's requests). It serves
without compression, as a host that does not compress would, records what it sent, and can hold a file
back part-way (a link that stops delivering).

    with throttled_site(site, mbit=1.6, latency_ms=150) as (server, url): ...
    network.sent: [[path, bytes sent]], one per request;  network.hold("numpy", after=100_000)

and a proxy through which a file arrives a trickle at a time until released (Trickle: a download on its way).
"""
from __future__ import annotations

import contextlib
import http.server
import shutil
import threading
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from sitevisit.site import MOUNT, serve

# What a start of Python downloads (parts of their paths), each once
PYTHON_FILES = ("pyodide.mjs", "pyodide.asm.wasm.gz", "pyodide.asm.js.gz", "python_stdlib.zip.gz",
                "pyodide-lock.json.gz", "wasm32.whl.gz", "/wheels/mha_core-", "/wheels/mha_page-")
CHUNK = 16 * 1024
TRICKLE, TRICKLE_S = 4096, 1.0  # a held file's bytes until released: news for the runtime well within its 20 s


class TokenBucket:
    """Bytes per second shared by every connection; take(n) waits until n bytes may go."""

    def __init__(self, bytes_per_s: float):
        self.rate = bytes_per_s
        self.lock = threading.Lock()
        self.free_at = time.monotonic()  # when the link is next idle

    def take(self, n: int) -> None:
        with self.lock:
            start = max(self.free_at, time.monotonic())
            self.free_at = start + n / self.rate
            wait = self.free_at - time.monotonic()
        if wait > 0:
            time.sleep(wait)


class Network:
    """The server's link: its bucket (None: unlimited), latency, what was sent, and the files held back."""

    def __init__(self, mbit: float | None, latency_ms: float):
        self.bucket = TokenBucket(mbit * 1e6 / 8) if mbit else None
        self.latency = latency_ms / 1000
        self.sent: list[list] = []  # [path, bytes sent so far], one per request, in the order asked
        self.held: dict[str, int] = {}  # a part of a path -> bytes sent before it stops
        self.released = threading.Event()
        self.lock = threading.Lock()

    def hold(self, part: str, after: int) -> None:
        """Stop sending any file whose path contains part after `after` bytes, until release()."""
        self.released.clear()
        self.held[part] = after

    def release(self) -> None:
        self.held.clear()
        self.released.set()

    def limit_for(self, path: str) -> int | None:
        return next((after for part, after in self.held.items() if part in path), None)

    def requests(self, part: str) -> int:
        """How many requests were made for paths containing part."""
        return sum(part in path for path, _ in self.sent)

    def send(self, path: str, source, out) -> None:
        """Copy source to out through the link."""
        record, limit = [path, 0], self.limit_for(path)
        with self.lock:
            self.sent.append(record)
        while chunk := source.read(CHUNK if limit is None else min(CHUNK, max(limit - record[1], 1))):
            if limit is not None and record[1] >= limit:
                self.released.wait()  # the link stops delivering (until released or the server ends)
                limit = None
            if self.bucket:
                self.bucket.take(len(chunk))
            out.write(chunk)
            record[1] += len(chunk)


def throttle(handler_class, network: Network):
    """handler_class with each request delayed by the latency and each body sent through network."""

    class Throttled(handler_class):
        def send_head(self):
            time.sleep(network.latency)
            return super().send_head()

        def copyfile(self, source, outputfile):
            network.send(self.path.split("?")[0], source, outputfile)

    return Throttled


@contextlib.contextmanager
def throttled_site(site: Path, mbit: float | None = None, latency_ms: float = 0):
    """(network, base URL) of site served under MOUNT through a link of mbit Mbit/s and latency_ms."""
    network = Network(mbit, latency_ms)
    server, url = serve(site, MOUNT)
    server.RequestHandlerClass = throttle(server.RequestHandlerClass, network)
    try:
        yield network, url
    finally:
        network.release()
        server.shutdown()


class Trickle:
    """A link on which files arrive a trickle at a time (TRICKLE bytes every TRICKLE_S) until released, then the
    rest at once: a download still on its way, which a test may hold for as long as it likes, where a link
    that stops delivering is a stall the runtime ends after 20 s. A proxy on 127.0.0.1: a browser's request is
    sent to url_for(its URL) (Playwright: route.continue_(url=...), which the page does not see)."""

    def __init__(self):
        self.released = threading.Event()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url_for(self, url: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/?{urlencode({'from': url})}"

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()

    def handler_class(self):
        trickle = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                with urllib.request.urlopen(parse_qs(urlsplit(self.path).query)["from"][0]) as upstream:
                    self.send_response(upstream.status)
                    for name, value in upstream.getheaders():
                        if name.lower() not in ("connection", "date", "server", "transfer-encoding"):
                            self.send_header(name, value)
                    self.end_headers()
                    with contextlib.suppress(ConnectionError):
                        while not trickle.released.wait(TRICKLE_S) and (chunk := upstream.read(TRICKLE)):
                            self.wfile.write(chunk)
                            self.wfile.flush()
                        shutil.copyfileobj(upstream, self.wfile)

            def log_message(self, *args):
                pass

        return Handler
