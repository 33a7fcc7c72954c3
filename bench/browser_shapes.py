"""Benchmark of the shapes widget in headless Chromium, on the built site served from 127.0.0.1.

    python bench/browser_shapes.py [--site DIR] [--runs 5] [--changes 100]

Prints, as measured: navigation -> <html data-mha-runtime="ready"> (cold and warm cache), the widget's
first paint (Element Timing), input change -> updated DOM (median, p95, max) and main-thread long
tasks (PerformanceObserver "longtask") during start-up, also with the Python worker blocked (what the
page costs without the runtime), and during the changes. Long animation frames (with the scripts that
ran in them) are recorded too, for browser_budget.py to attribute.
Targets: ready <= 3 s, p95 <= 16 ms, no main-thread task over 50 ms caused by the runtime.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_window import open_window  # noqa: E402
from sitevisit.chromium import chromium  # noqa: E402
from sitevisit.site import pages_with, served_site  # noqa: E402

# Runs before the page's own scripts: record long tasks, the widget's paint and the moment of "ready".
OBSERVE = """
window.__bench = { longtasks: [], frames: [], element: null, ready: null };
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) __bench.longtasks.push([e.startTime, e.duration]);
}).observe({ type: "longtask", buffered: true });
new PerformanceObserver((list) => {  // long animation frames, with the scripts (over 5 ms) that ran in them
  for (const e of list.getEntries()) {
    __bench.frames.push([e.startTime, e.duration, e.scripts.map((s) => [s.sourceURL, s.invoker, s.duration])]);
  }
}).observe({ type: "long-animation-frame", buffered: true });
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.identifier === "mha-shapes") __bench.element ??= e.renderTime || e.loadTime;
}).observe({ type: "element", buffered: true });
new MutationObserver(() => {
  if (document.documentElement.dataset.mhaRuntime === "ready") __bench.ready ??= performance.now();
}).observe(document, { subtree: true, attributes: true, attributeFilter: ["data-mha-runtime"] });
"""

# Moves the seq_len slider n times, each time once the previous frame has been drawn; waits for the x row
# to show the new n (one shape_report round trip through the worker) and records the milliseconds from
# the input event to that DOM update.
CHANGES = """async (n) => {
  const root = document.querySelector('[data-mha-widget="shapes"]');
  const slider = root.querySelector('input[type="range"][name="seq_len"]');
  const row = root.querySelector('[data-tensor="x"]');
  const times = [];
  for (let i = 0; i < n; i++) {
    const step = 4 + (i % 2); // the slider steps by powers of two: n = 16, 32, 16, ...
    const value = String(2 ** step);
    const updated = new Promise((resolve, reject) => {
      setTimeout(() => reject(new Error(`n=${value} was not shown within 5 s`)), 5000);
      const observer = new MutationObserver(() => {
        if (row.dataset.shape.split(",")[1] === value) { observer.disconnect(); resolve(performance.now()); }
      });
      observer.observe(row, { attributes: true, attributeFilter: ["data-shape"] });
    });
    const t0 = performance.now();
    slider.value = String(step);
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    times.push((await updated) - t0);
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0))); // after the frame
  }
  return times;
}"""


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def load(page, url: str, reload: bool = False) -> dict:
    page.reload() if reload else page.goto(url)
    page.wait_for_function("() => window.__bench.ready !== null && window.__bench.element !== null", timeout=30_000)
    return page.evaluate("""() => ({...window.__bench,
      fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
      worker: performance.getEntriesByType("resource").find((e) => e.name.endsWith("/runtime/worker.js"))?.startTime})""")


def longtasks_of(browser, url: str, until: str, block: re.Pattern | None = None) -> list:
    """[start, duration] of the main-thread long tasks of a fresh load of url, 3 s after the JS function
    `until` holds; requests matching block are refused."""
    context = browser.new_context()
    context.add_init_script(OBSERVE)
    if block:
        context.route(block, lambda route: route.abort())
    page = open_window(context)
    page.goto(url)
    page.wait_for_function(until)
    page.wait_for_timeout(3000)  # the page's own start-up work (a bench, not a test: a plain wait is fine)
    entries = page.evaluate("window.__bench.longtasks")
    context.close()
    return entries


def without_runtime(browser, url: str) -> list:
    """Long tasks of the same page with the Python worker blocked: what the rest of the page costs."""
    return longtasks_of(browser, url, "() => document.documentElement.dataset.mhaRuntime === 'error' && "
                        "window.__bench.element !== null", re.compile(r".*/runtime/worker\.js$"))


def tasks(entries: list) -> str:
    durations = [d for start, d in entries]
    return f"{len(durations)} (longest {max(durations):.0f} ms)" if durations else "none"


def measure(browser, url: str, runs: int, changes: int) -> dict:
    """The figures above for the shapes widget's page at url (see report())."""
    loads, warm = [], []
    for _ in range(runs):
        context = browser.new_context()
        context.add_init_script(OBSERVE)
        page = open_window(context)
        loads.append(load(page, url))
        warm.append(load(page, url, reload=True)["ready"])
        context.close()
    baseline = without_runtime(browser, url)
    context = browser.new_context()
    context.add_init_script(OBSERVE)
    page = open_window(context)
    complaints = []
    page.on("console", lambda m: m.type in ("error", "warning") and complaints.append(m.text))
    start = load(page, url)
    since = page.evaluate("performance.now()")
    times = page.evaluate(CHANGES, changes)
    after = page.evaluate("window.__bench.longtasks")
    context.close()
    return {"loads": loads, "cold": [x["ready"] for x in loads], "warm": warm, "paints": [x["element"] for x in loads],
            "baseline": baseline, "start": start, "times": times, "during": [t for t in after if t[0] >= since],
            "complaints": complaints}


def report(url: str, m: dict) -> None:
    cold, warm, times = m["cold"], m["warm"], m["times"]
    print(f"page: {url}")
    print(f"navigation -> data-mha-runtime=ready: cold cache median {statistics.median(cold):.0f} ms "
          f"(min {min(cold):.0f}, max {max(cold):.0f}, {len(cold)} loads); warm cache median {statistics.median(warm):.0f} ms")
    print(f"widget first paint (Element Timing): median {statistics.median(m['paints']):.0f} ms; "
          f"first contentful paint {m['start']['fcp']:.0f} ms")
    print(f"input change -> updated DOM ({len(times)} slider moves): median {statistics.median(times):.1f} ms, "
          f"p95 {percentile(times, 95):.1f} ms, max {max(times):.1f} ms")
    print(f"main-thread long tasks (> 50 ms): start-up {tasks(m['start']['longtasks'])} "
          f"[same page, Python worker blocked: {tasks(m['baseline'])}]; during the changes {tasks(m['during'])}")
    complaints = m["complaints"]
    print(f"console errors and warnings: {len(complaints)}" + "".join(f"\n  {c}" for c in complaints[:5]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--site", type=Path, help="a built site (default: build one now)")
    parser.add_argument("--runs", type=int, default=5, help="cold-cache page loads")
    parser.add_argument("--changes", type=int, default=100, help="slider changes timed")
    args = parser.parse_args()
    with served_site(args.site) as (site, base):
        url = base + pages_with(site, 'data-mha-widget="shapes"')[0] + "#mha-shapes-1"  # in view: Element Timing
        with chromium() as browser:
            figures = measure(browser, url, args.runs, args.changes)
    report(url, figures)

if __name__ == "__main__":
    main()
