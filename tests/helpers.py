"""What the site tests, the browser tests and the browser benchmarks share: building the site as a reader
does, serving it under a sub-path, launching the system's Chromium, and reading the shapes widget."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import build
import mha_core
from playwright.sync_api import expect, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
MOUNT = "/mha/"  # a sub-path, as https://USER.github.io/REPO/
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def build_into(out: Path, *options: str) -> Path:
    """Run `python build.py --out out [options]` as a reader of the README would; it must not warn."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "build.py"), "--out", str(out), *options],
                          capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode or "WARNING" in done.stderr:
        raise RuntimeError(f"build.py failed or warned:\n{done.stdout}\n{done.stderr}")
    return out


def serve(root: Path, mount: str = MOUNT):
    """(server, base URL) for root on 127.0.0.1; the caller shuts the server down."""
    server = build.make_server(root, 0, mount)
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


@contextlib.contextmanager
def chromium():
    """A headless system Chromium, closed on exit."""
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser
        finally:
            browser.close()


# ---------------------------------------------------------------- the shapes widget, read in the page

SHOWN = """root => ({
  ok: root.querySelector('[data-output="check"]').dataset.ok === "true",
  message: root.querySelector('[data-output="check"]').textContent,
  suggestions: [...root.querySelectorAll('[data-output="suggestions"] button')].map(b => [b.dataset.name, Number(b.dataset.value)]),
  tensors: Object.fromEntries([...root.querySelectorAll("[data-tensor]")].filter(r => !r.hidden).map(r => [r.dataset.tensor, r.dataset.shape])),
  params: Number(root.querySelector('[data-output="params"]').dataset.value),
  kv_cache: Number(root.querySelector('[data-output="kv_cache"]').dataset.value),
  flops: Number(root.querySelector('[data-output="flops"]').dataset.value),
})"""
FORM = """root => Object.fromEntries([...root.querySelectorAll('input[type="number"]')].map(i => [i.name, i.value]))"""


def expected(report: dict) -> dict:
    """What the shapes widget must show for a shape_report."""
    check = report["check"]
    out = {"ok": check["ok"], "message": check["message"],
           "suggestions": [[name, v] for name, values in check["suggestions"].items() for v in values]}
    if report["ok"]:
        out |= {"tensors": {t["name"]: ",".join(map(str, t["shape"])) for t in report["tensors"]},
                "params": report["params"]["total"], "kv_cache": report["kv_cache_bytes"], "flops": report["flops"]}
    return out


def shown(widget, keys) -> dict:
    values = widget.evaluate(SHOWN)
    return {k: values[k] for k in keys}


def assert_shows(widget, **config):
    """Wait until the shapes widget is live with mha_core's answer for config, then compare every value."""
    want = expected(mha_core.shape_report(**config))
    expect(widget.locator('[data-output="check"]')).to_have_attribute("data-ok", str(want["ok"]).lower())
    if want["ok"]:
        expect(widget.locator('[data-output="params"]')).to_have_attribute("data-value", str(want["params"]))
    expect(widget).to_have_attribute("data-state", "live")
    assert shown(widget, want) == want


def form_config(widget) -> dict:
    """The shapes widget's number fields that are filled in, as shape_report's arguments."""
    return {k: int(v) for k, v in widget.evaluate(FORM).items() if v}
