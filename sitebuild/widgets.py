"""Widget and figure markers: a line `<!-- widget: NAME key=value ... -->` of a page becomes widget NAME's
HTML, rendered from widgets/NAME/NAME.html.j2 with the state widgets/NAME/widget.py computes (by mha_core, in CPython).

widgets/NAME/widget.py defines OPTIONS {option: type}, context(**options) -> the template's variables, and
optionally assets() -> {file name: bytes}, files the build writes to assets/widgets/NAME/.
A line `<!-- figure: NAME -->` becomes figure NAME, an inline SVG drawn by sitebuild/figures.py."""
from __future__ import annotations

import functools
import importlib.util
import re
import sys

import jinja2

from sitebuild import ROOT, BuildError, figures

WIDGETS = ROOT / "widgets"
STYLESHEET = "assets/widgets/widgets.css"  # in the site: stylesheet()
MARKER = re.compile(r"<!--\s*widget:(.*?)-->")
FIGURE = re.compile(r"<!--\s*figure:\s*(\S*)\s*-->")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`]*`")  # a marker shown as code is text, not a widget
# A <template> holds data or rows for the widget's script, never text a reader reads as it is: Material's search
# leaves out what it marks (it would index the JSON of every step of a training run).
TEMPLATE = re.compile(r"<template\b")


def names() -> list[str]:
    """Every widget: each folder of widgets/ with a widget.py."""
    return sorted(p.parent.name for p in WIDGETS.glob("*/widget.py"))


@functools.cache
def widget_module(name: str):
    """widgets/NAME/widget.py, loaded once (forget() loads them anew)."""
    path = WIDGETS / name / "widget.py"
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name) or not path.exists():
        raise BuildError(f"unknown widget {name!r} (known: {', '.join(names())})")
    if str(ROOT) not in sys.path:  # widget.py imports mha_core
        sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location(f"widget_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def forget() -> None:
    """Load widget.py files, their shared modules and mha_core afresh on next use, so that a rebuild sees their edits."""
    widget_module.cache_clear()
    for name in [m for m in sys.modules if m.split(".")[0] in ("mha_core", "mha_page", "widgets")]:
        del sys.modules[name]


def stylesheet() -> bytes:
    """The runtime's styles, then each widget's (widgets/NAME/NAME.css), in one file: every page needs them all
    (instant navigation brings a widget in without a new document), and one request holds up the first paint
    less than eleven."""
    sources = [WIDGETS / "runtime" / "common.css"] + [WIDGETS / name / f"{name}.css" for name in names()]
    return "".join(f"/* widgets/{src.relative_to(WIDGETS).as_posix()} */\n{src.read_text(encoding='utf-8')}\n"
                   for src in sources if src.exists()).encode()


def assets(name: str) -> dict[str, bytes]:
    """{path under assets/widgets/NAME/: bytes} that widget NAME's widget.py makes, if it makes any."""
    make = getattr(widget_module(name), "assets", None)
    return make() if make else {}


def parse_marker(text: str) -> tuple[str, dict]:
    """'shapes d_model=512 n_heads=8' -> ('shapes', {'d_model': 512, 'n_heads': 8}), typed by the widget."""
    if not text.split():
        raise BuildError("a widget marker needs a widget name: <!-- widget: NAME key=value ... -->")
    name, *pairs = text.split()
    options = widget_module(name).OPTIONS
    values = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or key not in options:
            raise BuildError(f"unknown option {pair!r} for widget {name!r} (known: {', '.join(options)})")
        try:
            values[key] = options[key](raw)
        except ValueError:
            raise BuildError(f"option {key}={raw!r} of widget {name!r} is not a valid {options[key].__name__}") from None
    return name, values


def template_env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(WIDGETS), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


def render_widget(env: jinja2.Environment, name: str, values: dict, index: int) -> str:
    """The page's index-th NAME widget (from 1) as lines with no blank one, so Markdown keeps it as raw HTML, its
    templates left out of the search index."""
    template = env.get_template(f"{name}/{name}.html.j2")
    html = template.render(uid=f"mha-{name}-{index}", index=index, **widget_module(name).context(**values))
    html = TEMPLATE.sub("<template data-search-exclude", html)
    return "\n".join(line for line in html.splitlines() if line.strip())


def expand_markers(markdown: str, env: jinja2.Environment, page: str) -> tuple[str, list[str]]:
    """(markdown with each marker line outside code fences replaced by its widget or figure, the names of the
    widgets it holds, each once); errors name page and line."""
    lines, used, fenced = markdown.split("\n"), [], False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else MARKER.fullmatch(line.strip())
        figure = None if fenced else FIGURE.fullmatch(line.strip())
        if figure:
            try:
                lines[i] = figures.render(figure.group(1))
            except (BuildError, ValueError) as e:
                raise BuildError(f"{page}:{i + 1}: {e}") from None
        elif m:
            try:
                name, values = parse_marker(m.group(1))
                used.append(name)
                lines[i] = render_widget(env, name, values, used.count(name))
            except (BuildError, ValueError) as e:
                raise BuildError(f"{page}:{i + 1}: {e}") from None
        elif not fenced and re.search(r"<!--\s*(widget|figure)", INLINE_CODE.sub("", line)):
            raise BuildError(f"{page}:{i + 1}: a widget marker must stand alone on its line: {line.strip()!r}")
    return "\n".join(lines), list(dict.fromkeys(used))
