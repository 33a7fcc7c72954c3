"""Browser tests: the real site, built once per session, served on 127.0.0.1 under a sub-path (as GitHub
Pages serves a project), driven in the system's Chromium by Playwright.

Fixtures: built_site (the output folder), site_url (its base URL), browser (one per session) and page
(a fresh context per test that fails the test on any page error, console error or request that
leaves 127.0.0.1; `page_log.allow(pattern)` accepts the console errors a test provokes).
Tests wait on the data-* markers, never on sleeps. They never skip: a missing Chromium is a failure.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import build  # noqa: E402

MOUNT = "/mha/"  # a sub-path, as https://USER.github.io/REPO/
READY_TIMEOUT_MS = 30_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
LOCAL_HOSTS = {"127.0.0.1"}


def find_chromium() -> str:
    """The system Chromium (Playwright's own browser download is not used)."""
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser"):
        path = name and shutil.which(name)
        if path:
            return path
    raise RuntimeError("Chromium was not found: install Debian's chromium (`apt-get install chromium`, "
                       "or `make chromium`) or set CHROMIUM to its path")


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=find_chromium(), args=CHROMIUM_ARGS)


def build_into(out: Path, *options: str) -> Path:
    """Run `python build.py --out out [options]` as a reader of the README would."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "build.py"), "--out", str(out), *options],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode:
        raise RuntimeError(f"build.py failed:\n{done.stdout}\n{done.stderr}")
    return out


def serve(root: Path, mount: str = MOUNT):
    """(server, base URL) for root on 127.0.0.1; the caller shuts the server down."""
    server = build.make_server(root, 0, mount)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}{mount}"


def pages_with(site: Path, marker: str) -> list[str]:
    """URL paths (relative to the site) of the pages whose HTML holds marker."""
    return sorted(p.parent.relative_to(site).as_posix() + "/" for p in site.rglob("index.html")
                  if marker in p.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    return build_into(tmp_path_factory.mktemp("built") / "site")


@pytest.fixture(scope="session")
def site_url(built_site):
    server, url = serve(built_site)
    yield url
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        try:
            b = launch_chromium(p)
        except RuntimeError as e:
            pytest.fail(str(e), pytrace=False)
        yield b
        b.close()


class PageLog:
    """What a page did that a test must not see: page errors, console errors, requests off 127.0.0.1."""

    def __init__(self):
        self.problems: list[str] = []
        self.requests: list[str] = []
        self.allowed: list[re.Pattern] = []

    def allow(self, pattern: str) -> None:
        """Accept console errors matching pattern (for tests that break something on purpose)."""
        self.allowed.append(re.compile(pattern))

    def console(self, where: str, message) -> None:
        if message.type == "error" and not any(p.search(message.text) for p in self.allowed):
            self.problems.append(f"console error in the {where}: {message.text}")

    def request(self, request) -> None:
        self.requests.append(request.url)
        parts = urlsplit(request.url)
        if parts.scheme not in ("data", "blob", "about") and parts.hostname not in LOCAL_HOSTS:
            self.problems.append(f"request left 127.0.0.1: {request.url}")

    def watch(self, context, page) -> None:
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        page.on("console", lambda message: self.console("page", message))
        page.on("worker", lambda worker: worker.on("console", lambda message: self.console("worker", message)))
        context.on("request", self.request)


@pytest.fixture
def page_log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(browser, page_log):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page_log.watch(context, page)
    page.set_default_timeout(READY_TIMEOUT_MS)
    yield page
    context.close()
    assert not page_log.problems, "\n".join(page_log.problems)


@pytest.fixture(scope="session")
def shapes_path(built_site) -> str:
    """The site-relative URL of the first page that holds a shapes widget."""
    paths = pages_with(built_site, 'data-mha-widget="shapes"')
    if not paths:
        pytest.fail("no page of the built site holds a shapes widget (<!-- widget: shapes ... -->)", pytrace=False)
    return paths[0]
