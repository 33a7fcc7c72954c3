"""The Python files a module runs, found from its imports: what a result computed at build time depends on, so that
a cache of it can be keyed on exactly those files.

Follows `import package.module` and `from .module import name` (relative or absolute) to files under one root,
transitively, by reading the source (ast), without importing anything. A package's __init__.py counts when it is
imported by name (`from .bridge import call`), not merely because a module inside it is.
"""
from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path


def module_file(root: Path, dotted: str) -> Path | None:
    """root/a/b.py or root/a/b/__init__.py for "a.b", if either exists."""
    base = root.joinpath(*dotted.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def dotted_name(root: Path, path: Path) -> tuple[str, str]:
    """(the module's dotted name, its package's) for a file under root."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
        return ".".join(parts), ".".join(parts)
    return ".".join(parts), ".".join(parts[:-1])


def imported_names(root: Path, path: Path) -> set[str]:
    """The dotted names path's imports may load: each module named, and each name imported from one
    (which is a module when it is a submodule of that package)."""
    return set(_imports(path.read_text(), str(path), dotted_name(root, path)[1]))


@functools.cache  # a build keys a dozen results on overlapping sets of files: each text is parsed once
def _imports(source: str, filename: str, package: str) -> frozenset[str]:
    names = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[:len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            if node.module:  # `from . import x` names x, not the package it is in
                names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(names)


def imported_files(root: Path, start: Path) -> list[Path]:
    """start and every file under root it imports, transitively, in a fixed order."""
    seen, todo = set(), [start.resolve()]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(found.resolve() for name in imported_names(root, path)
                    if (found := module_file(root, name)) is not None)
    return sorted(seen)


def sources_key(root: Path, *starts: Path) -> str:
    """A short sha256 of the contents of every file the starts import (and the starts), named by their paths."""
    digest = hashlib.sha256()
    for path in sorted({p for start in starts for p in imported_files(root, start)}):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]
