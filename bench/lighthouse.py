"""Lighthouse on every page of the site, in its mobile mode (a phone: a Moto G Power's screen, a mid-tier phone's CPU
and a slow 4G link, simulated from one unthrottled load), the site built with its address and served as GitHub
Pages serves it (text gzip'd, connections kept open, Cache-Control max-age=600). Lighthouse is pinned by
bench/npm/package-lock.json (`npm ci --prefix bench/npm`, which `make bench` runs); every run is made in one whole
Chromium (sitevisit/chromium.py's), started once (a reader's browser is running already), each run in a fresh tab
with the site's cache and storage cleared (Lighthouse's default).

    python bench/lighthouse.py [--runs 3] [--pages / mechanism ...] [--cpu-slowdown 4]

The phone's CPU is this machine's, slowed down. Lighthouse's default slowdown, 4×, makes a mid-tier phone of a
desktop whose benchmarkIndex (Lighthouse's measure of a machine's speed) is about 1,533; on a slower machine it
makes a slower phone, and on a faster one a faster phone: Lighthouse's documentation advises calibrating the
slowdown to the machine (docs/throttling.md, "Calibrating the CPU slowdown"). So the machine's benchmarkIndex is
measured first (the median of three Lighthouse runs on the home page), and the slowdown is the one Lighthouse's
calculator gives for it (6× at 2,000); each page's line prints the benchmarkIndex of its own runs, the slowdown the
calculator gives for that, and the slowdown they were made with: on a machine shared with other work the two differ,
and the page's figures are those of a slower or faster phone. --cpu-slowdown sets the slowdown instead.

Prints, per page, the median of the runs of each category's score and of the main metrics (First and Largest
Contentful Paint, Speed Index, Total Blocking Time, Cumulative Layout Shift, the number of DOM elements), and
exits 1 if a page's performance is under 90 or its accessibility, best practices or SEO under 100. Each run's
report (HTML and JSON) is left in bench/out/lighthouse/, with the audits that explain a score. A busy machine
lengthens the blocking time above all, and the paints too when it holds back the unthrottled load's own first paint
(the simulation counts every request made before it): the load average is printed before and after.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
from bench.figures import Figures  # noqa: E402
from bench.host import cpu_slowdown, speed_words  # noqa: E402
from sitebuild.serving import GITHUB_PAGES_CACHING  # noqa: E402
from sitevisit.chromium import CHROMIUM_ARGS, find_chromium  # noqa: E402
from sitevisit.site import build_into, pages_with, serve  # noqa: E402

FIGURES = Figures("lighthouse")
NPM = ROOT / "bench" / "npm"
LIGHTHOUSE = NPM / "node_modules" / ".bin" / "lighthouse"
OUT = ROOT / "bench" / "out" / "lighthouse"
TARGETS = {"performance": 90, "accessibility": 100, "best-practices": 100, "seo": 100}  # scores out of 100
# The metrics printed: Lighthouse's audit -> its name, its format, and the factor from the audit's value to it.
METRICS = {"first-contentful-paint": ("FCP", "{:.2f} s", 1e-3), "largest-contentful-paint": ("LCP", "{:.2f} s", 1e-3),
           "speed-index": ("SI", "{:.2f} s", 1e-3), "total-blocking-time": ("TBT", "{:.0f} ms", 1),
           "cumulative-layout-shift": ("CLS", "{:.3f}", 1), "dom-size": ("DOM", "{:,.0f} elements", 1)}


@contextlib.contextmanager
def browser(chrome: str):
    """The DevTools port of one headless Chromium (chrome, with sitevisit's flags), ended on exit. Lighthouse's own
    launcher adds flags of its own, one of which (--disable-features=...,RenderDocument) holds this Chromium's
    first paint back by about two seconds on a busy machine: the page's own first paint is what is measured."""
    with tempfile.TemporaryDirectory(prefix="mha-lighthouse-") as profile:
        active = Path(profile) / "DevToolsActivePort"  # Chromium writes its port there
        process = subprocess.Popen([chrome, "--headless=new", *CHROMIUM_ARGS, f"--user-data-dir={profile}",
                                    "--remote-debugging-port=0", "about:blank"], start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            started = time.monotonic()
            while not (active.exists() and active.read_text().strip()):
                if process.poll() is not None or time.monotonic() - started > 60:
                    raise RuntimeError(f"{chrome} did not start with a DevTools port")
                time.sleep(0.1)
            yield int(active.read_text().split()[0])
        finally:
            os.killpg(process.pid, signal.SIGTERM)  # (the system's chromium is a script that starts the browser)
            process.wait(timeout=30)


def run_lighthouse(url: str, out: Path, port: int, slowdown: float, *options: str) -> dict:
    """One Lighthouse run on url in the Chromium at port, the CPU slowed down by slowdown, its reports written to
    out.report.{json,html}: the report, as a dict."""
    subprocess.run([str(LIGHTHOUSE), url, f"--port={port}", f"--throttling.cpuSlowdownMultiplier={slowdown:.2f}",
                    "--output=json", "--output=html", f"--output-path={out}", "--quiet", *options], check=True)
    report = json.loads(out.with_name(out.name + ".report.json").read_text(encoding="utf-8"))
    if error := report.get("runtimeError"):
        raise RuntimeError(f"Lighthouse on {url}: {error['code']}: {error['message']}")
    return report


def calibrate(url: str, port: int, runs: int = 3) -> tuple[float, float]:
    """(this machine's benchmarkIndex, the median of runs Lighthouse runs on url; the CPU slowdown it calls for)."""
    reports = [run_lighthouse(url, OUT / f"calibration-{i + 1}", port, 4, "--only-categories=performance")
               for i in range(runs)]
    index = statistics.median(report["environment"]["benchmarkIndex"] for report in reports)
    return index, cpu_slowdown(index)


def figures_of(report: dict) -> dict[str, float]:
    """{category: score out of 100, metric audit: its value in METRICS' unit, "benchmarkIndex"} of one report."""
    scores = {name: report["categories"][name]["score"] * 100 for name in TARGETS}
    metrics = {audit: report["audits"][audit]["numericValue"] * factor for audit, (_, _, factor) in METRICS.items()}
    return scores | metrics | {"benchmarkIndex": report["environment"]["benchmarkIndex"]}


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def page_line(page: str, figures: dict[str, float], slowdown: float) -> str:
    """page's medians, ending with the benchmarkIndex its runs measured, the slowdown the calculator gives for it
    (another than the calibrated one: the machine was busier or quieter than when it was calibrated) and the
    slowdown they were made with."""
    scores = " ".join(f"{figures[name]:5.0f}" for name in TARGETS)
    metrics = ", ".join(f"{name} {form.format(figures[audit])}" for audit, (name, form, _) in METRICS.items())
    return f"  {page or '/':24} {scores}   {metrics}, {speed_words(figures['benchmarkIndex'])}, run at {slowdown:.2f}×"


def check(pages: dict[str, dict[str, float]], runs: int, cpu: str) -> None:
    """Two figures: performance on every page (with cpu, how the phone's CPU was made), and the three other
    categories on every page."""
    what = f"Lighthouse 12, mobile, every page served gzip'd (median of {runs} runs)"
    perf = {page: figures["performance"] for page, figures in pages.items()}
    low = min(perf, key=perf.get)
    FIGURES.check(f"{what}: performance", f"lowest {perf[low]:.0f} ({low or '/'}); " +
                  ", ".join(f"{page or '/'} {score:.0f}" for page, score in perf.items()) + f"; {cpu}",
                  f"≥ {TARGETS['performance']} on every page", perf[low] >= TARGETS["performance"])
    others = [name for name in TARGETS if name != "performance"]
    missed = [f"{page or '/'} {name} {figures[name]:.0f}" for page, figures in pages.items() for name in others
              if figures[name] < TARGETS[name]]
    FIGURES.check(f"{what}: accessibility, best practices, SEO", "; ".join(missed) or f"100 on all {len(pages)} pages",
                  "100 on every page", not missed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="Lighthouse runs per page (the median is kept)")
    parser.add_argument("--pages", nargs="+", help="only these pages (e.g. / mechanism): a partial run, not kept")
    parser.add_argument("--cpu-slowdown", type=float, help="the CPU slowdown, in place of the calibrated one "
                        "(Lighthouse's default: 4): a run not kept")
    args = parser.parse_args()
    if args.runs < 1:  # (parser.error exits before anything is kept in bench/figures.json)
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if args.cpu_slowdown is not None:
        if not args.cpu_slowdown >= 1:
            parser.error(f"--cpu-slowdown must be at least 1 (no slowdown), got {args.cpu_slowdown}")
        FIGURES.whole = False
    if not LIGHTHOUSE.exists():
        raise SystemExit("Lighthouse is not installed: npm ci --prefix bench/npm")
    server, base = serve(None, caching=GITHUB_PAGES_CACHING, compress=True)
    server.root = site = build_into(ROOT / "bench" / "out" / "lighthouse-site", "--site-url", base)
    pages = [page.removeprefix("./") for page in pages_with(site, "</html>")]  # the home page: ""
    if args.pages:
        wanted = [page.strip("/") + "/" if page.strip("/") else "" for page in args.pages]
        if unknown := sorted(set(wanted) - set(pages)):
            parser.error(f"--pages: no such page {unknown}; the pages: {['/' if p == '' else p for p in pages]}")
        pages, FIGURES.whole = wanted, False
    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chrome = find_chromium(playwright)
    version = subprocess.run([str(LIGHTHOUSE), "--version"], capture_output=True, text=True).stdout.strip()
    print(f"Lighthouse {version} in {chrome}, {args.runs} runs a page; load average before: {os.getloadavg()[0]:.1f}")
    kept = {}
    with browser(chrome) as port:
        if args.cpu_slowdown:
            slowdown = args.cpu_slowdown
            cpu = f"CPU slowed down {slowdown:.2f}× (--cpu-slowdown)"
        else:
            index, slowdown = calibrate(base, port)
            cpu = f"CPU slowed down {slowdown:.2f}× for this machine's benchmarkIndex {index:.0f}"
        print(cpu)
        print(f"  {'page':24} {'  '.join(name[:4] for name in TARGETS)}   medians", flush=True)
        for page in pages:
            runs = [figures_of(run_lighthouse(base + page, OUT / f"{page.strip('/') or 'index'}-{i + 1}", port,
                                              slowdown)) for i in range(args.runs)]
            kept[page] = medians(runs)
            print(page_line(page, kept[page], slowdown), flush=True)
    server.shutdown()
    print(f"load average after: {os.getloadavg()[0]:.1f}; reports in {OUT.relative_to(ROOT)}/")
    check(kept, args.runs, cpu)
    return 0


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
