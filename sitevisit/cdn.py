"""A registry's CDN played on 127.0.0.1, on a port of its own (another origin than the site's): it serves the
real model's wheel from .cache at the path PyPI's file host serves it, with `Access-Control-Allow-Origin: *`
as that host sends it, so that a page of the site may read it."""
from __future__ import annotations

import shutil
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sitebuild.assets import MODEL_WHEEL_URL, model_wheel_path

PATH = urllib.parse.urlsplit(MODEL_WHEEL_URL).path


class WheelHost(BaseHTTPRequestHandler):
    def do_GET(self):
        wheel = model_wheel_path()  # read at each request: it may be fetched after the server starts
        if urllib.parse.urlsplit(self.path).path != PATH or not wheel.exists():
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(wheel.stat().st_size))
        self.send_header("Access-Control-Allow-Origin", "*")
        self.end_headers()
        with open(wheel, "rb") as f:
            try:
                shutil.copyfileobj(f, self.wfile)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the reader left

    def log_message(self, *args):
        pass


def serve_wheel():
    """(server, the wheel's URL on it); the caller shuts it down."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), WheelHost)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}{PATH}"
