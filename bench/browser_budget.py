"""The site's performance budget, measured in headless Chromium on the built site served from 127.0.0.1.

    python bench/browser_budget.py [--site DIR] [--runs 5] [--changes 100] [--rounds 100]

One line per item of the budget: what was measured and whether it is within. The figures come from
browser_shapes.py (start-up, widget first paint, long tasks, slider) and browser_heads.py (head switch,
sentence change, unusual text), plus:
  - long tasks attributed: the widget page's, the same page with the Python worker blocked, and a page
    without widgets (Material's bundle alone), each as duration at start (ms after navigation);
    and the scripts that ran in the widget page's long animation frames, by source (runtime, widgets,
    Material);
  - pages without widgets: every one visited after its load, its requests for Pyodide or the wheel and its
    Python workers counted.
The start over real networks (and its targets) is network.py's. A busy machine gives slower figures: run it alone.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]
import browser_heads  # noqa: E402
import browser_shapes  # noqa: E402
from browser_shapes import percentile  # noqa: E402
from bench.figures import Figures  # noqa: E402
from sitevisit.chromium import chromium  # noqa: E402
from sitevisit.site import pages_with, served_site  # noqa: E402

PYTHON_FILES = re.compile(r"/assets/(pyodide|wheels)/")
LOADED = "() => document.readyState === 'complete'"


FIGURES = Figures("browser_budget")


def source(url: str, invoker: str) -> str:
    """Who ran a script: the runtime (its modules, the worker's messages), a widget, Material."""
    if "/widgets/runtime/" in url or invoker.startswith("Worker"):
        return "runtime"
    if "/widgets/" in url:
        return "widgets (" + url.rsplit("/", 1)[-1] + ")"
    if "/javascripts/" in url:
        return "Material"
    return "the page's inline scripts" if url else f"unattributed ({invoker})"


def by_source(frames: list) -> dict[str, list[float]]:
    """{source: [ms of each script run]} over long animation frames [start, duration, [[url, invoker, ms]]]."""
    runs = {}
    for _, _, scripts in frames:
        for url, invoker, ms in scripts:
            runs.setdefault(source(url, invoker), []).append(ms)
    return runs


def listed(entries: list) -> str:
    return ", ".join(f"{d:.0f} ms at {s:.0f}" for s, d in entries) or "none"


def without_widgets(browser, base: str, paths: list[str]) -> tuple[int, int]:
    """(requests for Python's files, Python workers) over the pages at paths, each a frame after its load."""
    page = browser.new_page()
    requests = []
    page.context.on("request", lambda r: requests.append(r.url))
    workers = 0
    for path in paths:
        page.goto(base + path, wait_until="load")
        page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))")
        workers += sum("/runtime/" in w.url for w in page.workers)
    page.close()
    return sum(bool(PYTHON_FILES.search(u)) for u in requests), workers


def measure(site: Path, base: str, runs: int, changes: int, rounds: int) -> dict:
    """Every figure of the budget, on the site served at base."""
    plain = [p for p in pages_with(site, "<html") if p not in pages_with(site, "data-mha-widget=")]
    shapes_url = base + pages_with(site, 'data-mha-widget="shapes"')[0] + "#mha-shapes-1"  # in view
    with chromium() as browser:
        return {"base": base, "runs": runs, "plain": plain,
                "shapes": browser_shapes.measure(browser, shapes_url, runs, changes),
                "heads": browser_heads.measure(browser, base + pages_with(site, 'data-mha-widget="heads"')[0], rounds),
                "plain_tasks": browser_shapes.longtasks_of(browser, base + plain[0], LOADED),
                "without": without_widgets(browser, base, plain)}


def print_start(m: dict) -> None:
    cold = m["shapes"]["cold"]
    print(f"performance budget, headless Chromium, {m['base']} ({m['runs']} cold loads of the shapes page)")
    print(f"- data-mha-runtime=\"ready\" after navigation (targets: network.py): median {statistics.median(cold):.0f} ms "
          f"(min {min(cold):.0f}, max {max(cold):.0f})")
    print(f"- widget first paint (Element Timing): median {statistics.median(m['shapes']['paints']):.0f} ms after "
          f"navigation (first contentful paint {m['shapes']['start']['fcp']:.0f} ms)")


def print_long_tasks(m: dict) -> None:
    """The runtime's share of the long frames, then every long task with and without it."""
    shapes = m["shapes"]
    loads = shapes["loads"] + [shapes["start"]]
    runtime_ms = max(ms for x in loads for ms in by_source(x["frames"]).get("runtime", [0]))
    ran = f"{runtime_ms:.0f} ms" if runtime_ms else "none of 5 ms or more"  # the frames list no shorter ones
    FIGURES.check(f"the runtime's longest script run in a long frame, {len(loads)} loads of the shapes page",
                  ran, "≤ 50 ms", runtime_ms <= 50)
    print(f"    long tasks, widget page with the runtime: {listed(shapes['start']['longtasks'])}")
    print(f"    long tasks, same page with the Python worker blocked: {listed(shapes['baseline'])}")
    print(f"    long tasks, a page without widgets ({m['plain'][0] or 'home'}, Material only): "
          f"{listed(m['plain_tasks'])}")
    print("    scripts in the long frames of the widget page's start-up, longest runs: " + ", ".join(
        f"{name} {max(ms):.0f} ms" for name, ms in sorted(by_source(shapes["start"]["frames"]).items())))


def print_responses(m: dict) -> None:
    times, heads = m["shapes"]["times"], m["heads"]
    FIGURES.check(f"shapes widget: slider move → updated DOM ({len(times)} moves)",
                  f"p95 {percentile(times, 95):.1f} ms, median {statistics.median(times):.1f} ms", "p95 ≤ 16 ms",
                  percentile(times, 95) <= 16)
    for key, what in (("switchDom", "heatmap in the DOM"), ("switchPainted", "heatmap painted")):
        p95 = percentile(heads[key], 95)
        FIGURES.check(f"heads widget: head switch → {what} ({len(heads[key])} switches)",
                      f"p95 {p95:.1f} ms, median {statistics.median(heads[key]):.1f} ms", "p95 ≤ 50 ms", p95 <= 50)
    p95 = percentile(heads["sentence"], 95)
    FIGURES.check(f"heads widget: sentence change → heatmap painted, Python included ({len(heads['sentence'])} changes)",
                  f"p95 {p95:.1f} ms, median {statistics.median(heads['sentence']):.1f} ms", "p95 ≤ 50 ms", p95 <= 50)
    slowest = max(heads["unusual"])
    FIGURES.check(f"heads widget: unusual text → heatmap painted, slowest of {len(heads['unusual'])} (markup, "
                  "Unicode, numbers, 10,000 characters)", f"{slowest:.0f} ms", "≤ 1000 ms", slowest <= 1000)


def print_loading(m: dict) -> None:
    requests, workers = m["without"]
    FIGURES.check(f"pages without widgets: requests for Python's files and Python workers ({len(m['plain'])} pages)",
                  f"{requests} requests, {workers} workers", "none", requests == workers == 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one now)")
    parser.add_argument("--runs", type=int, default=5, help="cold-cache loads of the shapes page")
    parser.add_argument("--changes", type=int, default=100, help="slider changes timed")
    parser.add_argument("--rounds", type=int, default=100, help="head switches timed")
    args = parser.parse_args()
    with served_site(args.site) as (site, base):
        m = measure(site, base, args.runs, args.changes, args.rounds)
    for part in (print_start, print_long_tasks, print_responses, print_loading):
        part(m)
    return 0


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
