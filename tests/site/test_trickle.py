"""sitevisit.network.Trickle, the link through which the browser tests hold Python back: a held file arrives
TRICKLE bytes at a time (news for the runtime, never a 20-s silence) and, once released, whole and unchanged."""
from __future__ import annotations

import os
import time
import urllib.request

from sitevisit.network import TRICKLE, TRICKLE_S, Trickle
from sitevisit.site import serve


def test_a_held_file_arrives_a_trickle_at_a_time_then_whole_once_released(tmp_path):
    body = os.urandom(5 * TRICKLE + 123)
    (tmp_path / "python.wasm.gz").write_bytes(body)
    server, url = serve(tmp_path, "/")
    trickle = Trickle()
    try:
        with urllib.request.urlopen(trickle.url_for(url + "python.wasm.gz"), timeout=30) as held:
            assert held.headers["Content-Length"] == str(len(body))
            started = time.monotonic()
            first = held.read(2 * TRICKLE)
            assert time.monotonic() - started >= TRICKLE_S * 0.9  # the second trickle came a period after the first
            trickle.release()
            assert first + held.read() == body
    finally:
        trickle.close()
        server.shutdown()
