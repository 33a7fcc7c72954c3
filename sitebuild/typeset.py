"""A page's formulas typeset at build time: each `.arithmatex` element that pymdownx.arithmatex (generic mode)
leaves holding \\( \\) or \\[ \\] gets MathML instead (typeset.mjs, in Node, with the pinned Temml), so the page
shows its math at once, with no script to download or run. The browser lays the MathML out itself, in the
reader's math font (temml.css): the pages hold under half the elements and bytes they did with KaTeX's HTML."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path
from xml.etree import ElementTree

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


# The search index (Material's search plugin, search/search_index.json) is written from each page before its
# formulas are typeset, so it holds their TeX, which a search preview would show raw. There each formula becomes
# text with the only markup Material's search keeps for it, <sub> and <sup>: W<sub>E</sub>, not \(W_E\).
INDEXED_MATH = re.compile(r"\\\((.*?)\\\)|\\\[(.*?)\\\]", re.S)
SCRIPTS = {"msub": ("sub",), "munder": ("sub",), "msup": ("sup",), "mover": ("sup",), "msubsup": ("sub", "sup"),
           "munderover": ("sub", "sup")}
UNSHOWN = {"annotation", "annotation-xml"}
WHOLE = {"mi", "mn", "mo", "mtext", "msqrt"}  # read whole: no parentheses needed in a fraction


def preview(node: ElementTree.Element) -> str:
    """A MathML element as HTML text: scripts as <sub>/<sup>, fractions as a/b, roots as √(x), rows of a table
    separated by semicolons; stretched braces and the TeX annotation left out."""
    tag = node.tag
    inner = [preview(child) for child in node]
    if tag in UNSHOWN or (tag == "mo" and node.get("stretchy") == "true" and len(node.text or "") == 1
                          and node.text in "⏟⏞"):
        return ""
    if tag in SCRIPTS:
        return inner[0] + "".join(f"<{t}>{text}</{t}>" for t, text in zip(SCRIPTS[tag], inner[1:]) if text)
    if tag == "mfrac":
        return "/".join(text if child.tag in WHOLE else f"({text})" for child, text in zip(node, inner))
    if tag == "msqrt":
        return f"√({''.join(inner)})"
    if tag == "mspace":
        return " "
    if tag == "mtr":
        return " ".join(inner)
    if tag == "mtable":
        return "; ".join(inner)
    return html.escape(node.text or "", quote=False) + "".join(inner)


def search_previews(index: Path, temml: Path) -> None:
    """Each formula in the search index (its path) replaced by its preview text."""
    data = json.loads(index.read_text(encoding="utf-8"))
    fields = [(doc, key) for doc in data["docs"] for key in ("title", "text") if INDEXED_MATH.search(doc.get(key, ""))]
    found = [m for doc, key in fields for m in INDEXED_MATH.finditer(doc[key])]
    if not found:
        return
    formulas = [{"tex": html.unescape(m[1] if m[1] is not None else m[2]).strip(), "display": m[2] is not None}
                for m in found]
    done = node(SCRIPT, str(temml), stdin=json.dumps(formulas), doing="the search index: typesetting its formulas")
    previews = iter(preview(ElementTree.fromstring(mathml)) for mathml in json.loads(done))
    for doc, key in fields:
        doc[key] = INDEXED_MATH.sub(lambda m: next(previews), doc[key])
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
