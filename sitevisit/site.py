"""The site built as a reader of the README builds it (once for all the processes of a test run: SharedBuilds),
and served under a sub-path as GitHub Pages serves a project."""
from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from sitebuild.serving import make_server

ROOT = Path(__file__).resolve().parents[1]
MOUNT = "/mha/"  # a sub-path, as https://USER.github.io/REPO/


class Build:
    """`python build.py --out out [options]` run as a reader of the README would, in the background;
    site() waits for it and returns out, or raises if it failed or warned."""

    def __init__(self, out: Path, *options: str):
        self.out = out
        self.said = tempfile.TemporaryFile("w+")  # its output, which no pipe could hold unread
        self.process = subprocess.Popen([sys.executable, str(ROOT / "build.py"), "--out", str(out), *options],
                                        stdout=self.said, stderr=subprocess.STDOUT, text=True, cwd=ROOT,
                                        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})

    def site(self) -> Path:
        failed = self.process.wait()
        self.said.seek(0)
        said = self.said.read()
        if failed or "WARNING" in said:
            raise RuntimeError(f"build.py failed or warned:\n{said}")
        return self.out


class SharedBuilds(threading.Thread):
    """Sites built once for every process that shares folder (the workers of one test run): name/ holds the
    site, name.lock is held by whoever is building it, and name.built is written once the build has ended:
    empty if it succeeded, else what build.py said. run() builds, one after another, the sites named in
    options ({name: build.py's options}) that nobody else is building; site(name) waits for one."""

    def __init__(self, folder: Path, options: dict[str, tuple[str, ...]]):
        super().__init__(daemon=True)
        self.folder, self.options = folder, options
        self.building: list[Build] = []  # (site() builds one that a stopped process left unbuilt)
        self.stopped, self.lock = False, threading.Lock()

    def ended(self, name: str) -> Path:
        """name.built: written once name's build has ended."""
        return self.folder / f"{name}.built"

    def run(self):
        for name in self.options:
            self.build(name, wait=False)

    def build(self, name: str, wait: bool) -> None:
        """Build name unless it is built; if someone else is building it, wait for them (wait) or leave it."""
        built = self.ended(name)
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
                build = Build(self.folder / name, *self.options[name])
                self.building.append(build)
            try:
                build.site()
                said = ""
            except RuntimeError as e:
                said = str(e)
            if not self.stopped:
                built.write_text(said, encoding="utf-8")

    def site(self, name: str) -> Path:
        """name's folder once it is built; raises RuntimeError with what build.py said if it failed."""
        self.build(name, wait=True)
        built = self.ended(name)
        if not built.exists():
            raise RuntimeError(f"{name} was not built: the run is stopping")
        if said := built.read_text(encoding="utf-8"):
            raise RuntimeError(said)
        return self.folder / name

    def stop(self):
        """Kill the builds under way here (whoever needs one next builds it) and build nothing more."""
        with self.lock:
            self.stopped = True
            for build in self.building:
                build.process.kill()
        self.join()


def build_into(out: Path, *options: str) -> Path:
    """Build the site into out as a reader of the README would (Build), and wait for it."""
    return Build(out, *options).site()


def serve(root: Path, mount: str = MOUNT, caching: str | None = None, compress: bool = False):
    """(server, base URL) for root on 127.0.0.1 (caching: the Cache-Control sent; compress: text gzip'd, as
    GitHub Pages sends it); the caller shuts it down."""
    server = make_server(root, 0, mount, caching, compress)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_port}{mount}"


@contextlib.contextmanager
def served_site(site: Path | None = None):
    """(site, base URL): site, or one built now into a temporary folder (removed on exit), served."""
    with tempfile.TemporaryDirectory(prefix="mha-site-") as tmp:
        site = site or build_into(Path(tmp) / "site")
        server, base = serve(site)
        try:
            yield site, base
        finally:
            server.shutdown()


def pages_with(site: Path, marker: str) -> list[str]:
    """URL paths (relative to the site) of the pages whose HTML holds marker."""
    return sorted(p.parent.relative_to(site).as_posix() + "/" for p in site.rglob("index.html")
                  if marker in p.read_text(encoding="utf-8"))
