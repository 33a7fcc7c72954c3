"""What one module needs from another is public and named: no module imports a private `_name` from another, or
reaches one through a module it imported (mha_core, mha_page, the widgets' build side, sitebuild, bench, build.py)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHECKED = sorted([*ROOT.glob("mha_core/**/*.py"), *ROOT.glob("mha_page/**/*.py"), *ROOT.glob("widgets/**/*.py"), *ROOT.glob("sitebuild/*.py"),
                  *ROOT.glob("bench/*.py"), ROOT / "build.py"])


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_uses(source: str) -> list[str]:
    """Each private name source takes from another module: `from m import _x`, `import m._x`, `m._x`."""
    tree = ast.parse(source)
    found, modules = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            found += [f"{node.module}.{a.name}" for a in node.names if private(a.name)]
            found += [node.module] if node.module and any(map(private, node.module.split("."))) else []
            modules.update(a.asname or a.name for a in node.names)  # a submodule, perhaps: its attributes count too
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if any(map(private, a.name.split(".")))]
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and isinstance(node.value, ast.Name) \
                and node.value.id in modules:
            found.append(f"{node.value.id}.{node.attr}")
    return found


def test_the_check_finds_each_way_of_taking_a_private_name():
    assert private_uses("from .attention import _forward_steps, project") == ["attention._forward_steps"]
    assert private_uses("from .config import _result as result") == ["config._result"]
    assert private_uses("import numpy._core") == ["numpy._core"]
    assert private_uses("from mha_core import bridge\nbridge._plain(1)") == ["bridge._plain"]
    assert private_uses("class A:\n    def f(self):\n        return self._x") == []  # its own, not a module's
    assert private_uses("from __future__ import annotations\nimport numpy as np\nnp.__version__") == []


@pytest.mark.parametrize("path", CHECKED, ids=[str(p.relative_to(ROOT)) for p in CHECKED])
def test_no_module_takes_a_private_name_from_another(path):
    assert private_uses(path.read_text()) == []


MIRRORS = {"mha_core": "core", "mha_page": "page"}  # each package's tests, under tests/


@pytest.mark.parametrize("package", MIRRORS)
def test_tests_mirror_the_package(package):
    """Each module of mha_core has its test file at the same place under tests/core, each of mha_page under
    tests/page (a package's __init__.py is tested as test_<package>.py beside the package's folder)."""
    for path in (ROOT / package).rglob("*.py"):
        rel = path.relative_to(ROOT / package)
        if rel.name == "__init__.py":
            if rel.parent == Path("."):
                continue  # the package's own: its exports, used by every test
            rel = rel.parent.with_suffix(".py")
        assert (ROOT / "tests" / MIRRORS[package] / rel.parent / f"test_{rel.name}").is_file(), \
            f"no tests for {package}/{rel}"
