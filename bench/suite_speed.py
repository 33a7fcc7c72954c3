"""How long the tests take a developer: `make test-core` in this checkout (installed already), and README's
`make test` as CI runs it (.ci/run) on a fresh clone of the committed HEAD: the installs, the first build that
fills .cache/, and every test. Both are bound by the machine's CPU, so the cores' busy and idle time is printed
beside the clock (read from /proc/stat, Linux's), and the machine's speed as Lighthouse measures it just before
each (bench/host.py).

    python bench/suite_speed.py [--core-only]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
from bench.figures import Figures  # noqa: E402
from bench.host import host_speed  # noqa: E402

CORE_TARGET_S = 60
FULL_TARGET_S = 300
FIGURES = Figures("suite_speed")
SUMMARY = re.compile(r"^=*\s*(\d+) passed(?:, (\d+) skipped)?.* in ([\d.]+)s", re.M)


def cpu_seconds() -> tuple[float, float] | None:
    """(busy, idle) seconds of all cores since boot, or None where /proc/stat is not there."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    user, nice, system, idle, iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / ticks, (idle + iowait) / ticks


def timed(command: str, cwd: Path) -> tuple[float, str, str]:
    """(seconds, what pytest's summary said, the cores' busy and idle time and the machine's speed just before, in
    words) of command, which must pass."""
    speed = host_speed()
    print(f"{command}: this machine's {speed}")
    before, start = cpu_seconds(), time.monotonic()
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    seconds, after = time.monotonic() - start, cpu_seconds()
    if done.returncode:
        raise RuntimeError(f"{command} failed in {cwd}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    found = SUMMARY.findall(done.stdout)
    if not found:
        raise RuntimeError(f"{command}: no pytest summary in its output:\n{done.stdout[-2000:]}")
    passed, skipped, pytest_s = found[-1]
    said = f"{int(passed):,} passed{f', {skipped} skipped' if skipped else ''} ({float(pytest_s):.1f} s in pytest)"
    cores = "" if not (before and after) else \
        f"; the cores busy {after[0] - before[0]:,.0f} CPU-s, idle {after[1] - before[1]:,.0f} s"
    return seconds, said, f"{cores}; this machine's {speed}"


def fresh_clone_test() -> None:
    """README's `make test` (.ci/run) on a clone of HEAD in a temporary folder, removed after."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="mha-clone-", ignore_cleanup_errors=True) as tmp:
        clone = Path(tmp) / "repo"
        subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
        seconds, said, cores = timed("bash .ci/run", clone)
    FIGURES.check(f"`make test` on a fresh clone (.ci/run: installs, the first build, every test; {head})",
                  f"{seconds:.0f} s: {said}{cores}", f"≤ {FULL_TARGET_S} s", seconds <= FULL_TARGET_S)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--core-only", action="store_true", help="only make test-core: a partial run, not kept")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    seconds, said, cores = timed("make test-core", ROOT)
    FIGURES.check("`make test-core` in an installed checkout (mha_core, the quick build checks, the node tests)",
                  f"{seconds:.1f} s: {said}{cores}", f"≤ {CORE_TARGET_S} s", seconds <= CORE_TARGET_S)
    if args.core_only:
        FIGURES.whole = False
    else:
        fresh_clone_test()
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
