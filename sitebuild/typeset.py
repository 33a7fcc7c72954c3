"""A page's formulas typeset at build time: each `.arithmatex` element that pymdownx.arithmatex (generic mode)
leaves holding \\( \\) or \\[ \\] gets MathML instead (typeset.mjs, in Node, with the pinned Temml), so the page
shows its math at once, with no script to download or run. The browser lays the MathML out itself, in the
reader's math font (temml.css): the pages hold under half the elements and bytes they did with KaTeX's HTML."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

from sitebuild import BuildError, node

MATH = re.compile(r'<(span|div) class="arithmatex">(.*?)</\1>', re.S)
DELIMITERS = {"span": ("\\(", "\\)"), "div": ("\\[", "\\]")}
SCRIPT = Path(__file__).with_name("typeset.mjs")


def tex(match: re.Match) -> str:
    """The TeX inside one arithmatex element, without its delimiters."""
    text = html.unescape(match[2]).strip()
    left, right = DELIMITERS[match[1]]
    if not (text.startswith(left) and text.endswith(right)):
        raise BuildError(f"A formula without its {left} {right}: {text[:80]!r}")
    return text[len(left):-len(right)]


def typeset(page: str, temml: Path, where: str) -> str:
    """page (HTML) with every formula typeset by temml (its temml.mjs); where names the page in errors."""
    found = list(MATH.finditer(page))
    if not found:
        return page
    formulas = [{"tex": tex(m), "display": m[1] == "div"} for m in found]
    done = node(SCRIPT, str(temml), stdin=json.dumps(formulas), doing=f"{where}: typesetting its formulas")
    typeset_html = iter(json.loads(done))
    return MATH.sub(lambda m: f'<{m[1]} class="arithmatex">{next(typeset_html)}</{m[1]}>', page)
