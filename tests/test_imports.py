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
    assert private_uses("from mha_page import bridge\nbridge._plain(1)") == ["bridge._plain"]
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


# ---------------------------------------------------------------- no import cycle

PROJECT = sorted([*ROOT.glob("mha_core/**/*.py"), *ROOT.glob("mha_page/**/*.py"), *ROOT.glob("widgets/**/*.py"),
                  *ROOT.glob("sitebuild/*.py"), *ROOT.glob("bench/*.py"), ROOT / "build.py"])
# The modules that load others from their files (importlib), and the files they load: edges of the graph too.
LOADED = {"sitebuild.widgets": "widgets/*/widget.py", "sitebuild.facts": "widgets/*/facts.py",
          "widgets.real_model.facts": "widgets/real_model/widget.py"}


def dotted(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The project's modules path imports, anywhere in it (lazy imports too): `from p import m` counts as m when
    m is a module, else as p."""
    name = dotted(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]) if node.level else ""
            source = ".".join(filter(None, [base, node.module]))
            found.update(f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names)
    return (found & known) - {name}


def import_graph() -> dict[str, set[str]]:
    known = {dotted(p) for p in PROJECT}
    graph = {dotted(p): imports(p, known) for p in PROJECT}
    for loader, pattern in LOADED.items():
        graph[loader] |= {dotted(p) for p in ROOT.glob(pattern)}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_check_finds_a_cycle_and_passes_a_chain():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_every_module_that_loads_files_is_in_the_graph():
    """A module loading another from its file (importlib) is an import the ast does not see: LOADED names each."""
    loaders = {dotted(p) for p in PROJECT if "spec_from_file_location" in p.read_text(encoding="utf-8")}
    assert loaders == set(LOADED)


def test_no_import_cycle_among_the_projects_modules():
    """Each module imports only what does not import it back, directly or through others (importlib's loads
    included): mha_page imports mha_core, the build loads the widgets, never the reverse."""
    assert cycles(import_graph()) == []


def test_mha_core_imports_nothing_of_the_page():
    """mha_core is the numerics `pip install .` gives: it never imports mha_page (which imports it), nor the build."""
    graph = import_graph()
    assert {(m, i) for m in graph if m.startswith("mha_core") for i in graph[m] if not i.startswith("mha_core")} == set()
