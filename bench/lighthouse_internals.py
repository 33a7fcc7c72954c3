"""The one module of bench/ that leans on Lighthouse's internals: its benchmarkIndex page function, which Lighthouse
runs in the page it audits and does not publish. The contract, as pinned (bench/npm/package-lock.json: lighthouse
12.8.2; tests/site/test_bench.py fails the day the pin changes, so that this is read again):
  1. core/lib/page-functions.js defines `function computeBenchmarkIndex() {` at the start of a line, its body
     ending with the first `}` alone on a line after it, self-contained (it calls only functions it defines).
  2. Called with no argument in a page, it returns the machine's benchmarkIndex, the number Lighthouse's reports
     give as environment.benchmarkIndex and its CPU slowdown calculator takes."""
from __future__ import annotations

import re
from pathlib import Path

PINNED = "12.8.2"
PAGE_FUNCTIONS = Path(__file__).resolve().parent / "npm" / "node_modules" / "lighthouse" / "core" / "lib" / \
    "page-functions.js"


def benchmark_function() -> str:
    """The source of Lighthouse's computeBenchmarkIndex (about a second of string and array copying)."""
    if not PAGE_FUNCTIONS.is_file():
        raise RuntimeError(f"{PAGE_FUNCTIONS} is missing: run `npm ci --prefix bench/npm` (make bench does)")
    found = re.search(r"^function computeBenchmarkIndex\(\) \{.*?^\}$", PAGE_FUNCTIONS.read_text(), re.S | re.M)
    if not found:
        raise RuntimeError(f"{PAGE_FUNCTIONS} no longer defines computeBenchmarkIndex as this module reads it")
    return found[0]
