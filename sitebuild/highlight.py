"""The code blocks' highlighting, made lighter: Pygments wraps every token of a block in a <span> of its class, and
Material colours most classes, but names (`n`, `kc`: Material's --md-code-hl-name-color, which is the code's own
colour) and whitespace (`w`: no rule at all) look exactly as bare text does. Their spans are taken out, so a block
reads the same with fewer elements for the browser to style and lay out (the mechanism page: over 400 fewer)."""
from __future__ import annotations

import re

PLAIN = ("n", "kc", "w")  # the classes that draw as the code's own text (a site test checks Material's stylesheet)
BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre></div>)', re.S)
PLAIN_SPAN = re.compile(r'<span class="(?:%s)">([^<]*)</span>' % "|".join(PLAIN))  # a token: text only inside


def plain_tokens(page: str) -> str:
    """page (HTML) with the spans of PLAIN's classes inside its highlighted code blocks replaced by their text."""
    return BLOCK.sub(lambda m: m[1] + PLAIN_SPAN.sub(r"\1", m[2]) + m[3], page)
