"""Each widget's view: every number and word its reader reads, made from mha_core's numerics (training.py makes
the training widget's run, which travels as plain JSON with each checkpoint's slots in it: a run is drawn before
Python starts, so its views are made when it is trained).

A view is plain JSON, the same at build time (the template renders it) and in the browser (the binding,
widgets/runtime/bind.js, fills the same slots):

    {"data": {attribute: text},     the widget's own data-* attributes
     "outputs": {name: slot}}       what fills each data-output="name" element

A slot is text, or {text, value (data-value), vars ({"--v": css_number(v)}, for pictures), label (aria-label),
hidden, title, data ({attribute: text}), attrs ({attribute: text}: a chart's SVG geometry, mha_page.views.charts), rows [slot, ...] (one per repeated element, from the element's <template>),
count (as many repeated elements, left as cloned), cells ({data: {attribute: list}, vars: {property: list}, label:
list}: value i of each list for the i-th element its data-cells selector finds; a list may come as {index, values},
a few values repeated), outputs ({name: slot} inside the element)}. widgets/shared/slots.html.j2 renders the same
keys (a template renders cells itself).
"""

from __future__ import annotations

from mha_core.fields import Declared


def declared_as(numerics, **more):
    """@declared_as(fn): the view takes the arguments of the numerics it shows, as fn declares them (one
    declaration: the browser's bridge and a Python user's call check the same), and the fields more declares:
    what only the view needs."""
    return lambda view: Declared(view, numerics.args | more, numerics.relations)


def head_name(layer: int, head: int) -> str:
    """A head's name wherever a reader reads one: 'L1 H0'."""
    return f"L{layer} H{head}"


def decimal(value: float, decimals: int = 2) -> str:
    """0.5 -> '0.50', -1.25 -> '−1.25' (a true minus sign); never '−0.00'."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text.replace("-", "\u2212")


def fraction(value: float, signed: bool = False) -> dict:
    """A number between about -1 and 1 as a slot: text to 2 decimals (decimal's), value (data-value) to 4,
    and "+" before a positive signed number."""
    value = round(float(value), 4) + 0.0
    text = decimal(value)
    return {"value": f"{value:.4f}", "text": "+" + text if signed and value >= 0.005 else text}


def css_number(value: float) -> str:
    """A number for a CSS variable (a picture's --v, --w): 6 decimals, never an exponent (1e-14 in a style is
    not a number to the Nu Html Checker's CSS parser), the same text in the template and in the binding."""
    return f"{float(value):.6f}"


def whole_error(field: str, low: int, high: int) -> str:
    """A number field's refusal, in its own words (a template puts it in the field's data-error, which
    widgets/shared/numbers.js shows): 'd_model must be a whole number from 1 to 65,536.'."""
    return f"{field} must be a whole number from {low:,} to {high:,}."


TOKEN_CHARS = 30  # a token longer than this is shown cut, ending in "…", in the sentences that name it


def clip(token: str) -> str:
    """A token as the sentences that name it show it: at most TOKEN_CHARS characters."""
    return token if len(token) <= TOKEN_CHARS else token[:TOKEN_CHARS - 1] + "…"


def cell_names(tokens: list[str]) -> dict:
    """The words that name a heatmap's cell (q, k), sent once per sequence rather than once per cell: names["from"][q]
    + names["to"][k], then its weight's text, or names["masked"] for a key after the query."""
    return {"from": [f"“{clip(t)}” ({i}) → " for i, t in enumerate(tokens)],
            "to": [f"“{clip(t)}” ({i}): " for i, t in enumerate(tokens)], "masked": "masked, a later token"}


def plural(n: int, word: str) -> str:
    """'1 head', '2 heads'."""
    return f"{n:,} {word}{'' if n == 1 else 's'}"
