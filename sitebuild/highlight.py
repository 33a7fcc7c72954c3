"""The code blocks, made lighter and sized before they are laid out.

Lighter: Pygments wraps every token of a block in a <span> of its class, and Material colours most classes, but
names (`n`, `kc`: Material's --md-code-hl-name-color, which is the code's own colour) and whitespace (`w`: no rule
at all) look exactly as bare text does. Their spans are taken out, so a block reads the same with fewer elements for
the browser to style and lay out (the mechanism page: over 400 fewer).

Sized: a block carries its number of lines (--mha-lines), from which docs/stylesheets/docs.css gives it its height
while the browser skips it, away from the screen (a test compares that height with the block's laid out)."""
from __future__ import annotations

import re

PLAIN = ("n", "kc", "w")  # the classes that draw as the code's own text (a site test checks Material's stylesheet)
BLOCK = re.compile(r'<div class="highlight">(<pre>.*?</pre>)</div>', re.S)
PLAIN_SPAN = re.compile(r'<span class="(?:%s)">([^<]*)</span>' % "|".join(PLAIN))  # a token: text only inside


def code_blocks(page: str) -> str:
    """page (HTML) with the spans of PLAIN's classes inside its highlighted code blocks replaced by their text, and
    each block's number of lines in its --mha-lines."""
    def block(match: re.Match) -> str:
        pre = match[1]
        lines = pre.count("\n")  # every line of its code ends with one, and only its code holds them
        return f'<div class="highlight" style="--mha-lines: {lines}">' + PLAIN_SPAN.sub(r"\1", pre) + "</div>"
    return BLOCK.sub(block, page)
