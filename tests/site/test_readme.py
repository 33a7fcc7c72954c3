"""Every command README.md shows, run as written in a copy of the repository (its .venv and .cache those of
this checkout; /tmp/ stands for a fresh temporary folder, and servers get a free port): the two set-up
commands, the quick test loop, building and serving by hand, mha_core installed into a clean venv and its example run there,
and what `make test` installs on a machine without the browsers (with stand-ins for apt-get).
`make test` is what .ci/run runs; `make bench` and Playwright's browser download are not run here, but the
table of figures must be the one bench/figures.py makes from what the benchmarks measured."""
from __future__ import annotations

import filecmp
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import urllib.request
from pathlib import Path

import pytest

from bench import figures

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SET_UP = ["make serve", "make test"]
BY_HAND = ["make test-core", "make build", ".venv/bin/python build.py --out /tmp/mha-site --pyodide-cdn",
           ".venv/bin/mkdocs build --strict", ".venv/bin/mkdocs serve"]
INSTALL = "python3 -m venv /tmp/mha-env && /tmp/mha-env/bin/pip install ."
SERVE_TIMEOUT = 120  # seconds for a server to build and say where it serves


def sh_blocks(text: str) -> list[list[str]]:
    """The commands of each ```sh block, comments dropped."""
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    return [[line.split(" #")[0].strip() for line in b.splitlines() if line.strip()] for b in blocks]


def test_the_readme_shows_two_set_up_commands_and_ci_runs_its_test_command():
    blocks = sh_blocks(README)
    assert blocks[0] == SET_UP
    assert blocks[1:] == [BY_HAND, [INSTALL]], "a command the README shows needs its test here"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert ci[-1] == SET_UP[1]


def test_the_readme_is_short_enough_to_read_in_five_minutes():
    assert len(README.splitlines()) <= 150


def test_the_readme_table_shows_the_figures_every_benchmark_of_make_bench_kept():
    make = (ROOT / "Makefile").read_text()
    benches = re.search(r"^BENCHES := (.*)$", make, re.M).group(1).split()
    kept = figures.load()
    assert set(kept) == set(benches), "run `make bench`: each benchmark keeps its figures in bench/figures.json"
    for bench, entry in kept.items():
        assert entry["figures"] and (ROOT / "bench" / f"{bench}.py").is_file(), bench
        assert all(row["what"] and row["measured"] and row["target"] for row in entry["figures"]), bench
    assert README == figures.readme_with_table(README, kept, benches), "run `make bench`, or bench/figures.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """A copy of the checkout's files (tracked or not ignored), with its .venv and .cache."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\0")
    copy = tmp_path_factory.mktemp("clone")
    for name in filter(None, listed):
        if (ROOT / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, copy / name)
    for name in (".venv", ".cache"):
        (copy / name).symlink_to((ROOT / name).resolve())
    return copy


def start(command: str, cwd: Path, tmp: Path | None = None) -> subprocess.Popen:
    """command in bash, started; given tmp, a README command, its /tmp/ standing for tmp."""
    if tmp:
        command = command.replace("/tmp/", f"{tmp}/")
    said = tempfile.TemporaryFile("w+"), tempfile.TemporaryFile("w+")  # no pipe to fill while nobody reads
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=said[0], stderr=said[1], text=True,
                               env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    process.said = said
    return process


def finished(process: subprocess.Popen) -> subprocess.CompletedProcess:
    """What a started command said, once it has succeeded."""
    process.wait(timeout=600)
    stdout, stderr = (f.seek(0) or f.read() for f in process.said)
    assert process.returncode == 0, f"{process.args[-1]}:\n{stdout}\n{stderr}"
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def run(command: str, cwd: Path, tmp: Path | None = None) -> subprocess.CompletedProcess:
    """command in bash, which must succeed (as start)."""
    return finished(start(command, cwd, tmp))


@pytest.fixture(scope="module", autouse=True)
def installing(repo, tmp_path_factory):
    """(its /tmp/, the process): README's install command, started with the module's first test so that it
    runs beside the others, which share none of its files."""
    tmp = tmp_path_factory.mktemp("install")
    process = start(INSTALL, repo, tmp)
    yield tmp, process
    process.kill()
    process.wait()


def differing(a: Path, b: Path) -> list[str]:
    cmp = filecmp.dircmp(a, b)
    out = [str(a / n) for n in cmp.left_only + cmp.right_only + cmp.diff_files + cmp.funny_files]
    return out + [p for sub in cmp.common_dirs for p in differing(a / sub, b / sub)]


def same_files(site: Path, other: Path) -> None:
    filecmp.clear_cache()
    assert differing(site, other) == []
    assert [p for p in site.rglob("*") if p.is_file() and not filecmp.cmp(p, other / p.relative_to(site), shallow=False)] == []


def test_make_build_and_mkdocs_build_make_the_same_site_as_build_py(repo, plain_site):
    """Each the very files build.py made of the checkout for this run (plain_site): the build is reproducible."""
    for command in ("make build", ".venv/bin/mkdocs build --strict"):
        run(command, repo)
        site = repo / "site"
        assert (site / "parameters-and-shapes" / "index.html").is_file()
        assert (site / "assets" / "pyodide" / "pyodide.asm.wasm.gz").is_file()
        same_files(site, plain_site)
        shutil.rmtree(site)


def test_build_py_with_pyodide_from_the_cdn(repo, tmp_path):
    run(BY_HAND[2], repo, tmp_path)
    site = tmp_path / "mha-site"
    config = (site / "assets" / "widgets" / "runtime" / "config.js").read_text()
    assert '"pyodide": "https://cdn.jsdelivr.net/pyodide/v0.27.7/full/"' in config
    assert not (site / "assets" / "pyodide").exists() and (site / "index.html").is_file()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_ctrl_c() -> None:
    """Ctrl-C reaches the server even when the tests were started with it ignored (as a background job is)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def serving(command: str, cwd: Path, port: int):
    """Start command (a server of the site on port); return (process, its output so far) once it serves."""
    process = subprocess.Popen(["bash", "-c", command], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, start_new_session=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                               preexec_fn=default_ctrl_c)
    timer = threading.Timer(SERVE_TIMEOUT, os.killpg, (process.pid, signal.SIGKILL))
    timer.start()
    lines = []
    for line in process.stdout:  # ends when the process does (or is killed by the timer)
        lines.append(line)
        if f"Serving on http://127.0.0.1:{port}/" in line:
            break
    timer.cancel()
    return process, "".join(lines)


def stop(process) -> None:
    os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C: mkdocs serve removes its temporary builds
    process.communicate(timeout=60)


@pytest.mark.parametrize("command", ["make serve PORT={port}", ".venv/bin/mkdocs serve -a 127.0.0.1:{port}"])
def test_serving_with_live_reload(repo, command):
    port = free_port()
    process, output = serving(command.format(port=port), repo, port)
    try:
        assert process.poll() is None, output
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/parameters-and-shapes/") as r:
            html = r.read().decode()
        assert 'data-mha-widget="shapes"' in html and "livereload" in html
        assert "script-src 'self' 'wasm-unsafe-eval' 'unsafe-inline';" in html  # the injected reload script runs
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/assets/pyodide/pyodide.asm.wasm.gz") as r:
            assert r.read(2) == b"\x1f\x8b"  # Python's files, gzipped, are served too
    finally:
        stop(process)


def test_make_serve_on_a_busy_port_says_so_in_one_line(repo, tmp_path):
    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        done = subprocess.run(["make", "-s", "serve", f"PORT={port}"], cwd=repo, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert said == [f"build.py: error: port {port} is not free (Address already in use): "
                    f"choose another, e.g. `make serve PORT={port + 1}`"], done.stderr


def test_make_test_core_runs_mha_core_the_quick_checks_and_the_node_tests(repo):
    """The tests it selects (each runs in this run too), the node tests among them; none that loads transformers."""
    said = run("make test-core CORE_WORKERS=0 PYTEST_ARGS=--collect-only", repo).stdout  # (workers list no tests)
    tests = re.findall(r"^(tests/\S+::\S+)", said, re.M)
    assert any(t.startswith("tests/core/") for t in tests) and "tests/site/test_widget_scripts.py::test_the_node_tests_pass" in tests
    assert not any("transformers" in t for t in tests)
    assert re.search(rf"^{len(tests)}/\d+ tests collected \(\d+ deselected\) in [\d.]+s", said, re.M), said[-2000:]


def test_make_fetch_checks_what_is_fetched(repo):
    run("make fetch", repo)


def test_mha_core_installs_into_a_clean_venv_with_numpy_only_and_the_example_holds(installing):
    tmp, process = installing
    finished(process)
    python = tmp / "mha-env" / "bin" / "python"
    elsewhere = tmp / "elsewhere"  # not the repository: the installed package is imported
    elsewhere.mkdir()
    out = run(f'{python} -c "import mha_core; print(mha_core.param_count(512, 8), mha_core.__file__)"', elsewhere)
    count, path = out.stdout.split()
    assert count == "1050624" and path.startswith(str(tmp / "mha-env"))
    installed = run(f"{python} -m pip list --format=freeze", elsewhere).stdout.lower()
    assert {line.split("==")[0] for line in installed.split()} - {"pip", "setuptools"} == {"mha-core", "numpy"}
    (block,) = re.findall(r"^```pycon\n(.*?)^```", README, re.S | re.M)
    (elsewhere / "example.txt").write_text(block, encoding="utf-8")
    examples = run(f"{python} -m doctest -v example.txt", elsewhere).stdout
    assert re.search(r"^[1-9]\d* passed and 0 failed\.$", examples, re.M), examples


# Stand-ins for a machine without the browsers or Java, as root: apt-get holds dpkg's lock while it runs (a second
# one at the same time fails, as Debian's does) and "installs" by leaving a mark; python3 -m sitevisit.chromium or
# sitevisit.engines finds its engine once marked.
FAKE_APT_GET = """#!/bin/sh
mkdir "$FAKE/dpkg-lock" 2>/dev/null || { echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100; }
[ "$1" = install ] && for arg in "$@"; do case $arg in -*|install) ;; *) touch "$FAKE/installed/$arg";; esac; done
sleep 0.5
rmdir "$FAKE/dpkg-lock"
"""
FAKE_PYTHON = """#!/bin/sh
case "$2" in sitevisit.chromium) test -e "$FAKE/installed/chromium-headless-shell";;
             sitevisit.engines) test -e "$FAKE/installed/firefox-esr" && test -e "$FAKE/installed/webkit2gtk-driver";;
             *) exit 2;; esac
"""
FAKE_ID = "#!/bin/sh\necho 0\n"


def test_make_test_installs_what_is_missing_with_one_apt_get_at_a_time(tmp_path):
    """`make -j2 … browsers`, as make test calls it, on a machine missing Chromium, Firefox, WebKitGTK and Java:
    every package is installed, and no apt-get runs beside another (dpkg's lock would refuse it)."""
    (tmp_path / "installed").mkdir()
    bin_ = tmp_path / "bin"  # the only PATH: no java, whatever this machine has
    bin_.mkdir()
    for name, text in {"apt-get": FAKE_APT_GET, "python": FAKE_PYTHON, "id": FAKE_ID}.items():
        (bin_ / name).write_text(text)
        (bin_ / name).chmod(0o755)
    for tool in ("mkdir", "rmdir", "sleep", "touch"):
        (bin_ / tool).symlink_to(shutil.which(tool))
    for name in ("Makefile", "requirements.txt", "requirements-test.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    # The requirements, then what installing them and the engines' npm packages leaves, each older than the next.
    made = ["requirements.txt", "requirements-test.txt", ".venv/.site", ".venv/.test", "engines/package-lock.json",
            "engines/node_modules/.package-lock.json"]
    for when, name in enumerate(made):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
        os.utime(tmp_path / name, (1e9 + when,) * 2)
    done = subprocess.run([shutil.which("make"), "-j2", "browsers", f"PY={bin_ / 'python'}", "ENGINES_JS=engines"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env={"PATH": str(bin_), "FAKE": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in (tmp_path / "installed").iterdir()) == [
        "chromium", "chromium-headless-shell", "default-jre-headless", "firefox-esr", "webkit2gtk-driver", "xvfb"]
