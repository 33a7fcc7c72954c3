"""The Chromium the browser tests and benchmarks drive through Playwright.
`python -m sitevisit.chromium` prints its path, or says how to install one (make chromium)."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium(playwright) -> str:
    """$CHROMIUM if set, else Playwright's own if installed (`python -m playwright install chromium`), else
    the system's."""
    for path in (os.environ.get("CHROMIUM"), playwright.chromium.executable_path,
                 shutil.which("chromium"), shutil.which("chromium-browser")):
        if path and Path(path).is_file():
            return path
    raise RuntimeError("No Chromium for the browser tests: install Playwright's "
                       "(`.venv/bin/python -m playwright install chromium`) or the system's "
                       "(as root: `apt-get install chromium`), or set CHROMIUM to one")


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=find_chromium(playwright), args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium():
    """A headless Chromium (find_chromium's), closed on exit."""
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


if __name__ == "__main__":
    with sync_playwright() as p:
        try:
            print(find_chromium(p))
        except RuntimeError as e:
            sys.exit(str(e))
