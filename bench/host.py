"""This machine's speed as Lighthouse measures it, printed beside a benchmark's figures so that a figure measured on
a slower or faster day (machines of this class differ by about 2x from one day to the next) reads the same: its
benchmarkIndex, computed by Lighthouse's own page function (bench/lighthouse_internals.py) in a page of the whole
Chromium, and the CPU slowdown Lighthouse's calculator gives for it (the slowdown that makes this machine a mid-tier
phone: the higher, the faster the machine)."""
from __future__ import annotations

import statistics

from bench.lighthouse_internals import benchmark_function
from sitevisit.chromium import chromium

# Lighthouse's CPU slowdown calculator (linked from its docs/throttling.md): a machine's benchmarkIndex -> the
# slowdown that turns it into a mid-tier phone, linear between these points and on the last segment's line past the
# last (3 + (index - 1300) / 233: 6x at 2,000), so a faster machine is slowed down more, to the same phone.
CALCULATOR = ((150, 1), (800, 2), (1300, 3), (1533, 4))


def cpu_slowdown(benchmark_index: float) -> float:
    """The CPU slowdown that turns a machine of that benchmarkIndex into Lighthouse's mid-tier phone."""
    if not benchmark_index >= CALCULATOR[0][0]:
        raise ValueError(f"benchmarkIndex {benchmark_index}: under {CALCULATOR[0][0]}, this machine is too slow "
                         "to emulate Lighthouse's phone")
    (x0, y0), (x1, y1) = next((pair for pair in zip(CALCULATOR, CALCULATOR[1:]) if benchmark_index < pair[1][0]),
                              CALCULATOR[-2:])
    return y0 + (benchmark_index - x0) * (y1 - y0) / (x1 - x0)


def benchmark_index(runs: int = 3) -> float:
    """This machine's benchmarkIndex now: the median of runs, each in a fresh page."""
    if not (isinstance(runs, int) and runs >= 1):
        raise ValueError(f"runs must be a whole number of 1 or more, got {runs!r}")
    source = benchmark_function()
    with chromium() as browser:
        indexes = []
        for _ in range(runs):
            page = browser.new_page()
            indexes.append(page.evaluate(f"({source})()"))
            page.close()
    return statistics.median(indexes)


def speed_words(index: float) -> str:
    """A machine's speed in words: "benchmarkIndex 1490 (calculator: 3.82×)"."""
    if not index >= 0:
        raise ValueError(f"index must be a benchmarkIndex, a number of 0 or more, got {index}")
    calculated = f"{cpu_slowdown(index):.2f}×" if index >= CALCULATOR[0][0] else "none: too slow"
    return f"benchmarkIndex {index:.0f} (calculator: {calculated})"


def host_speed() -> str:
    """This machine's speed now, in words (speed_words)."""
    return speed_words(benchmark_index())
