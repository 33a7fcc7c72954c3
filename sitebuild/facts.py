"""Fact markers: `<!-- fact: NAME -->` anywhere in a page's Markdown becomes the text of fact NAME, a number
the build computes from a widget's model (widgets/WIDGET/facts.py defines facts() -> {name: text}).

A name no facts.py defines stops the build, so the explainer quotes no number about a model that the build
did not compute from that model."""
from __future__ import annotations

import functools
import importlib.util
import re

from sitebuild import BuildError
from sitebuild.widgets import WIDGETS

MARKER = re.compile(r"<!--\s*fact:\s*(\S*?)\s*-->")


def _load(path):
    spec = importlib.util.spec_from_file_location(f"facts_{path.parent.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def all_facts() -> dict[str, str]:
    """Every widget's facts by name, computed once per build (forget() computes them anew)."""
    out: dict[str, str] = {}
    for path in sorted(WIDGETS.glob("*/facts.py")):
        for name, text in _load(path).facts().items():
            if name in out:
                raise BuildError(f"fact {name!r} is defined twice (again in {path.parent.name}/facts.py)")
            out[name] = text
    return out


def forget() -> None:
    all_facts.cache_clear()


def expand(markdown: str, page: str) -> str:
    """markdown with each fact marker replaced by its text; an unknown name is an error naming page and line."""
    if "fact:" not in markdown:
        return markdown
    facts = all_facts()

    def value(m: re.Match) -> str:
        if m.group(1) not in facts:
            line = markdown.count("\n", 0, m.start()) + 1
            raise BuildError(f"{page}:{line}: unknown fact {m.group(1)!r} (known: {', '.join(sorted(facts))})")
        return facts[m.group(1)]
    return MARKER.sub(value, markdown)
