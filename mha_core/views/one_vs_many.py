"""The one-head-against-several widget's view: mha_core.one_vs_many's answer as the reader reads it.

one_vs_many_view(...) -> {"data", "outputs", "fixed"} (the form mha_core.views describes): "fixed" holds what
no control changes (the sentence, each relationship's name and words), rendered once by the template.
"""

from __future__ import annotations

from ..one_vs_many import D_CONTENT, KEYS, RELATIONSHIPS, TOKENS, UNDECIDED, VERB, one_vs_many
from . import css_number, declared_as, fraction

NAMES = {"subject": "Subject", "clause": "Clause", "previous": "Previous token"}
OWNERS = {"subject": "the subject's", "clause": "the clause's", "previous": "the previous token's"}
COUNTS = {1: "one", 3: "three"}
LAYERS = ("one", "many")


def verb_form(number: float) -> str:
    """The verb a number reads as: "was" (singular, > 0), "were" (plural, < 0), or "was or were?"."""
    return "was or were?" if abs(number) < UNDECIDED else "was" if number > 0 else "were"


def roles() -> list[str]:
    """Each token's colour: the relationship it belongs to (the neighbour's own, though it ends the clause)."""
    role = {j: r for r in RELATIONSHIPS for j in KEYS[r]}  # later relationships win: "previous" over "clause"
    return [role.get(j, "none") for j in range(len(TOKENS))]


def label(n_heads: int, d_k: int, d_model: int) -> str:
    """"One head, d_k = 18", "One wide head, d_k = 54 = d_model", "Three heads, d_k = 18 each"."""
    if n_heads > 1:
        return f"{COUNTS[n_heads].capitalize()} heads, d_k = {d_k} each"
    return f"One wide head, d_k = {d_k} = d_model" if d_k == d_model else f"One head, d_k = {d_k}"


def _looks(layer: dict, role: list[str]) -> dict:
    """Each head's row of attention at the verb: its cells (--w, coloured by role) and its sentence."""
    rows = []
    for h, row in enumerate(layer["weights"]):
        words = ", ".join(f"{t} {fraction(w)['text']}" for t, w in zip(TOKENS, row))
        rows.append({"label": f"Head {h + 1} attends from “{TOKENS[VERB]}” to: {words}",
                     "rows": [{"vars": {"--w": css_number(w)}, "data": {"role": r}} for w, r in zip(row, role)]})
    return {"rows": rows}


def _layer(name: str, layer: dict, d_model: int) -> dict:
    """The outputs of one panel: its label, the verb's attention, what arrives, the blocks, the number."""
    form = verb_form(layer["number"])
    out = {f"{name}-label": {"text": label(layer["n_heads"], layer["d_k"], d_model), "value": str(layer["n_heads"])},
           f"{name}-looks": _looks(layer, roles()),
           f"{name}-number": fraction(layer["number"], signed=True), f"{name}-verb": {"text": form, "value": form}}
    for i, rel in enumerate(RELATIONSHIPS):
        out[f"{name}-{rel}"] = fraction(layer["arrives"][i])
        out[f"{name}-bar-{rel}"] = {"vars": {"--v": css_number(min(max(layer["arrives"][i], 0.0), 1.0))}}
        for b, block in enumerate(layer["blocks"]):
            out[f"{name}-{b}-{rel}"] = {"vars": {"--v": css_number(min(max(block[i], 0.0), 1.0))}}
    return out


def _summary(r: dict, outputs: dict) -> str:
    """The result in two sentences, for the widget's live region."""
    text = {name: outputs[name]["text"] for name in outputs if "text" in outputs[name]}
    one = [f"{text[f'one-{rel}']} of {OWNERS[rel]} vector" for rel in RELATIONSHIPS]
    one_label, many_label = (text[f"{name}-label"][0].lower() + text[f"{name}-label"][1:] for name in LAYERS)
    many = ", ".join(text[f"many-{rel}"] for rel in RELATIONSHIPS)
    return (f"With {one_label}, “{TOKENS[VERB]}” receives {one[0]}, {one[1]} and {one[2]}, summed in one "
            f"average: its number reads {text['one-number']}, so “{text['one-verb']}”. With "
            f"{many_label}, each arrives whole ({many}) in a block of its own: number "
            f"{text['many-number']}, so “{text['many-verb']}”.")


def fixed() -> dict:
    """What no control changes: the sentence with each token's role, each relationship's name and words."""
    return {"tokens": list(TOKENS), "roles": roles(), "verb": VERB, "block_size": D_CONTENT,
            "relationships": [{"name": r, "label": NAMES[r], "words": " ".join(TOKENS[j] for j in KEYS[r])}
                              for r in RELATIONSHIPS]}


@declared_as(one_vs_many)
def one_vs_many_view(subject=1.0, clause=1.0, previous=1.0, wide: bool = False) -> dict:
    """The widget's view for the reader's weights (as mha_core.one_vs_many takes them)."""
    r = one_vs_many(subject, clause, previous, wide)
    outputs = {f"share-{rel}": fraction(share) for rel, share in zip(RELATIONSHIPS, r["shares"])}
    for name in LAYERS:
        outputs |= _layer(name, r[name], r["d_model"])
    outputs["summary"] = _summary(r, outputs)
    return {"data": {"wide": "true" if wide else "false"}, "outputs": outputs,
            "fixed": fixed() | {"d_model": r["d_model"], "d_head": r["d_head"]}}
