"""How the browser's ES modules under widgets/ depend on one another: a widget's folder is its own; what two
widgets share lives in widgets/shared/ (their common parts) or widgets/runtime/ (Python in the page), and
neither of those reaches into a widget. Read from the source text: every static import, dynamic import() and
module URL (new URL("...", import.meta.url))."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitebuild import editor, widgets

WIDGETS = widgets.WIDGETS
COMMON = ("runtime", "shared")  # folders every widget may import from
SPECIFIER = re.compile(r"""\bimport\s*(?:[\w{}\s,*]*?\bfrom\s*|\(\s*)?["']([^"']+)["']""")
MODULE_URL = re.compile(r"""new\s+URL\s*\(\s*["']([^"']+)["']\s*,\s*import\.meta\.url""")
MODULES = sorted(WIDGETS.rglob("*.js"))
# written by the build, not sources: the runtime's config (sitebuild/hooks.py), the editor's bundle (sitebuild/editor.py)
GENERATED = {WIDGETS / "runtime" / "config.js", WIDGETS / "exercise" / editor.BUNDLE}


def folder(path: Path) -> str:
    """The folder of widgets/ a file belongs to ('' for a file directly in widgets/)."""
    parts = path.relative_to(WIDGETS).parts
    return parts[0] if len(parts) > 1 else ""


def imports(module: Path) -> list[Path]:
    """The files module imports or loads as a module, relative to it (bare URLs and other origins left out)."""
    text = module.read_text(encoding="utf-8")
    found = [m for m in SPECIFIER.findall(text) if m.startswith(".")]
    found += [m for m in MODULE_URL.findall(text) if m.endswith(".js")]
    return [(module.parent / spec).resolve() for spec in dict.fromkeys(found)]


def test_the_import_reader_sees_the_imports_it_must():
    training = WIDGETS / "training" / "training.js"
    assert WIDGETS / "shared" / "grid.js" in imports(training)
    assert WIDGETS / "runtime" / "bridge.js" in imports(training)
    assert WIDGETS / "runtime" / "worker.js" in imports(WIDGETS / "runtime" / "bridge.js")  # a module URL
    assert folder(WIDGETS / "scroll-regions.js") == "" and folder(training) == "training"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.relative_to(WIDGETS).as_posix())
def test_each_module_imports_only_its_folder_and_the_shared_ones(module):
    own = folder(module)
    for target in imports(module):
        assert target.is_file() or target in GENERATED, f"{module.name} imports {target}, which does not exist"
        theirs = folder(target.resolve())
        if own in COMMON:
            assert theirs in COMMON, f"{module.relative_to(WIDGETS)} reaches into widget {theirs!r}"
        else:
            assert theirs in (own, *COMMON), (
                f"{module.relative_to(WIDGETS)} imports widget {theirs!r}'s internals "
                f"({target.relative_to(WIDGETS)}): move what both need to widgets/shared/")


def test_shared_folders_are_not_widgets():
    assert not set(COMMON) & set(widgets.names())


@pytest.mark.parametrize("name", widgets.names())
def test_each_widget_s_root_names_its_module(name):
    """widgets/widgets.js finds the module of a root of a page brought in by instant navigation from its
    data-mha-widget: the widget's folder, "-" for "_"."""
    template = (WIDGETS / name / f"{name}.html.j2").read_text(encoding="utf-8")
    assert re.findall(r'data-mha-widget="([^"]+)"', template) == [name.replace("_", "-")]
