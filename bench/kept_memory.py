"""What the memory kept for a revisit buys (widgets/runtime/pyodide_internals.js: the one part of the runtime that
relies on Pyodide's and Emscripten's internals): a warm revisit to the shapes page, in the same profile once the
first visit has kept Python's memory, ready with that memory and without it (deleted just before the revisit; every
file Python is made of is still in Cache Storage, so neither downloads anything). Headless Chromium, localhost,
the site served as network.py serves it, alternating pairs in fresh profiles; then the same with the page's CPU
throttled 4x (DevTools' CPU throttling on the revisit's page, as Lighthouse's mobile runs do: a phone). The
memory stays only if it pays on the phone: a revisit ready at least 1 s sooner with it.
Chromium throttles the page's own thread only: it refuses CPU throttling for a worker ("Operation is only
supported for pages, not workers"), and Python starts in one, so the throttled figures time the page's part at a
phone's speed and Python's start at this machine's: what the memory saves there is less than a phone would save.

    python bench/kept_memory.py [--runs 4]

Prints the medians of both, and exits 1 if the kept memory does not make the revisit ready sooner on localhost,
or not 1 s sooner with the CPU throttled. A busy machine gives slower figures: run it alone.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]
from network import fresh_context, open_page, python_start_s  # noqa: E402
from sitebuild.serving import GITHUB_PAGES_CACHING  # noqa: E402
from bench.figures import Figures  # noqa: E402
from sitevisit.chromium import chromium  # noqa: E402
from sitevisit.page import kept_memory  # noqa: E402
from sitevisit.site import build_into, pages_with, serve  # noqa: E402

FIGURES = Figures("kept_memory")

# Drops the kept memory from the runtime's Cache Storage (memory.js keys it "python-memory?..."), not the files.
FORGET_MEMORY = """async () => {
  const store = await caches.open("mha-python");
  for (const request of await store.keys()) if (request.url.includes("/python-memory?")) await store.delete(request);
}"""


PHONE_CPU_SLOWDOWN = 4  # as Lighthouse's mobile runs throttle the CPU
PAYS_ON_THE_PHONE_S = 1.0  # the least a revisit must gain on the phone for the memory to be kept


def revisits(browser, url: str, runs: int, cpu_slowdown: float = 1) -> dict[bool, list[dict]]:
    """{with the kept memory: [open_page's figures of each revisit]}, runs of each, in alternating order, each
    revisit's CPU throttled cpu_slowdown times (the first visit, which keeps the memory, is not)."""
    visits = {True: [], False: []}
    for run in range(runs):
        context = fresh_context(browser)
        page = open_page(context, url, 120)["page"]
        for with_memory in (True, False) if run % 2 == 0 else (False, True):
            kept_memory(page)  # kept by the start before (restored, it stays)
            if not with_memory:
                page.evaluate(FORGET_MEMORY)
            page.close()
            visit = open_page(context, url, 120 * cpu_slowdown, cpu_slowdown)
            assert ("restored" in visit["status"][-1][1]) == with_memory, visit["status"]
            visits[with_memory].append(visit)
            page = visit["page"]
        page.close()
        context.close()
    return visits


def medians(visits: dict[bool, list[dict]]) -> dict[bool, tuple[float, float]]:
    """{with the kept memory: (ready, Python's start in its worker), medians in seconds}."""
    return {kind: (statistics.median(v["ready"] for v in vs) / 1000,
                   statistics.median(python_start_s(v["status"]) for v in vs)) for kind, vs in visits.items()}


def report(where: str, median: dict[bool, tuple[float, float]]) -> str:
    """The figures printed for one kind of revisit, and the measured text of its figure."""
    print(f"a warm revisit, {where} (medians):")
    for kind, label in ((True, "with the kept memory"), (False, "without it (files from Cache Storage)")):
        ready, start = median[kind]
        print(f"  {label}: ready {ready:.2f} s after navigation, Python's start in its worker {start:.1f} s")
    (ready, start), (ready_without, start_without) = median[True], median[False]
    print(f"  the kept memory saves {ready_without - ready:.2f} s")
    return (f"ready {ready:.2f} s / {ready_without:.2f} s (saves {ready_without - ready:.2f} s), "
            f"Python's start {start:.1f} s / {start_without:.1f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=4, help="revisits of each kind")
    args = parser.parse_args()
    server, base = serve(None, caching=GITHUB_PAGES_CACHING)
    server.root = site = build_into(ROOT / "bench" / "out" / "kept-memory-site", "--site-url", base)
    url = base + pages_with(site, 'data-mha-widget="shapes"')[0] + "#mha-shapes-1"
    with chromium() as browser:
        local = medians(revisits(browser, url, args.runs))
        phone = medians(revisits(browser, url, args.runs, PHONE_CPU_SLOWDOWN))
    server.shutdown()
    each = f"median of {args.runs} each"
    ok = FIGURES.check(f"a warm revisit with the kept memory / without it, localhost ({each})",
                       report(f"localhost, {args.runs} of each in alternating pairs", local),
                       "sooner with it", local[True][0] < local[False][0])
    saved = phone[False][0] - phone[True][0]
    ok &= FIGURES.check(f"a warm revisit with the kept memory / without it, localhost, CPU {PHONE_CPU_SLOWDOWN}x "
                        f"slower ({each})",
                        report(f"localhost, CPU {PHONE_CPU_SLOWDOWN}x slower, {args.runs} of each", phone),
                        f"saves ≥ {PAYS_ON_THE_PHONE_S:.0f} s", saved >= PAYS_ON_THE_PHONE_S)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
