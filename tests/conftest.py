"""The sites every test directory shares, each built once per test run by build.py as a reader builds it:
built_site (served at site_url, and built for that address, as instant navigation needs: the browser and
engine tests), plain_site (no options), cdn_site (--pyodide-cdn: without Pyodide's files) and model_cdn_site
(--model-cdn: the real model taken from its wheel on a CDN, played by a server on another port, model_cdn_url).

The process that runs the session (pytest itself, or xdist's controller when `make test` spreads the tests
over workers) picks the folder they are built into and serves built_site's address until the run ends. From
the moment its tests are collected, each process builds the sites they need that no other process is building
yet, one after another, beside the tests; a test waits only for its own site, built here or elsewhere."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from sitevisit.cdn import serve_wheel
from sitevisit.site import SharedBuilds, serve

# name -> build.py's options ({site}: built_site's address, where it is served; {wheel}: the model's wheel's), in
# the order they are built
OPTIONS = {"built_site": ("--site-url", "{site}"), "plain_site": (), "cdn_site": ("--pyodide-cdn",),
           "model_cdn_site": ("--model-cdn", "{wheel}")}
SHARED = "mha_sites"  # the controller's (folder, url, wheel url), as xdist hands it to each worker

shared: tuple[Path, str, str] | None = None  # (the sites' folder, built_site's URL, the model's wheel's URL)
served = []  # the servers of built_site and of the model's wheel, in the process that runs the session
sites: SharedBuilds | None = None


def pytest_configure(config):
    global shared, served
    if hasattr(config, "workerinput"):
        folder, url, wheel_url = config.workerinput[SHARED]
        shared = Path(folder), url, wheel_url
    else:
        folder = Path(tempfile.mkdtemp(prefix="mha-sites-"))
        (site, url), (cdn, wheel_url) = serve(folder / "built_site"), serve_wheel()
        served.extend([site, cdn])
        shared = folder, url, wheel_url


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """xdist's controller hands each worker the sites' folder and address."""
    node.workerinput[SHARED] = (str(shared[0]), *shared[1:])


def pytest_unconfigure(config):
    if served:
        for server in served:
            server.shutdown()
        shutil.rmtree(shared[0], ignore_errors=True)


# The folders (or files) in the order their files run (a file goes with the longest entry it is in; others run
# last): mha_core's and mha_page's many short files first, as they need no site and keep both cores busy while
# the sites are built (for some 20 s where .cache/ is still empty: `make test` fills it first); then the longest
# files, so that no worker ends alone on one (`make test` hands files out in this order, as workers come free):
# the README's commands, the other engines, the browser, the real model against transformers; the build's
# short checks last.
FOLDERS = ["tests/core/", "tests/page/", "tests/site/test_readme.py", "tests/engines/", "tests/browser/",
           "tests/core/llama/", "tests/site/"]


def folder_rank(nodeid: str) -> int:
    """The place in FOLDERS of the longest entry holding the test nodeid (len(FOLDERS) if none)."""
    held = [folder for folder in FOLDERS if nodeid.startswith(folder)]
    return FOLDERS.index(max(held, key=len)) if held else len(FOLDERS)


def pytest_addoption(parser):
    parser.addoption("--reverse", action="store_true",
                     help="run each file's tests in the reverse of their order (none may depend on those before it)")


def pytest_collection_modifyitems(config, items):
    """The tests in the order of FOLDERS, the order within each kept (or reversed, with --reverse)."""
    if config.getoption("reverse"):
        items.reverse()
    items.sort(key=lambda item: folder_rank(item.nodeid))


def pytest_collection_finish(session):
    global sites
    if session.config.option.collectonly or not session.items:  # (xdist's controller collects nothing)
        return
    needed = {name for item in session.items for name in getattr(item, "fixturenames", ())}  # and their own
    folder, url, wheel_url = shared
    sites = SharedBuilds(folder, {name: tuple(option.format(site=url, wheel=wheel_url) for option in options)
                                  for name, options in OPTIONS.items() if name in needed})
    sites.start()


def pytest_sessionfinish(session):
    if sites:
        sites.stop()


def built(name: str) -> Path:
    """The site name once it is built, here or by another worker; the test fails with what build.py said if
    that build failed."""
    try:
        return sites.site(name)
    except RuntimeError as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture(scope="session")
def built_site() -> Path:
    return built("built_site")


@pytest.fixture(scope="session")
def site_url(built_site) -> str:
    return shared[1]


@pytest.fixture(scope="session")
def plain_site() -> Path:
    return built("plain_site")


@pytest.fixture(scope="session")
def cdn_site() -> Path:
    return built("cdn_site")


@pytest.fixture(scope="session")
def model_cdn_site() -> Path:
    return built("model_cdn_site")


@pytest.fixture(scope="session")
def model_cdn_url() -> str:
    """The URL model_cdn_site takes the model's wheel from: a server on 127.0.0.1, another port than the site's."""
    return shared[2]
