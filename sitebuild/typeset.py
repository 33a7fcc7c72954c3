"""A page's formulas typeset at build time: each `.arithmatex` element that pymdownx.arithmatex (generic mode)
leaves holding \\( \\) or \\[ \\] gets MathML instead (typeset.mjs, in Node, with the pinned Temml), so the page
shows its math at once, with no script to download or run. The browser lays the MathML out itself, in the
reader's math font (temml.css): the pages hold under half the elements and bytes they did with KaTeX's HTML."""
from __future__ import annotations

import hashlib
import html
import json
import re
from pathlib import Path
from xml.etree import ElementTree

from sitebuild import CACHE, BuildError, kept, node

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


def mathml(formulas: list[dict], temml: Path, doing: str, cache: Path = CACHE) -> list[str]:
    """Each formula ({"tex", "display"}) as MathML, by typeset.mjs with temml (its temml.mjs); made once for
    these formulas, this Temml and this script, then kept in cache (a build or a live reload runs no Node for
    the pages it typeset before)."""
    request = json.dumps(formulas)
    key = hashlib.sha256(request.encode() + SCRIPT.read_bytes() + temml.read_bytes()).hexdigest()[:20]
    made = kept(cache / "typeset" / f"{key}.json",
                lambda: node(SCRIPT, str(temml), stdin=request, doing=doing).encode())
    return json.loads(made)


def typeset(page: str, temml: Path, where: str) -> str:
    """page (HTML) with every formula typeset by temml (its temml.mjs); where names the page in errors."""
    found = list(MATH.finditer(page))
    if not found:
        return page
    formulas = [{"tex": tex(m), "display": m[1] == "div"} for m in found]
    typeset_html = iter(mathml(formulas, temml, doing=f"{where}: typesetting its formulas"))
    return MATH.sub(lambda m: f'<{m[1]} class="arithmatex">{next(typeset_html)}</{m[1]}>', page)


# The search index (Material's search plugin, search/search_index.json) is written from each page before its
# formulas are typeset, so it holds their TeX, which a search preview would show raw. There each formula becomes
# text with the only markup Material's search keeps for it, <sub> and <sup>: W<sub>E</sub>, not \(W_E\).
INDEXED_MATH = re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)
CODE = re.compile(r"(<code\b[^>]*>.*?</code>)", re.S)  # the index's code, left as it is
SCRIPTS = {"msub": ("sub",), "munder": ("sub",), "msup": ("sup",), "mover": ("sup",), "msubsup": ("sub", "sup"),
           "munderover": ("sub", "sup")}
UNSHOWN = {"annotation", "annotation-xml"}
WHOLE = {"mi", "mn", "mo", "mtext", "msqrt"}  # read whole: no parentheses needed in a fraction
BRACES = {"⏟", "⏞"}  # stretched under or over what a label names


def preview(element: ElementTree.Element) -> str:
    """A MathML element as HTML text: scripts as <sub>/<sup>, fractions as a/b, roots as √(x), rows of a table
    separated by semicolons; stretched braces and the TeX annotation left out."""
    tag = element.tag
    inner = [preview(child) for child in element]
    if tag in UNSHOWN or (tag == "mo" and element.get("stretchy") == "true" and element.text in BRACES):
        return ""
    if tag in SCRIPTS:
        return inner[0] + "".join(f"<{t}>{text}</{t}>" for t, text in zip(SCRIPTS[tag], inner[1:]) if text)
    if tag == "mfrac":
        return "/".join(text if child.tag in WHOLE else f"({text})" for child, text in zip(element, inner))
    if tag == "msqrt":
        return f"√({''.join(inner)})"
    if tag == "mspace":
        return " "
    if tag == "mtr":
        return " ".join(inner)
    if tag == "mtable":
        return "; ".join(inner)
    return html.escape(element.text or "", quote=False) + "".join(inner)


def outside_code(text: str, change) -> str:
    """text with change(part) applied to each part outside its <code> elements."""
    return "".join(part if i % 2 else change(part) for i, part in enumerate(CODE.split(text)))


def search_previews(index: Path, temml: Path) -> None:
    """Each formula in the search index (its path), outside code, replaced by its preview text."""
    data = json.loads(index.read_text(encoding="utf-8"))
    found = []
    for doc in data["docs"]:
        for key in ("title", "text"):
            outside_code(doc.get(key, ""), lambda part: found.extend(INDEXED_MATH.finditer(part)) or part)
    if not found:
        return
    formulas = [{"tex": html.unescape(m[1] if m[1] is not None else m[2]).strip(), "display": m[2] is not None}
                for m in found]
    typeset_xml = mathml(formulas, temml, doing="the search index: typesetting its formulas")
    previews = iter([preview(ElementTree.fromstring(each)) for each in typeset_xml])
    for doc in data["docs"]:
        for key in ("title", "text"):
            if key in doc:
                doc[key] = outside_code(doc[key], lambda part: INDEXED_MATH.sub(lambda m: next(previews), part))
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
