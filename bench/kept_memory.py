"""What the memory kept for a revisit buys (widgets/runtime/pyodide_internals.js: the one part of the runtime that
relies on Pyodide's and Emscripten's internals): a warm revisit to the shapes page, in the same profile once the
first visit has kept Python's memory, ready with that memory and without it (deleted just before the revisit; every
file Python is made of is still in Cache Storage, so neither downloads anything). Headless Chromium, localhost,
the site served as network.py serves it, alternating pairs in fresh profiles; then the same in a browser whose
every process and thread shares a quarter of the machine's CPU time (a cgroup: cpu_limit.py), four times slower
as a phone is (Lighthouse's mobile runs slow the CPU 4x), its cores still working side by side as a phone's do.
DevTools' CPU throttling would not do: it slows the page's own thread, not the worker Python starts in. The
memory stays only if it pays on the phone: a revisit ready at least 1 s sooner with it.

    python bench/kept_memory.py [--runs 4]

Prints the medians of both, and exits 1 if the kept memory does not make the revisit ready sooner on localhost,
or not 1 s sooner on the phone, or if this machine cannot slow every thread of the browser (that needs root and
the cgroup v1 cpu controller). A busy machine gives slower figures: run it alone.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]
from cpu_limit import CpuLimitUnavailable, cpu_limited, process_tree  # noqa: E402
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


PHONE_CPU_SLOWDOWN = 4  # as Lighthouse's mobile runs slow the CPU
PHONE_CPUS = (os.cpu_count() or 1) / PHONE_CPU_SLOWDOWN  # CPUs' worth of time the phone's browser shares
PAYS_ON_THE_PHONE_S = 1.0  # the least a revisit must gain on the phone for the memory to be kept
TIMEOUT_S = 120  # for a visit on localhost; times PHONE_CPU_SLOWDOWN on the phone


def browser_pid() -> int:
    """The process of the one browser this process launched (Playwright's driver starts it with a pipe for the
    DevTools protocol; its other processes have a --type)."""
    found = []
    for pid in process_tree(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--remote-debugging-pipe" in argv and not any(arg.startswith(b"--type=") for arg in argv):
            found.append(pid)
    if len(found) != 1:
        raise RuntimeError(f"expected one browser process launched by this one, found {found}")
    return found[0]


def revisits(browser, url: str, runs: int, timeout_s: float = TIMEOUT_S, ready=lambda: None) -> dict[bool, list[dict]]:
    """{with the kept memory: [open_page's figures of each revisit]}, runs of each, in alternating order;
    ready() is called once each revisit is ready, its worker running."""
    visits = {True: [], False: []}
    for run in range(runs):
        context = fresh_context(browser)
        page = open_page(context, url, timeout_s)["page"]
        for with_memory in (True, False) if run % 2 == 0 else (False, True):
            kept_memory(page)  # kept by the start before (restored, it stays)
            if not with_memory:
                page.evaluate(FORGET_MEMORY)
            page.close()
            visit = open_page(context, url, timeout_s)
            ready()
            assert ("restored" in visit["status"][-1][1]) == with_memory, visit["status"]
            visits[with_memory].append(visit)
            page = visit["page"]
        page.close()
        context.close()
    return visits


def on_the_phone(url: str, runs: int) -> tuple[dict[bool, list[dict]], int]:
    """revisits() in a browser whose every process, from before its first page, shares a quarter of the CPU time;
    and the most threads it had, each checked to be in the limited cgroup once each revisit was ready."""
    threads = []
    with chromium() as browser, cpu_limited(browser_pid(), PHONE_CPUS) as limit:
        visits = revisits(browser, url, runs, TIMEOUT_S * PHONE_CPU_SLOWDOWN, lambda: threads.append(limit.held()[1]))
    return visits, max(threads)


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
    each = f"median of {args.runs} each"
    ok = FIGURES.check(f"a warm revisit with the kept memory / without it, localhost ({each})",
                       report(f"localhost, {args.runs} of each in alternating pairs", local),
                       "sooner with it", local[True][0] < local[False][0])
    phone_figure = (f"a warm revisit with the kept memory / without it, localhost, the browser on a quarter of "
                    f"the CPU time ({each})")
    try:
        visits, threads = on_the_phone(url, args.runs)
    except CpuLimitUnavailable as e:
        ok &= FIGURES.check(phone_figure, f"not measured: this machine cannot slow every thread of the browser: {e}",
                            f"saves ≥ {PAYS_ON_THE_PHONE_S:.0f} s", False)
    else:
        phone = medians(visits)
        saved = phone[False][0] - phone[True][0]
        measured = report(f"the browser on a quarter of the CPU time, {args.runs} of each", phone)
        slower = phone[False][1] / local[False][1]
        print(f"  Python's start without the memory {slower:.1f}x as slow as on localhost; all of the browser's "
              f"threads (up to {threads}) held in the limited cgroup")
        ok &= FIGURES.check(phone_figure, f"{measured}, Python's start without it {slower:.1f}x localhost's",
                            f"saves ≥ {PAYS_ON_THE_PHONE_S:.0f} s", saved >= PAYS_ON_THE_PHONE_S)
    server.shutdown()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
