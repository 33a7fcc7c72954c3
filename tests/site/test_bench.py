"""bench/ stands on its own: what it shares with the tests comes from sitevisit/, never from tests/."""
from __future__ import annotations

import ast
from pathlib import Path

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
