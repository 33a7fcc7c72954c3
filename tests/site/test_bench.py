"""bench/: it stands on its own (what it shares with the tests comes from sitevisit/, never from tests/), the
arithmetic it applies to what it measures is right, and a bad argument is refused before anything is kept."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def imported(path: Path) -> set[str]:
    """The top-level packages path imports, at any depth of its code."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_bench_and_sitevisit_import_nothing_from_tests():
    files = sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "sitevisit").rglob("*.py"))
    assert len(files) > 5
    assert [f.relative_to(ROOT).as_posix() for f in files if "tests" in imported(f)] == []


def test_lighthouse_s_internals_are_read_for_the_version_pinned():
    """bench/lighthouse_internals.py's contract was written for the Lighthouse that bench/npm pins: a new pin fails
    here until that contract has been read again against it (and PINNED moved)."""
    import json

    from bench.lighthouse_internals import PINNED
    lock = json.loads((ROOT / "bench" / "npm" / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"]["node_modules/lighthouse"]["version"] == PINNED


def test_lighthouse_s_cpu_slowdown_is_its_calculator_s():
    """Lighthouse's calculator (docs/throttling.md): 150 -> 1x, 800 -> 2x, 1300 -> 3x, and 3 + (index - 1300) / 233
    from there on (1533 -> 4x, Lighthouse's default; 2000 -> 6x); a machine under 150 is refused."""
    from bench.host import cpu_slowdown
    indexes = (150, 475, 800, 1050, 1300, 1416.5, 1533, 1766, 2000, 2748, 5000)
    assert [round(cpu_slowdown(index), 2) for index in indexes] == \
        [1, 1.5, 2, 2.5, 3, 3.5, 4, 5, 6, round(3 + 1448 / 233, 2), round(3 + 3700 / 233, 2)]
    for index in (149, -1, float("nan")):
        with pytest.raises(ValueError, match="too slow"):
            cpu_slowdown(index)


def test_a_machine_s_speed_is_said_with_the_calculator_s_slowdown():
    from bench.host import benchmark_index, speed_words
    assert speed_words(1490) == "benchmarkIndex 1490 (calculator: 3.82×)"
    assert speed_words(100) == "benchmarkIndex 100 (calculator: none: too slow)"
    for index in (-1, float("nan")):
        with pytest.raises(ValueError, match="index must be a benchmarkIndex"):
            speed_words(index)
    for runs in (0, 1.5):
        with pytest.raises(ValueError, match="runs must be a whole number"):
            benchmark_index(runs)


@pytest.mark.parametrize("argument", [["--runs", "0"], ["--cpu-slowdown", "0.5"], ["--cpu-slowdown", "nan"]])
def test_lighthouse_refuses_a_bad_argument_and_keeps_the_figures(argument):
    kept = (ROOT / "bench" / "figures.json").read_bytes()
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "lighthouse.py"), *argument],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and f"error: {argument[0]} must be at least 1" in done.stderr, done.stderr
    assert (ROOT / "bench" / "figures.json").read_bytes() == kept


@pytest.mark.parametrize("measured", [1490.4, RuntimeError("page-functions.js is missing")])
def test_a_benchmark_s_figures_are_kept_with_the_machine_s_speed_or_without_it_if_unknown(measured, monkeypatch,
                                                                                         tmp_path, capsys):
    """The speed is measured once, as the first figure comes (not before: a refused argument costs nothing), kept
    with the figures and shown in README's table; a speed that cannot be measured is said, and the figures kept."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    import bench.host
    from bench import figures

    def benchmark_index():
        with pytest.raises(RuntimeError, match="no running event loop"):
            asyncio.get_running_loop()  # Playwright's sync API would refuse to start in one
        if isinstance(measured, Exception):
            raise measured
        return measured

    async def figures_within_an_event_loop():  # as a benchmark's checks inside its own Playwright session
        return kept.check("a", "1 s", "≤ 2 s", True) and kept.check("b", "2 s", "≤ 2 s", True) and 0
    monkeypatch.setattr(bench.host, "benchmark_index", benchmark_index)
    monkeypatch.setattr(figures, "FIGURES", tmp_path / "figures.json")
    kept = figures.Figures("demo")
    with ThreadPoolExecutor(1) as thread:  # a thread of the test's own: this one may hold another test's loop
        assert thread.submit(kept.run, lambda: asyncio.run(figures_within_an_event_loop())).result() == 0
    out = capsys.readouterr().out
    entry = figures.load()["demo"]
    assert [row["what"] for row in entry["figures"]] == ["a", "b"]
    if isinstance(measured, Exception):
        assert out.startswith("this machine's speed is not known: page-functions.js is missing\n- a: 1 s")
        assert entry["benchmark_index"] is None
        assert "benchmarkIndex" not in figures.table({"demo": entry}, ["demo"])
    else:
        assert out.startswith("this machine: benchmarkIndex 1490 (calculator: 3.82×)\n- a: 1 s")
        assert entry["benchmark_index"] == 1490
        assert ", benchmarkIndex 1490 |" in figures.table({"demo": entry}, ["demo"])
