"""The benchmarks' figures against their targets, kept in bench/figures.json and shown in README's table.

Each benchmark checks its figures through a Figures of its own, which prints this machine's speed before the
first (bench/host.py: a figure is read with the speed it was measured at), then each figure as measured and, at
the end, replaces that benchmark's entry in bench/figures.json, the speed with it. `python bench/figures.py
BENCH...` (the last step of `make bench`, with its benchmarks in their order) writes README's table from the
file; a test checks that the two agree.
"""
from __future__ import annotations

import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "bench" / "figures.json"
README = ROOT / "README.md"
TABLE = re.compile(r"(<!-- figures: .*? -->\n).*?(<!-- /figures -->)", re.S)


class Figures:
    """One benchmark's checked figures: check() prints one; run(main) runs the benchmark and keeps them all in
    bench/figures.json, with its failure, if it stopped, as one more figure missed."""

    def __init__(self, bench: str):
        self.bench = bench  # the script's name, as bench/<bench>.py
        self.rows: list[dict] = []
        self.whole = True  # False: a partial run (an option left part out), not kept
        self.host_index = None  # this machine's benchmarkIndex as the first figure came (None: not yet, or not known)
        self.host_measured = False

    def run(self, main) -> int:
        """main()'s exit status, 1 if a figure was missed (an interruption or --help keeps nothing)."""
        try:
            status = main()
        except Exception as e:
            self.check("the benchmark ran to its end", f"stopped: {type(e).__name__}: {str(e).splitlines()[0]}",
                       "no error", False)
            self.save()
            raise
        self.save()
        return max(status, 0 if self.met else 1)

    def check(self, what: str, measured: str, target: str, ok: bool) -> bool:
        if not self.host_measured:
            self.measure_host()
        self.rows.append({"what": what, "measured": measured, "target": target, "ok": ok})
        print(f"- {what}: {measured} (target {target}) -> {'within' if ok else 'MISSED'}")
        return ok

    def measure_host(self) -> None:
        """Print this machine's speed, measured now (once a benchmark has figures: a refused argument costs
        nothing); a speed that cannot be measured is said, and the figures go on."""
        from bench import host  # a Chromium: for a benchmark that runs, not a test

        self.host_measured = True
        try:
            # in a thread of its own: a benchmark may check a figure inside its own Playwright session, whose
            # event loop runs on this thread (Playwright's sync API refuses to start inside it)
            with ThreadPoolExecutor(1) as thread:
                self.host_index = round(thread.submit(host.benchmark_index).result())
            print(f"this machine: {host.speed_words(self.host_index)}")
        except RuntimeError as e:
            print(f"this machine's speed is not known: {e}")

    @property
    def met(self) -> bool:
        return all(row["ok"] for row in self.rows)

    def save(self) -> None:
        if not self.whole:
            return
        kept = load()
        kept[self.bench] = {"measured": time.strftime("%Y-%m-%d", time.gmtime()), "benchmark_index": self.host_index,
                            "figures": self.rows}
        FIGURES.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def load() -> dict:
    """{bench: {"measured": date, "benchmark_index": this machine's then, "figures": [{what, measured, target, ok}]}}"""
    return json.loads(FIGURES.read_text(encoding="utf-8")) if FIGURES.exists() else {}


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(kept: dict, benches: list[str]) -> str:
    """README's table of the figures of benches (names as bench/<name>.py), in that order."""
    lines = ["| figure | measured | target | printed by |", "|---|---|---|---|"]
    for bench in benches:
        entry = kept[bench]
        index = entry.get("benchmark_index")  # None: measured before benchmarks kept it
        link = f"[{bench}.py](bench/{bench}.py), {entry['measured']}" + (f", benchmarkIndex {index}" if index else "")
        lines += [f"| {cell(row['what'])} | {cell(row['measured'])}{'' if row['ok'] else ' (**missed**)'} | "
                  f"{cell(row['target'])} | {link} |" for row in entry["figures"]]
    return "\n".join(lines) + "\n"


def readme_with_table(readme: str, kept: dict, benches: list[str]) -> str:
    if not TABLE.search(readme):
        raise SystemExit("README.md has no <!-- figures: ... --> ... <!-- /figures --> block for the table")
    if missing := [bench for bench in benches if bench not in kept]:
        raise SystemExit(f"bench/figures.json has no figures of {', '.join(missing)}: run them")
    return TABLE.sub(lambda m: m.group(1) + table(kept, benches) + m.group(2), readme)


if __name__ == "__main__":
    README.write_text(readme_with_table(README.read_text(encoding="utf-8"), load(), sys.argv[1:]), encoding="utf-8")
