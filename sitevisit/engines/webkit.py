"""Pages visited in one WebKitGTK (MiniBrowser through WebKitWebDriver, driven by Selenium) on an Xvfb display
of its own. WebDriver classic has no hook before a page's scripts run, so probe.js watches for errors from
the page's load on; an error before it shows as a widget or a runtime that never comes up."""
from __future__ import annotations

import contextlib
import json
import os
import subprocess

from selenium import webdriver
from selenium.webdriver.webkitgtk.options import Options
from selenium.webdriver.webkitgtk.service import Service

from sitevisit.engines import PROBE, EngineMissing, webkit

# Xvfb has no GPU: WebKitGTK would composite through Mesa's software OpenGL, which costs far more CPU than painting
# without compositing (what Chromium's --disable-gpu does for the browser tests). Script and layout are the same.
NO_GPU = {"WEBKIT_DISABLE_COMPOSITING_MODE": "1"}
VISIT = "const done = arguments[arguments.length - 1];\n(%s).visit(%d).then(done, (e) => done({failed: String(e)}));"
GO = "const done = arguments[arguments.length - 1];\n(%s).go(%s, %d).then(done, (e) => done({failed: String(e)}));"


@contextlib.contextmanager
def display(xvfb: str):
    """A display of Xvfb's choosing (its number read back from -displayfd), stopped on exit."""
    read, write = os.pipe()
    server = subprocess.Popen([xvfb, "-displayfd", str(write), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                              pass_fds=[write], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as said:
        number = said.readline().strip()
    try:
        if not number:
            raise EngineMissing(f"Xvfb ({xvfb}) did not start a display")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait()


def visit_in_webkit(base: str, paths: list[str], timeout_s: float) -> list[dict]:
    """probe.js's report for each page base + path, in order: {path, runtime, widgets, problems}."""
    driver_path, browser, xvfb = webkit()
    options = Options()
    options.binary_location = browser
    options.add_argument("--automation")
    with display(xvfb) as shown:
        service = Service(executable_path=driver_path, env={**os.environ, "DISPLAY": shown, **NO_GPU})
        try:
            driver = webdriver.WebKitGTK(options=options, service=service)
        except Exception as e:  # Selenium's own exception types say little more than the message
            raise EngineMissing(f"WebKitGTK ({browser}) did not start: {e}") from e
        try:
            driver.set_window_size(1200, 900)
            driver.set_script_timeout(timeout_s + 30)  # probe.js's own waits end by timeout_s
            driver.set_page_load_timeout(timeout_s)
            reports = []
            for i, path in enumerate(paths):
                if i == 0:
                    driver.get(base + path)
                else:
                    moved = driver.execute_async_script(GO % (PROBE, json.dumps(base + path), timeout_s * 1000))
                    if moved:
                        raise RuntimeError(f"WebKit did not move on to {path}: {moved['failed']}")
                reports.append({"path": path, **driver.execute_async_script(VISIT % (PROBE, timeout_s * 1000))})
            return reports
        finally:
            driver.quit()
