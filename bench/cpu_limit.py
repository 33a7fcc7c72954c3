"""A slower machine for a whole program: its process and every process descended from it in one CPU-limited cgroup,
so that every thread of theirs (a browser's page, its workers, its compositor, its network service) runs slower,
where DevTools' CPU throttling slows a page's own thread only.

Needs root and the cgroup v1 cpu controller (a cgroup file system mounted with the cpu option, whose groups have
cpu.cfs_quota_us and cpu.cfs_period_us); cgroup v2 is not handled. Where either is missing, cpu_limited raises
CpuLimitUnavailable saying so, and nothing is slowed.

    with cpu_limited(pid, 0.5) as limit:    # pid's tree now shares half of one CPU's time
        ...
        limit.held()                        # raises unless every thread of pid's tree is in the group

The group is made below this process's own; processes the tree forks later are born in it. On leaving, whatever
happened inside, its processes are moved back to this process's group and the group is removed.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

MOVE_ROUNDS = 20  # passes over a tree that may fork while it is moved


class CpuLimitUnavailable(RuntimeError):
    """This machine cannot slow every thread of a program (no root, or no cgroup v1 cpu controller)."""


def cpu_hierarchy() -> Path:
    """The mount point of the cgroup v1 hierarchy holding the cpu controller."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields, _, after = line.partition(" - ")
        fstype, _, options = after.split()[:3]
        if fstype == "cgroup" and "cpu" in options.split(","):
            return Path(fields.split()[4])
    raise CpuLimitUnavailable("no cgroup v1 hierarchy with the cpu controller is mounted (cgroup v2 is not handled)")


def cpu_group_of(pid: int | str) -> str:
    """pid's group in the cpu hierarchy, as a path from its root ("/" or "/a/b")."""
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    raise CpuLimitUnavailable(f"process {pid} is in no group of the cpu controller")


def process_tree(pid: int) -> list[int]:
    """pid and every process descended from it, read from /proc (parents before their children)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):  # a process that ended meanwhile
                stat = (entry / "stat").read_text()
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])  # after "pid (command) state"
                children.setdefault(ppid, []).append(int(entry.name))
    tree = [pid]
    for p in tree:
        tree.extend(children.get(p, []))
    return tree


class CpuLimit:
    """One group of the cpu hierarchy, limited to a share of the CPUs' time, holding a process tree."""

    def __init__(self, pid: int, share: float):
        self.pid, self.share = pid, share
        root = cpu_hierarchy()
        self.home = root / cpu_group_of(os.getpid()).lstrip("/")
        self.path = self.home / f"cpu-limited-{os.getpid()}-{pid}"
        self.name = "/" + str(self.path.relative_to(root))

    def make(self) -> None:
        try:
            self.path.mkdir()
        except PermissionError as e:
            raise CpuLimitUnavailable(f"cannot make a cgroup in {self.home} (not root?): {e}") from e
        period = int((self.path / "cpu.cfs_period_us").read_text())
        (self.path / "cpu.cfs_quota_us").write_text(str(round(period * self.share)))

    def move_tree(self) -> None:
        """Moves pid's tree in, again until a pass finds none of it outside (it may fork meanwhile)."""
        for _ in range(MOVE_ROUNDS):
            outside = [p for p in process_tree(self.pid) if self._group(p) not in (self.name, None)]
            if not outside:
                return
            for p in outside:
                self._move(p, self.path)
        raise RuntimeError(f"process {self.pid}'s tree kept forking outside {self.path}")

    def held(self) -> tuple[int, int]:
        """(processes, threads) of pid's tree, every thread of which is in the group; raises otherwise."""
        processes = process_tree(self.pid)
        groups = {f"{p}/{t.name}": self._group(f"{p}/task/{t.name}") for p in processes for t in self._threads(p)}
        if outside := [thread for thread, group in groups.items() if group not in (self.name, None)]:
            raise AssertionError(f"threads (pid/tid) {', '.join(outside)} of process {self.pid}'s tree are outside "
                                 f"{self.path}")
        return len(processes), sum(group is not None for group in groups.values())

    def remove(self) -> None:
        """Moves whatever the group holds back to this process's group, then removes the group."""
        for _ in range(MOVE_ROUNDS):
            for p in (self.path / "cgroup.procs").read_text().split():
                self._move(p, self.home)
            with contextlib.suppress(OSError):  # busy: a process forked while the others were moved
                self.path.rmdir()
                return
        raise RuntimeError(f"{self.path} kept processes: remove it by hand (rmdir) once they are gone")

    @staticmethod
    def _group(pid) -> str | None:
        """pid's group (or "pid/task/tid": a thread's), None if it has ended."""
        try:
            return cpu_group_of(pid)
        except OSError:  # ended
            return None

    @staticmethod
    def _threads(pid) -> list[Path]:
        try:
            return list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:  # ended
            return []

    @staticmethod
    def _move(pid, group: Path) -> None:
        """Moves pid, with all its threads, into group (nothing if it has ended)."""
        with contextlib.suppress(ProcessLookupError):
            (group / "cgroup.procs").write_text(str(pid))


@contextlib.contextmanager
def cpu_limited(pid: int, share: float):
    """pid's process tree held in a new group limited to share CPUs' worth of time (on two CPUs, 0.5: each four
    times slower), as a CpuLimit; moved back and the group removed on leaving."""
    if not isinstance(pid, int) or pid <= 0 or not Path(f"/proc/{pid}").exists():
        raise ValueError(f"pid={pid!r} is not a running process")
    cpus = os.cpu_count() or 1
    if not 0 < share <= cpus:
        raise ValueError(f"share={share!r} is not CPUs' worth of time in (0, {cpus}] (this machine's CPUs)")
    if os.geteuid() != 0:
        raise CpuLimitUnavailable("moving processes between cgroups needs root")
    limit = CpuLimit(pid, share)
    limit.make()
    try:
        limit.move_tree()
        yield limit
    finally:
        limit.remove()
