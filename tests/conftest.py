"""The sites every test directory shares, each built once per test run (once per worker, when `make test`
spreads the tests over workers) by build.py as a reader builds it:
built_site (served at site_url, and built for that address, as instant navigation needs: the browser and
engine tests), plain_site and plain_site_again (no options: two, to compare) and cdn_site (--pyodide-cdn:
without Pyodide's files).

The sites the collected tests need are built one after another from the moment the tests are collected,
and each test waits only for its own."""
from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from sitevisit.site import Build, serve

# name -> build.py's options (None: --site-url, and served there), in the order they are built
OPTIONS = {"built_site": None, "plain_site": (), "plain_site_again": (), "cdn_site": ("--pyodide-cdn",)}


class Builds(threading.Thread):
    """The sites asked for, built one after another (they share .cache/) beside the tests; site(name)
    waits for one."""

    def __init__(self, names: list[str]):
        super().__init__(daemon=True)
        self.folder = Path(tempfile.mkdtemp(prefix="mha-sites-"))
        self.server, self.url = serve(None)
        self.names, self.done = names, {name: threading.Event() for name in names}
        self.builds: dict[str, Build] = {}
        self.stopped, self.lock = False, threading.Lock()

    def run(self):
        for name in self.names:
            options = OPTIONS[name] if OPTIONS[name] is not None else ("--site-url", self.url)
            with self.lock:
                if not self.stopped:
                    self.builds[name] = Build(self.folder / name, *options)
            if name in self.builds:
                self.builds[name].process.wait()
            self.done[name].set()

    def site(self, name: str) -> Path:
        self.done[name].wait()
        try:
            return self.builds[name].site()
        except RuntimeError as e:
            pytest.fail(str(e), pytrace=False)

    def stop(self):
        with self.lock:
            self.stopped = True
            for build in self.builds.values():
                build.process.kill()
        self.join()
        self.server.shutdown()
        shutil.rmtree(self.folder, ignore_errors=True)


builds: Builds | None = None


# The folders in the order their files run (others after them): the longest files first, so that no worker
# ends alone on one (`make test` hands files out in this order, as workers come free); the README's commands,
# which build in the same .cache/, once the sites are built; mha_core's many short files fill the end.
FOLDERS = ["tests/engines/", "tests/browser/", "tests/site/", "tests/core/"]


def pytest_collection_modifyitems(items):
    """The tests in the order of FOLDERS, the order within each kept."""
    items.sort(key=lambda item: next((i for i, folder in enumerate(FOLDERS) if item.nodeid.startswith(folder)),
                                     len(FOLDERS)))


def pytest_collection_finish(session):
    global builds
    if session.config.option.collectonly or not session.items:  # (xdist's controller collects nothing)
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}  # and their own
    if wanted := [name for name in OPTIONS if name in needed]:
        builds = Builds(wanted)
        builds.start()


def pytest_sessionfinish(session):
    if builds:
        builds.stop()


@pytest.fixture(scope="session")
def built_site() -> Path:
    builds.server.root = builds.site("built_site")
    return builds.server.root


@pytest.fixture(scope="session")
def site_url(built_site) -> str:
    return builds.url


@pytest.fixture(scope="session")
def plain_site() -> Path:
    return builds.site("plain_site")


@pytest.fixture(scope="session")
def plain_site_again() -> Path:
    return builds.site("plain_site_again")


@pytest.fixture(scope="session")
def cdn_site() -> Path:
    return builds.site("cdn_site")
