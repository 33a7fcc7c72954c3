"""The sites every test directory shares, each built once per test run by build.py as a reader builds it:
built_site (served at site_url, and built for that address, as instant navigation needs: the browser and
engine tests), plain_site and plain_site_again (no options: two, to compare) and cdn_site (--pyodide-cdn:
without Pyodide's files).

The process that runs the session (pytest itself, or xdist's controller when `make test` spreads the tests
over workers) picks the folder they are built into and serves built_site's address until the run ends. From
the moment its tests are collected, each process builds the sites they need that no other process is building
yet, one after another, beside the tests; a test waits only for its own site, built here or elsewhere."""
from __future__ import annotations

import fcntl
import shutil
import tempfile
import threading
from pathlib import Path

import pytest

from sitevisit.site import Build, serve

# name -> build.py's options (None: --site-url, and served there), in the order they are built
OPTIONS = {"built_site": None, "plain_site": (), "plain_site_again": (), "cdn_site": ("--pyodide-cdn",)}
SHARED = "mha_sites"  # the controller's (folder, url), as xdist hands it to each worker


class Sites(threading.Thread):
    """The sites of this run, in one folder that every process of the run shares: name/ holds the site,
    name.lock is held by the process building it, and name.built is written once it is built (empty) or has
    failed (what build.py said). run() builds, one after another, the sites asked for that no one else is
    building; site(name) waits for one."""

    def __init__(self, folder: Path, url: str, names: list[str]):
        super().__init__(daemon=True)
        self.folder, self.url, self.names = folder, url, names
        self.building: list[Build] = []  # (a test's site() builds one that a stopped process left unbuilt)
        self.stopped, self.lock = False, threading.Lock()

    def run(self):
        for name in self.names:
            self.build(name, wait=False)

    def build(self, name: str, wait: bool) -> None:
        """Build name unless it is built; if another process (or thread) is building it, wait for that build
        (wait) or leave it to it."""
        built = self.folder / f"{name}.built"
        with open(self.folder / f"{name}.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            if built.exists():
                return
            with self.lock:
                if self.stopped:
                    return
                options = OPTIONS[name] if OPTIONS[name] is not None else ("--site-url", self.url)
                build = Build(self.folder / name, *options)
                self.building.append(build)
            try:
                build.site()
                said = ""
            except RuntimeError as e:
                said = str(e)
            if not self.stopped:
                built.write_text(said, encoding="utf-8")

    def site(self, name: str) -> Path:
        self.build(name, wait=True)
        built = self.folder / f"{name}.built"
        if not built.exists():
            pytest.fail(f"{name} was not built: the run is stopping", pytrace=False)
        if said := built.read_text(encoding="utf-8"):
            pytest.fail(said, pytrace=False)
        return self.folder / name

    def stop(self):
        with self.lock:
            self.stopped = True
            for build in self.building:
                build.process.kill()
        self.join()


shared: tuple[Path, str] | None = None  # (the sites' folder, built_site's URL)
served = None  # the server of built_site, in the process that runs the session
sites: Sites | None = None


def pytest_configure(config):
    global shared, served
    if hasattr(config, "workerinput"):
        folder, url = config.workerinput[SHARED]
        shared = Path(folder), url
    else:
        folder = Path(tempfile.mkdtemp(prefix="mha-sites-"))
        served, url = serve(folder / "built_site")
        shared = folder, url


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller hands each worker the sites' folder and address."""
    node.workerinput[SHARED] = (str(shared[0]), shared[1])


def pytest_unconfigure(config):
    if served:
        served.shutdown()
        shutil.rmtree(shared[0], ignore_errors=True)


# The folders in the order their files run (others after them): the longest files first, so that no worker
# ends alone on one (`make test` hands files out in this order, as workers come free); the README's commands,
# which build in the same .cache/, once the sites are built; mha_core's many short files fill the end.
FOLDERS = ["tests/engines/", "tests/browser/", "tests/site/", "tests/core/"]


def pytest_collection_modifyitems(items):
    """The tests in the order of FOLDERS, the order within each kept."""
    items.sort(key=lambda item: next((i for i, folder in enumerate(FOLDERS) if item.nodeid.startswith(folder)),
                                     len(FOLDERS)))


def pytest_collection_finish(session):
    global sites
    if session.config.option.collectonly or not session.items:  # (xdist's controller collects nothing)
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}  # and their own
    sites = Sites(*shared, [name for name in OPTIONS if name in needed])
    sites.start()


def pytest_sessionfinish(session):
    if sites:
        sites.stop()


@pytest.fixture(scope="session")
def built_site() -> Path:
    return sites.site("built_site")


@pytest.fixture(scope="session")
def site_url(built_site) -> str:
    return sites.url


@pytest.fixture(scope="session")
def plain_site() -> Path:
    return sites.site("plain_site")


@pytest.fixture(scope="session")
def plain_site_again() -> Path:
    return sites.site("plain_site_again")


@pytest.fixture(scope="session")
def cdn_site() -> Path:
    return sites.site("cdn_site")
