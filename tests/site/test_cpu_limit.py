"""bench/cpu_limit.py, which slows a whole browser for the kept memory's phone figure: it refuses nonsense, and
either it slows a process and the children it forks later, every thread of theirs in its group, and leaves no
group behind, or it says why this machine cannot (no root, no cgroup v1 cpu controller)."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from cpu_limit import CpuLimitUnavailable, cpu_limited  # noqa: E402

# A parent that forks a busy child a moment after it starts (once it is in the group), then spins itself.
FORKS_A_SPINNER = """
import os, time
time.sleep(0.3)
os.fork()
while True:
    pass
"""
SHARE = 0.25  # of one CPU, for the parent and its child together
SECONDS = 1.5


def cpu_seconds(pid: int) -> float:
    """User and system time pid has used, with that of its children still running."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]


@pytest.mark.parametrize("pid, share, named", [(0, 0.5, "pid"), (-3, 0.5, "pid"), (None, 0, "share"),
                                                (None, -1, "share"), (None, 10_000, "share")])
def test_nonsense_is_refused_naming_the_argument(pid, share, named):
    with pytest.raises(ValueError, match=f"^{named}="):
        with cpu_limited(os.getpid() if pid is None else pid, share):  # None: this process
            pass


def test_a_process_and_the_children_it_forks_later_share_the_limit_or_the_machine_says_why_not():
    parent = subprocess.Popen([sys.executable, "-c", FORKS_A_SPINNER])
    try:
        try:
            with cpu_limited(parent.pid, SHARE) as limit:
                time.sleep(0.6)  # the child is forked inside the group
                [child] = children(parent.pid)
                used = cpu_seconds(parent.pid) + cpu_seconds(child)
                time.sleep(SECONDS)
                used = cpu_seconds(parent.pid) + cpu_seconds(child) - used
                processes, threads = limit.held()
                group = limit.path
        except CpuLimitUnavailable as e:  # no root, or no cgroup v1 cpu controller: said, nothing slowed
            assert os.geteuid() != 0 or "cgroup" in str(e), e
            return
        assert (processes, threads) == (2, 2)
        assert used < SECONDS * SHARE * 2, f"{used:.2f} CPU-s in {SECONDS} s: not limited to {SHARE} of a CPU"
        assert not group.exists() and group.parent.exists()
    finally:
        for pid in [parent.pid, *children(parent.pid)] if parent.poll() is None else []:
            os.kill(pid, 9)
        parent.wait()
