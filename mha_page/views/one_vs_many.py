"""The one-head-against-several widget's view: mha_core.one_vs_many's answer as the reader reads it.

one_vs_many_view(...) -> {"data", "outputs", "fixed"} (the form mha_page.views describes): "fixed" holds what
no control changes (the sentence, each relationship's name and words), rendered once by the template.
"""

from __future__ import annotations

from mha_core.one_vs_many import D_CONTENT, KEYS, N_BLOCKS, N_HEADS, RELATIONSHIPS, TOKENS, UNDECIDED, VERB, one_vs_many
from . import css_number, declared_as, fraction, plural

NAMES = {"subject": "Subject", "clause": "Clause", "previous": "Previous token"}
OWNERS = {"subject": "the subject's", "clause": "the clause's", "previous": "the previous token's"}
THE = {"subject": "the subject", "clause": "the clause", "previous": "the previous token"}
COUNTS = {1: "one", 2: "two", 3: "three"}
EACH = {2: "half each", 3: "a third each"}  # a shared head's even split, in words
LAYERS = ("one", "many")
ONE_TITLE = "one softmax, one average"
ONE_NOTE = ("One average adds the relationships' vectors in the same numbers: the subject's +1 and the neighbour's "
            "−1 land in one number, which holds only their weighted sum (with the clause's).")


def verb_form(number: float) -> str:
    """The verb a number reads as: "was" (singular, > 0), "were" (plural, < 0), or "was or were?"."""
    return "was or were?" if abs(number) < UNDECIDED else "was" if number > 0 else "were"


def roles() -> list[str]:
    """Each token's colour: the relationship it belongs to (the neighbour's own, though it ends the clause)."""
    role = {j: r for r in RELATIONSHIPS for j in KEYS[r]}  # later relationships win: "previous" over "clause"
    return [role.get(j, "none") for j in range(len(TOKENS))]


def heads_and_width(n_heads: int, d_k: int, d_model: int) -> tuple[str, str]:
    """("One head", "d_k = 18"), ("One wide head", "d_k = 54 = d_model"), ("Three heads", "d_k = 18 each")."""
    if n_heads > 1:
        return f"{COUNTS[n_heads].capitalize()} heads", f"d_k = {d_k} each"
    return ("One wide head", f"d_k = {d_k} = d_model") if d_k == d_model else ("One head", f"d_k = {d_k}")


def label(n_heads: int, d_k: int, d_model: int) -> str:
    """"One head, d_k = 18", "One wide head, d_k = 54 = d_model", "Three heads, d_k = 18 each"."""
    return ", ".join(heads_and_width(n_heads, d_k, d_model))


def and_join(words) -> str:
    """["a"] -> "a", ["a", "b"] -> "a and b", ["a", "b", "c"] -> "a, b and c"."""
    words = list(words)
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def many_title(groups) -> str:
    """What the several heads' softmaxes follow, e.g. "two softmaxes for three relationships: the clause and the
    previous token share one, half each"."""
    if len(groups) == N_HEADS:
        return "one softmax per relationship, and W_O puts each head's output in a block of its own"
    shared = next(g for g in groups if len(g) > 1)
    softmaxes = f"{COUNTS[len(groups)]} softmax{'es' if len(groups) > 1 else ''}"
    share = "share it" if len(groups) == 1 else "share one"
    return (f"{softmaxes} for {COUNTS[len(RELATIONSHIPS)]} relationships: {and_join(THE[r] for r in shared)} "
            f"{share}, {EACH[len(shared)]}")


def many_note(groups) -> str:
    """What each block of the verb's output holds, e.g. "Block 1 holds only the subject; block 2 holds the
    clause and the previous token, half each; block 3 is empty."."""
    holds = [f"block {h + 1} holds " + (f"only {THE[g[0]]}" if len(g) == 1 else
                                        f"{and_join(THE[r] for r in g)}, {EACH[len(g)]}") for h, g in enumerate(groups)]
    holds += [f"block {b + 1} is empty" for b in range(len(groups), N_BLOCKS)]
    text = "; ".join(holds) + "."
    return text[0].upper() + text[1:]


def _looks(layer: dict, role: list[str]) -> dict:
    """Each head's row of attention at the verb: its cells (--w, coloured by role) and its sentence."""
    rows = []
    for h, row in enumerate(layer["weights"]):
        words = ", ".join(f"{t} {fraction(w)['text']}" for t, w in zip(TOKENS, row))
        rows.append({"label": f"Head {h + 1} attends from “{TOKENS[VERB]}” to: {words}",
                     "rows": [{"vars": {"--w": css_number(w)}, "data": {"role": r}} for w, r in zip(row, role)]})
    return {"rows": rows}


def _layer(name: str, layer: dict, d_model: int, title: str, note: str) -> dict:
    """The outputs of one panel: its label, title and note, the verb's attention, what arrives, the blocks, the
    number."""
    form = verb_form(layer["number"])
    out = {f"{name}-label": {"text": label(layer["n_heads"], layer["d_k"], d_model), "value": str(layer["n_heads"])},
           f"{name}-title": title, f"{name}-note": note,
           f"{name}-looks": _looks(layer, roles()),
           f"{name}-number": fraction(layer["number"], signed=True), f"{name}-verb": {"text": form, "value": form}}
    for i, rel in enumerate(RELATIONSHIPS):
        out[f"{name}-{rel}"] = fraction(layer["arrives"][i])
        out[f"{name}-bar-{rel}"] = {"vars": {"--v": css_number(min(max(layer["arrives"][i], 0.0), 1.0))}}
        for b, block in enumerate(layer["blocks"]):
            out[f"{name}-{b}-{rel}"] = {"vars": {"--v": css_number(min(max(block[i], 0.0), 1.0))}}
    return out


def _arrivals(groups, text: dict) -> str:
    """How the several heads deliver, e.g. "the subject arrives whole (1.00) in a block of its own; the clause
    and the previous token share one softmax and arrive at 0.50 and 0.50"."""
    if len(groups) == N_HEADS:
        return f"each arrives whole ({', '.join(text[f'many-{rel}'] for rel in RELATIONSHIPS)}) in a block of its own"
    return "; ".join(f"{THE[g[0]]} arrives whole ({text[f'many-{g[0]}']}) in a block of its own" if len(g) == 1 else
                     f"{and_join(THE[r] for r in g)} share one softmax and arrive at "
                     f"{and_join(text[f'many-{r}'] for r in g)}" for g in groups)


def _summary(r: dict, outputs: dict) -> str:
    """The result in two sentences, for the widget's live region."""
    text = {name: slot["text"] for name, slot in outputs.items() if isinstance(slot, dict) and "text" in slot}
    one = [f"{text[f'one-{rel}']} of {OWNERS[rel]} vector" for rel in RELATIONSHIPS]
    one_label, many_label = (text[f"{name}-label"][0].lower() + text[f"{name}-label"][1:] for name in LAYERS)
    return (f"With {one_label}, “{TOKENS[VERB]}” receives {one[0]}, {one[1]} and {one[2]}, summed in one "
            f"average: its number reads {text['one-number']}, so “{text['one-verb']}”. With "
            f"{many_label}, {_arrivals(r['groups'], text)}: number {text['many-number']}, "
            f"so “{text['many-verb']}”.")


def _verdict(r: dict, outputs: dict) -> dict:
    """Each panel's reading of the verb's number in one line, shown beside the controls: on a phone the panels
    are a screen or more below the sliders. Its value: the two verbs, one head's first."""
    def side(name):
        heads, width = heads_and_width(r[name]["n_heads"], r[name]["d_k"], r["d_model"])
        return (f"{heads[0].lower() + heads[1:]} ({width}) {outputs[f'{name}-number']['text']}, "
                f"so “{outputs[f'{name}-verb']['text']}”")
    return {"text": f"The subject's number at “{TOKENS[VERB]}”: {side('one')}; {side('many')}.",
            "value": "|".join(outputs[f"{name}-verb"]["text"] for name in LAYERS)}


def fixed() -> dict:
    """What no control changes: the sentence with each token's role, each relationship's name and words."""
    return {"tokens": list(TOKENS), "roles": roles(), "verb": VERB, "block_size": D_CONTENT,
            "heads": [{"value": h, "label": plural(h, "head")} for h in range(1, N_HEADS + 1)],
            "relationships": [{"name": r, "label": NAMES[r], "words": " ".join(TOKENS[j] for j in KEYS[r])}
                              for r in RELATIONSHIPS]}


@declared_as(one_vs_many)
def one_vs_many_view(subject=1.0, clause=1.0, previous=1.0, wide: bool = False, heads: int = N_HEADS,
                     alone: str = "subject") -> dict:
    """The widget's view for the reader's weights and heads (as mha_core.one_vs_many takes them)."""
    r = one_vs_many(subject, clause, previous, wide, heads, alone)
    outputs = {f"share-{rel}": fraction(share) for rel, share in zip(RELATIONSHIPS, r["shares"])}
    outputs |= _layer("one", r["one"], r["d_model"], ONE_TITLE, ONE_NOTE)
    outputs |= _layer("many", r["many"], r["d_model"], many_title(r["groups"]), many_note(r["groups"]))
    outputs["verdict"] = _verdict(r, outputs)
    outputs["summary"] = _summary(r, outputs)
    return {"data": {"wide": "true" if wide else "false", "heads": str(r["many"]["n_heads"]),
                     "alone": alone}, "outputs": outputs,
            "fixed": fixed() | {"d_model": r["d_model"], "d_head": r["d_head"]}}
