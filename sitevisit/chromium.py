"""The Chromium the browser tests and benchmarks drive through Playwright.

The benchmarks measure as a reader meets the site, in the whole browser. The tests run in Chromium's headless
shell, as Playwright runs headless by default: the same Blink and V8 without the browser's own user-interface
layer, so that each of the hundreds of contexts the tests open costs far less CPU on a two-core machine.
`python -m sitevisit.chromium` prints the paths of both, or says how to install what is missing (make chromium)."""
from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium(playwright, headless_shell: bool = False) -> str:
    """$CHROMIUM if set; else the system's chromium-headless-shell (headless_shell), or the whole Chromium:
    Playwright's own if installed (`python -m playwright install chromium`), else the system's."""
    if headless_shell:
        found = (shutil.which("chromium-headless-shell"),)
    else:
        found = (playwright.chromium.executable_path, shutil.which("chromium"), shutil.which("chromium-browser"))
    for path in (os.environ.get("CHROMIUM"), *found):
        if path and Path(path).is_file():
            return path
    package = "chromium-headless-shell" if headless_shell else "chromium"
    raise RuntimeError(f"No {package} for the browser {'tests' if headless_shell else 'benchmarks'}: install "
                       f"the system's (as root: `apt-get install {package}`), or set CHROMIUM to a Chromium")


def launch_chromium(playwright, headless_shell: bool = False, extra_args: tuple[str, ...] = ()):
    return playwright.chromium.launch(executable_path=find_chromium(playwright, headless_shell),
                                      args=[*CHROMIUM_ARGS, *extra_args])


@contextlib.contextmanager
def chromium():
    """A headless Chromium, the whole browser (find_chromium's), closed on exit."""
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


if __name__ == "__main__":
    with sync_playwright() as p:
        try:
            print(find_chromium(p, headless_shell=True))
            print(find_chromium(p))
        except RuntimeError as e:
            sys.exit(str(e))
