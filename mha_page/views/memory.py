"""The memory widget's view: mha_core.memory's steps as the reader reads them (the form mha_page.views
describes). Each step shows q's numbers twice, as they lie in memory and as the array's indices read them,
in units that wrap whole (a token of the buffer where the layout allows); each cell is labelled with its
token and coloured by its head."""

from __future__ import annotations

from mha_core.memory import memory_steps
from . import css_number, declared_as

SPLITS = ("right", "wrong")


def note(step: dict, h: int) -> str:
    """What the step did to memory, in words."""
    if step["view"] and step["name"] == "merge":
        return f"a view of z: no copy, because {'h' if h == 1 else 'n'} = 1"
    if step["view"]:
        return f"a view of {step['buffer']}: the same buffer, new strides"
    if step["from"] is None:
        return "a new array, token by token" if step["name"] == "q" else "a new array, from the attention"
    return f"a copy: {step['moved']} of {len(step['memory'])} numbers move to a new place, token by token"


def strides(values: list[int], itemsize: int) -> str:
    """[64, 8], 8 -> 'strides (64, 8) bytes = (8, 1) elements'."""
    def tup(numbers):
        return "(" + ", ".join(map(str, numbers)) + ("," if len(numbers) == 1 else "") + ")"
    return f"strides {tup(values)} bytes = {tup([s // itemsize for s in values])} elements"


def wrap_unit(shape: list[int] | None, d_model: int) -> int:
    """How many cells of a row wrap as one unit: a memory row's d_model (a token of q's buffer); a read row's
    3-D block when it holds at most d_model numbers (a token of [n, h, d_k]), else a row of its last axis."""
    if shape is None:
        return d_model
    block = shape[-1] * shape[-2] if len(shape) == 3 else shape[-1]
    return block if block <= d_model else shape[-1]


def cells(cells_in_order: list[dict], unit: int, shape: list[int] | None = None, sources=None) -> dict:
    """A row's cells in units that wrap whole: with a shape, a gap (data-gap 1) between the array's rows and a
    wider one (2) between its 3-D blocks; with sources (a copy's), each moved cell knows how far it moved
    (--from, in cells)."""
    block = shape[-1] * shape[-2] if shape and len(shape) == 3 else None
    units = []
    for i, c in enumerate(cells_in_order):
        if i % unit == 0:
            gap = 0 if not shape or not i else 2 if block and i % block == 0 else 1
            units.append({"data": {"gap": gap}, "rows": []})
        moved = sources is not None and sources[i] != i
        units[-1]["rows"].append({
            "text": str(c["token"] + 1), "title": f"token {c['token'] + 1}, head {c['head'] + 1}, feature {c['feature'] + 1}",
            "data": {"cell-head": c["head"], "gap": int(bool(shape and i % unit and i % shape[-1] == 0)),
                     "moved": "true" if moved else "false"},
            "vars": {"--from": sources[i] - i if moved else 0}})
    return {"rows": units}


def step(s: dict, h: int, d_model: int, itemsize: int) -> dict:
    """One step's slot: NumPy's answers as data-* (the contract tests read), its words, its two rows."""
    return {"data": {"step": s["name"], "shape": ",".join(map(str, s["shape"])),
                     "strides": ",".join(map(str, s["strides_bytes"])),
                     "strides-elements": ",".join(map(str, s["strides_elements"])), "buffer": s["buffer"],
                     "view": "true" if s["view"] else "false", "moved": s["moved"]},
            "outputs": {"code": s["code"], "shape": f"[{', '.join(map(str, s['shape']))}]",
                        "strides": strides(s["strides_bytes"], itemsize), "note": note(s, h),
                        "play": {"hidden": not s["moved"]},
                        "memory-row": {"label": f"memory ({s['buffer']})"}, "memory-name": f"memory ({s['buffer']})",
                        "memory": cells(s["memory"], d_model, sources=s["from"]),
                        "read": cells(s["read"], wrap_unit(s["shape"], d_model), s["shape"])}}


def pattern(split: str, h: int, weights: list[list[float]]) -> dict:
    """One head's pattern: a table of weights, each cell its text and its strength (--w)."""
    return {"data": {"head": h}, "label": f"head {h + 1}, {split} split",
            "outputs": {"caption": f"head {h + 1}", "pattern": {"rows": [
                {"rows": [{"text": f"{w:.2f}", "title": f"query {q + 1}, key {k + 1}: {w:.2f}", "vars": {"--w": css_number(w)}}
                          for k, w in enumerate(row)]} for q, row in enumerate(weights)]}}}


@declared_as(memory_steps)
def memory_view(n_tokens: int = 3, n_heads: int = 2, wrong: bool = False) -> dict:
    """The widget's view for n tokens, h heads and the split chosen."""
    r = memory_steps(n_tokens, n_heads, wrong)
    figures = [{"data": {"split": split}, "outputs": {
        "split-caption": f"{split.capitalize()} split: each head's pattern",
        "heads": {"rows": [pattern(split, h, head) for h, head in enumerate(r["patterns"][split].tolist())]}}}
        for split in SPLITS]
    return {"data": {"n": r["n"], "h": r["h"], "wrong": "true" if wrong else "false"},
            "outputs": {"legend": {"rows": [{"text": f"head {i + 1}", "data": {"cell-head": i}} for i in range(r["h"])]},
                        "steps": {"rows": [step(s, r["h"], r["d_model"], r["itemsize"]) for s in r["steps"]]},
                        "patterns": {"rows": figures}},
            "fixed": {"d_model": r["d_model"], "itemsize": r["itemsize"]}}
