"""What the site tests, the browser tests and the browser benchmarks share: building the site as a reader
does, serving it under a sub-path, launching Chromium, and reading and driving the two widgets."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import mha_core
import pytest
from playwright.sync_api import expect, sync_playwright

from sitebuild.serving import make_server

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


def serve(root: Path, mount: str = MOUNT, caching: str | None = None):
    """(server, base URL) for root on 127.0.0.1 (caching: the Cache-Control sent); the caller shuts it down."""
    server = make_server(root, 0, mount, caching)
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


def find_chromium(playwright) -> str:
    """The Chromium the browser tests drive: $CHROMIUM if set, else Playwright's own if installed
    (`python -m playwright install chromium`), else the system's."""
    for path in (os.environ.get("CHROMIUM"), playwright.chromium.executable_path,
                 shutil.which("chromium"), shutil.which("chromium-browser")):
        if path and Path(path).is_file():
            return path
    raise RuntimeError("No Chromium for the browser tests: install Playwright's "
                       "(`.venv/bin/python -m playwright install chromium`) or the system's "
                       "(as root: `apt-get install chromium`), or set CHROMIUM to one")


def launch_chromium(playwright):
    return playwright.chromium.launch(executable_path=find_chromium(playwright), args=CHROMIUM_ARGS)


@contextlib.contextmanager
def chromium():
    """A headless Chromium (find_chromium's), closed on exit."""
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
  params: root.querySelector('[data-output="params"]').dataset.value,
  kv_cache: root.querySelector('[data-output="kv_cache"]').dataset.value,
  flops: root.querySelector('[data-output="flops"]').dataset.value,
})"""
FORM = """root => Object.fromEntries([...root.querySelectorAll('input[type="number"]')].map(i => [i.name, i.value]))"""


def expected(report: dict) -> dict:
    """What the shapes widget must show for a shape_report."""
    check = report["check"]
    out = {"ok": check["ok"], "message": check["message"],
           "suggestions": [[name, v] for name, values in check["suggestions"].items() for v in values]}
    if report["ok"]:
        out |= {"tensors": {t["name"]: ",".join(map(str, t["shape"])) for t in report["tensors"]},
                "params": str(report["params"]["total"]), "kv_cache": str(report["kv_cache_bytes"]),
                "flops": str(report["flops"])}  # exact digits, as the widget holds them
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


# ---------------------------------------------------------------- the heads widget

SENTENCE = "Mary gave John a book; later, Mary gave John a pen."
READ = """root => ({
  cells: [...root.querySelectorAll("td[data-q][data-k][data-weight]")].map(td => [+td.dataset.q, +td.dataset.k, td.dataset.weight]),
  masked: [...root.querySelectorAll("td[data-masked]")].length,
  labels: [...root.querySelectorAll("[data-token-index]")].map(el => [el.dataset.axis, +el.dataset.tokenIndex, el.textContent]),
})"""
# Times the next change of the sentence: from the change event (seen first, on the way down to the field)
# to data-state="live", into window.__answeredMs.
TIME_ANSWER = """root => {
  window.__answer?.disconnect();
  window.__answeredMs = null;
  let t0 = null;
  root.addEventListener("change", () => { t0 = performance.now(); }, { capture: true, once: true });
  window.__answer = new MutationObserver(() => {
    if (t0 === null || root.dataset.state !== "live") return;
    window.__answeredMs = performance.now() - t0;
    window.__answer.disconnect();
  });
  window.__answer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
}"""


def tokens_of(text: str) -> list[str]:
    """The tokens the widget must label (mha_core's tokenizer, itself tested case by case in tests/core)."""
    return mha_core.tokenize(text)


def heatmap(read: dict, n: int) -> list[list[float | None]]:
    """[n, n] weights from the DOM cells; None where nothing is drawn."""
    W = [[None] * n for _ in range(n)]
    for q, k, weight in read["cells"]:
        assert re.fullmatch(r"\d\.\d{4}", weight), weight  # 4 decimals
        W[q][k] = float(weight)
    return W


def check_layout(read: dict, tokens: list[str]) -> list[list[float | None]]:
    """Token labels on both axes (and in the sentence), the causal triangle drawn, the rest masked."""
    n = len(tokens)
    for axis in ("query", "key", "sentence"):
        assert [(i, text) for a, i, text in read["labels"] if a == axis] == list(enumerate(tokens)), axis
    W = heatmap(read, n)
    assert all((W[q][k] is None) == (k > q) for q in range(n) for k in range(n))
    assert read["masked"] == n * (n - 1) // 2
    for row in W:
        assert sum(w for w in row if w is not None) == pytest.approx(1, abs=1e-3 * n)
    return W


def show_sentence(widget, text: str) -> float | None:
    """Type a sentence and leave the field, as a reader does (applied on change); wait for its patterns.
    Returns the milliseconds from the change to data-state="live" (None if the text was already there)."""
    widget.evaluate(TIME_ANSWER)
    field = widget.locator('textarea[name="sentence"]')
    field.fill(text)
    field.press("Tab")
    expect(widget).to_have_attribute("data-state", "live")
    return widget.evaluate("() => window.__answeredMs")



# ---------------------------------------------------------------- the memory and worked-example widgets

def check_small_widget(name, widget, value) -> None:
    """The memory widget's strides (h = value) or the worked example's output (seed = value) are mha_core's."""
    if name == "memory":
        want = mha_core.memory_steps(int(widget.get_attribute("data-n")), value, widget.get_attribute("data-wrong") == "true")
        shown = widget.evaluate("root => [...root.querySelectorAll('[data-output=\"steps\"] > li')].map(li => li.dataset.strides)")
        assert shown == [",".join(map(str, s["strides_bytes"])) for s in want["steps"]]
    else:
        want = mha_core.worked_example(value)["matrices"]["out"]["text"]
        shown = widget.evaluate("root => [...root.querySelector('table[data-matrix=\"out\"]').rows].map(r => [...r.querySelectorAll('td')].map(td => td.textContent))")
        assert shown == want


# ---------------------------------------------------------------- any widget

# Each widget's field a change goes into, and the key that applies it.
FIELDS = {"shapes": ('input[type="number"][name="batch"]', "Enter"), "heads": ('textarea[name="sentence"]', "Tab"),
          "training": ('input[name="text"]', "Enter")}


# ---------------------------------------------------------------- the one-vs-many widget, read in the page

def one_vs_many_form(widget) -> dict:
    """The widget's controls as one_vs_many's arguments."""
    return widget.evaluate("""root => ({subject: root.querySelector('input[name="subject"]').valueAsNumber,
      clause: root.querySelector('input[name="clause"]').valueAsNumber,
      previous: root.querySelector('input[name="previous"]').valueAsNumber,
      wide: root.querySelector('input[name="wide"]').checked})""")


def one_vs_many_outputs(widget) -> dict:
    """{data-output: data-value} of every output the widget shows."""
    return widget.evaluate("root => Object.fromEntries([...root.querySelectorAll('[data-output]')].map(e => [e.dataset.output, e.dataset.value]))")


def one_vs_many_expected(**args) -> dict:
    """{data-output: data-value} as mha_core computes them for the controls' values."""
    from mha_core.one_vs_many import RELATIONSHIPS, one_vs_many
    r = one_vs_many(**args)
    out = {f"share-{rel}": r["shown_shares"][i]["value"] for i, rel in enumerate(RELATIONSHIPS)}
    for name in ("one", "many"):
        layer = r[name]
        out |= {f"{name}-label": str(layer["n_heads"]), f"{name}-number": layer["shown"]["number"]["value"],
                f"{name}-verb": layer["verb_form"]}
        out |= {f"{name}-{rel}": layer["shown"]["arrives"][i]["value"] for i, rel in enumerate(RELATIONSHIPS)}
    return out


def ask(name, widget, value) -> None:
    """Change the widget's input (batch, a sentence, the training widget's text, the heads drawn in memory,
    the worked example's numbers, drawn anew up to seed value, or a key pressed on the one-vs-many widget's
    subject slider) without waiting for an answer."""
    if name == "memory":
        return widget.locator('select[name="n_heads"]').select_option(str(value))
    if name == "worked":
        return widget.locator('[data-action="redraw"]').click()
    if name == "one-vs-many":  # value: a key pressed on the subject's slider
        return widget.locator('input[name="subject"]').press(value)
    selector, key = FIELDS[name]
    field = widget.locator(selector)
    field.fill(str(value))
    field.press(key)


def check_answered(name, widget, value) -> None:
    """The widget is live with Python's answer for value."""
    if name == "shapes":
        assert_shows(widget, **{**form_config(widget), "batch": value})
    elif name in ("memory", "worked"):
        expect(widget).to_have_attribute("data-state", "live")
        expect(widget).to_have_attribute("data-h" if name == "memory" else "data-seed", str(value))
        check_small_widget(name, widget, value)
    elif name == "one-vs-many":
        expect(widget).to_have_attribute("data-state", "live")
        assert one_vs_many_outputs(widget) == one_vs_many_expected(**one_vs_many_form(widget))
    elif name == "training":  # the heatmap shows the text's tokens
        expect(widget).to_have_attribute("data-state", "live")
        expect(widget.locator("thead [data-token-index]")).to_have_text(tokens_of(value))
    else:
        expect(widget).to_have_attribute("data-state", "live")
        check_layout(widget.evaluate(READ), tokens_of(value))


# The memory Python's first start keeps in Cache Storage (widgets/runtime/memory.js), for a revisit.
HEX = """const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)),
                                        (x) => x.toString(16).padStart(2, "0")).join("");"""
# The key of the memory kept in Cache Storage once it is whole (readable, and its bytes those of its sha256).
KEPT_MEMORY = """async () => {
  %s
  const store = await caches.open("mha-python");
  const key = (await store.keys()).map((r) => r.url).find((url) => url.includes("/python-memory?"));
  const kept = key && await store.match(key);
  if (!kept) return null;
  return (await hex(await kept.arrayBuffer())) === kept.headers.get("X-Content-SHA256") ? key : null;
}""" % HEX


def kept_memory(page) -> str:
    """The Cache Storage key of the memory Python's start kept (waited for: it is kept after ready)."""
    for _ in range(120):
        key = page.evaluate(KEPT_MEMORY)
        if key:
            return key
        page.wait_for_timeout(250)
    raise AssertionError("no memory was kept within 30 s of ready")


if __name__ == "__main__":  # `python -m tests.helpers`: the Chromium the browser tests would drive (make chromium)
    with sync_playwright() as p:
        try:
            print(find_chromium(p))
        except RuntimeError as e:
            sys.exit(str(e))

