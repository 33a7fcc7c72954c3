"""Firefox and WebKit, beside Chromium: each visits pages of the built site and runs probe.js on each
(Python ready, every widget computing once, no page error).

Firefox is Debian's firefox-esr, driven by puppeteer-core (npm, pinned in package-lock.json) over WebDriver
BiDi (firefox.mjs). WebKit is WebKitGTK, Safari's engine: Debian's webkit2gtk-driver (WebKitWebDriver and
its MiniBrowser), driven by Selenium under Xvfb (webkit.py).
`python -m sitevisit.engines` prints what each would run, or says what to install (make engines).
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROBE = (HERE / "probe.js").read_text(encoding="utf-8")  # one JavaScript expression: {watch(), visit(ms)}
INSTALL = "as root: `apt-get install firefox-esr webkit2gtk-driver xvfb`"


class EngineMissing(RuntimeError):
    """An engine, or what drives it, is not installed; the message says what to install."""


def program(name: str, package: str) -> str:
    path = shutil.which(name)
    if not path:
        raise EngineMissing(f"{name} is not installed (Debian's {package}; {INSTALL})")
    return path


def firefox() -> tuple[str, str]:
    """(node, firefox-esr): what firefox.mjs runs on, once `npm ci` has installed puppeteer-core here."""
    if not (HERE / "node_modules" / "puppeteer-core" / "package.json").is_file():
        raise EngineMissing(f"puppeteer-core is not installed: `npm ci --prefix {HERE.relative_to(HERE.parents[1])}`")
    return program("node", "nodejs"), program("firefox-esr", "firefox-esr")


def webkit() -> tuple[str, str, str]:
    """(WebKitWebDriver, MiniBrowser, Xvfb)."""
    driver = program("WebKitWebDriver", "webkit2gtk-driver")
    browsers = sorted(Path("/usr/lib").glob("*/webkit2gtk-4.*/MiniBrowser"))
    if not browsers:
        raise EngineMissing(f"WebKitGTK's MiniBrowser is not installed (Debian's webkit2gtk-driver; {INSTALL})")
    return driver, str(browsers[-1]), program("Xvfb", "xvfb")

