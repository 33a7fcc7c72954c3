"""A slow network of our own: a static server of a built site that shares one bandwidth limit across all its
connections (a token bucket) and adds a latency to each request, so that the page and the Python worker's
downloads are throttled alike (DevTools throttling does not reach a dedicated worker's requests). It serves
without compression, as a host that does not compress would, records what it sent, and can hold a file
back part-way (a link that stops delivering).

    with throttled_site(site, mbit=1.6, latency_ms=150) as (server, url): ...
    network.sent: [[path, bytes sent]], one per request;  network.hold("numpy", after=100_000)
"""
from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path

from sitevisit.site import MOUNT, serve

# What a start of Python downloads (parts of their paths), each once
PYTHON_FILES = ("pyodide.mjs", "pyodide.asm.wasm.gz", "pyodide.asm.js.gz", "python_stdlib.zip.gz",
                "pyodide-lock.json.gz", "wasm32.whl.gz", "/wheels/mha_core-", "/wheels/mha_page-")
CHUNK = 16 * 1024


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
