"""Each widget's view: every number and word its reader reads, made from mha_core's numerics.

A view is plain JSON, the same at build time (the template renders it) and in the browser (the binding,
widgets/runtime/bind.js, fills the same slots):

    {"data": {attribute: text},     the widget's own data-* attributes
     "outputs": {name: slot}}       what fills each data-output="name" element

A slot is text, or {text, value (data-value), vars ({"--v": number}, for pictures), label (aria-label),
hidden, title, data ({attribute: text}), rows [slot, ...] (one per repeated element, from the element's <template>),
outputs ({name: slot} inside the element)}. widgets/shared/slots.html.j2 renders the same keys.
"""

from __future__ import annotations


def fraction(value: float, signed: bool = False) -> dict:
    """A number between about -1 and 1 as a slot: text to 2 decimals, value (data-value) to 4; no "-0.00", a
    minus sign rather than a hyphen, and "+" before a positive signed number."""
    value = round(float(value), 4) + 0.0
    text = f"{value:.2f}".replace("-0.00", "0.00")
    return {"value": f"{value:.4f}", "text": "+" + text if signed and value >= 0.005 else text.replace("-", "−")}


def plural(n: int, word: str) -> str:
    """'1 head', '2 heads'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
