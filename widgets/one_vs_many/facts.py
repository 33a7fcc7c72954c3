"""The numbers why-heads quotes about the sentence of the one-head-against-several widget, computed by
mha_core.one_vs_many: the clause's nouns and their mean, and what one head shared by the subject and the clause
delivers to the verb.

facts() gives {name: text} for the page's `<!-- fact: NAME -->` markers (sitebuild/facts.py).
"""
from __future__ import annotations

from mha_core import one_vs_many as ovm


def signed(x: float) -> str:
    """+1, −1, −0.125: a sign always, a minus sign as the page prints it."""
    return f"{x:+g}".replace("-", "\u2212")


def facts() -> dict[str, str]:
    number = ovm.embed()[:, ovm.CONTENT][:, ovm.NUMBER_FEATURE]  # [n]: +1 singular, −1 plural, 0 otherwise
    clause = list(ovm.KEYS["clause"])
    nouns = [float(number[j]) for j in clause if number[j] != 0]
    pair = ovm.one_vs_many(heads=2, alone="previous")["many"]  # subject and clause share a head, half each
    return {"ovm_clause_nouns": ", ".join(signed(v) for v in nouns[:-1]) + f" and {signed(nouns[-1])}",
            "ovm_clause_sum": signed(sum(nouns)),
            "ovm_clause_tokens": str(len(clause)),
            "ovm_clause_mean": signed(float(number[clause].mean())),
            "ovm_pair_number": f"{pair['number']:.2f}"}
