"""One head against several, on a verb that needs three relationships at once.

In "The report that the committee members wrote about the rules was", the verb "was" needs its subject
"report" (nine tokens back: singular, so "was"), the relative clause that says which report, and its
neighbour "rules" (plural: the noun that tempts a reader to "were"). Three relationships, three sets of keys.

Nothing here writes an attention pattern: the sentence becomes embeddings, and every pattern is
softmax(q kᵀ / √d_k) of multi_head_attention with constructed weights, causal mask included:

- one head whose softmax gives the three relationships the shares the reader chooses (d_k = d_head);
- the same, one wide head (d_k = d_model): a wider head is still one softmax, one average;
- several heads of d_head (the reader chooses 1, 2 or 3), their outputs put side by side by W_O: three give
  each relationship a head of its own; two leave one relationship a head of its own (the reader chooses which)
  and make the other two share the other head's softmax, half each; one head shares it three ways.

Residual-stream features (d_model = 54 = 3 · d_head):
  verb, subject, clause   flags: the query to follow, the subject noun, the clause's tokens   3
  position:<i>            one-hot position                                                     n = 11
  token:<t>, number       content: one-hot token, grammatical number (+1 singular noun, -1    V + 1 = 10
                          plural noun, 0 otherwise), the same features whatever role a token plays
  received:<b>            empty in the embeddings: block b (b = 0, 1, 2) of the layer's output,   3 · 10
                          content features again; head h (and copy h of a wide head) writes block h
W_Q and W_K read only the flags and positions, W_V only the content.

What arrives: each block of the verb's output is decomposed (least squares) on the three relationships'
content vectors t_r (the mean content of each relationship's keys). A coefficient of 1 is the relationship's
whole vector; one head's block holds the three together, each at its share, summed in the same
coordinates: "number" holds only the weighted sum of the subject's +1, the neighbour's -1 and the clause's.
"""

from __future__ import annotations

import math

import numpy as np

from .attention import multi_head_attention
from .fields import Between, Choice, Flag, Whole, arguments

TOKENS = ("The", "report", "that", "the", "committee", "members", "wrote", "about", "the", "rules", "was")
VERB = len(TOKENS) - 1
RELATIONSHIPS = ("subject", "clause", "previous")
KEYS = {"subject": (1,), "clause": tuple(range(2, VERB)), "previous": (VERB - 1,)}  # the neighbour ends the clause
NUMBER = {"report": 1.0, "committee": 1.0, "members": -1.0, "rules": -1.0}
MAX_WEIGHT = 100  # the reader's weights are relative, 0..MAX_WEIGHT each, normalised by their sum
MARGIN = 30.0  # logit of a key with a share of 1 over a key with none: e^-30 ≈ 1e-13 leaks
UNDECIDED = 1e-9  # a number this close to 0 says neither singular nor plural (leaks and rounding are smaller)

N = len(TOKENS)
VOCAB = tuple(dict.fromkeys(t.casefold() for t in TOKENS))
FLAGS = {"verb": 0, "subject": 1, "clause": 2}
POSITION = slice(3, 3 + N)
CONTENT = slice(POSITION.stop, POSITION.stop + len(VOCAB) + 1)  # token:<t> ..., then number
D_CONTENT = CONTENT.stop - CONTENT.start
NUMBER_FEATURE = D_CONTENT - 1  # within the content features
N_BLOCKS = len(RELATIONSHIPS)
RECEIVED = slice(CONTENT.stop, CONTENT.stop + N_BLOCKS * D_CONTENT)
D_MODEL = RECEIVED.stop
N_HEADS = len(RELATIONSHIPS)
D_HEAD = D_MODEL // N_HEADS


def embed() -> np.ndarray:
    """x [n, d_model]: flags, one-hot position, content; the received blocks left at 0."""
    x = np.zeros((N, D_MODEL))
    x[VERB, FLAGS["verb"]] = 1.0
    x[KEYS["subject"], FLAGS["subject"]] = 1.0
    x[KEYS["clause"], FLAGS["clause"]] = 1.0
    x[:, POSITION] = np.eye(N)
    content = x[:, CONTENT]  # [n, d_content], a view
    content[np.arange(N), [VOCAB.index(t.casefold()) for t in TOKENS]] = 1.0
    content[:, NUMBER_FEATURE] = [NUMBER.get(t, 0.0) for t in TOKENS]
    return x


def relationship_vectors(x: np.ndarray) -> np.ndarray:
    """[3, d_content]: each relationship's content vector, the mean content of its keys."""
    return np.stack([x[list(KEYS[r]), CONTENT].mean(axis=0) for r in RELATIONSHIPS])


def _logit(weight: float) -> float:
    """A key's logit for the attention weight it should get: MARGIN + ln(weight), and 0 (as for every key
    outside the relationships) for a weight of e^-MARGIN or less."""
    return MARGIN + math.log(max(weight, math.exp(-MARGIN)))


def _logits(shares) -> tuple[float, float, float]:
    """(L_subject, L_clause, L_previous) so that the verb's softmax gives each relationship its share.

    A clause key scores L_clause, the subject L_subject, the neighbour L_clause + L_previous (it ends the
    clause): so L_previous lifts it from its part of the clause's share to that plus the previous share.
    """
    s, c, p = shares
    per_clause_key = c / len(KEYS["clause"])
    L_clause = _logit(per_clause_key)
    return _logit(s), L_clause, _logit(per_clause_key + p) - L_clause


def head_qk(shares, d_k: int) -> tuple[np.ndarray, np.ndarray]:
    """W_Q, W_K [d_model, d_k] of a head whose softmax at the verb gives the relationships shares.

    Column 0 matches the verb with the subject, column 1 the verb with the clause, columns 2.. a query at
    position i with the key at i - 1; W_Q is times √d_k, so q·k / √d_k gives back the logits.
    """
    L_subject, L_clause, L_previous = _logits(shares)
    W_Q, W_K = np.zeros((D_MODEL, d_k)), np.zeros((D_MODEL, d_k))
    W_Q[FLAGS["verb"], 0], W_K[FLAGS["subject"], 0] = L_subject, 1.0
    W_Q[FLAGS["verb"], 1], W_K[FLAGS["clause"], 1] = L_clause, 1.0
    W_Q[POSITION, 2:2 + N] = L_previous * np.eye(N)  # query at i -> direction i
    W_K[POSITION.start + np.arange(N - 1), 3 + np.arange(N - 1)] = 1.0  # key at j -> direction j + 1
    return W_Q * math.sqrt(d_k), W_K


def head_vo(head: int, d_k: int, copies: int) -> tuple[np.ndarray, np.ndarray]:
    """W_V [d_model, d_k]: the content, copied `copies` times; W_O [d_k, d_model]: copy c into block head + c."""
    W_V, W_O = np.zeros((D_MODEL, d_k)), np.zeros((d_k, D_MODEL))
    for c in range(copies):
        z = slice(c * D_CONTENT, (c + 1) * D_CONTENT)  # copy c in the head's output z
        block = RECEIVED.start + (head + c) * D_CONTENT
        W_V[CONTENT, z] = np.eye(D_CONTENT)
        W_O[z, block:block + D_CONTENT] = np.eye(D_CONTENT)
    return W_V, W_O


def layer(shares_by_head, d_k: int) -> dict:
    """multi_head_attention's weights for one head per entry of shares_by_head, each d_k wide: W_Q, W_K,
    W_V [d_model, h·d_k], W_O [h·d_k, d_model]. A head as wide as all blocks copies its content into each."""
    copies = min(d_k // D_CONTENT, N_BLOCKS)
    qk = [head_qk(shares, d_k) for shares in shares_by_head]
    vo = [head_vo(h, d_k, copies if len(shares_by_head) == 1 else 1) for h in range(len(shares_by_head))]
    return {"W_Q": np.concatenate([q for q, _ in qk], axis=1), "W_K": np.concatenate([k for _, k in qk], axis=1),
            "W_V": np.concatenate([v for v, _ in vo], axis=1), "W_O": np.concatenate([o for _, o in vo]),
            "n_heads": len(shares_by_head)}


def received_blocks(x: np.ndarray, W: dict) -> tuple[np.ndarray, np.ndarray]:
    """(the verb's output in blocks [3, d_content], the verb's attention [h, n]) from real attention."""
    out, weights = multi_head_attention.fn(x, **W, causal=True)  # [n, d_model], [h, n, n]; .fn: weights built here
    return out[VERB, RECEIVED].reshape(N_BLOCKS, D_CONTENT), weights[:, VERB]  # [3·d_content] -> [3, d_content]


def decompose(blocks: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, float]:
    """(coefficients [3 blocks, 3 relationships], the largest residual): blocks ≈ coefficients @ T."""
    coefficients = np.linalg.solve(T @ T.T, T @ blocks.T).T  # normal equations: [3, 3] \ [3, d_content] @ [d_content, 3]
    return coefficients, float(np.abs(blocks - coefficients @ T).max())


def head_groups(heads: int, alone: str) -> list[tuple[str, ...]]:
    """The relationships each of `heads` heads follows, the subject's head first (it writes block 0): three
    heads, one each; two, `alone` in a head of its own and the other two sharing one; one head, all three."""
    if heads == N_HEADS:
        return [(r,) for r in RELATIONSHIPS]
    if heads == 1:
        return [RELATIONSHIPS]
    shared = tuple(r for r in RELATIONSHIPS if r != alone)
    return sorted([(alone,), shared], key=lambda group: RELATIONSHIPS.index(group[0]))


def group_shares(group) -> np.ndarray:
    """[3]: a head's softmax shares, split evenly between the relationships it follows."""
    return np.array([1.0 / len(group) if r in group else 0.0 for r in RELATIONSHIPS])


def _one_layer(x: np.ndarray, T: np.ndarray, shares_by_head, d_k: int) -> dict:
    W = layer(shares_by_head, d_k)
    blocks, weights = received_blocks(x, W)
    coefficients, residual = decompose(blocks, T)
    number = float(blocks[0, NUMBER_FEATURE])  # block 0: where one head, or the subject's head, writes
    return {"n_heads": W["n_heads"], "d_k": d_k, "weights": weights, "blocks": coefficients,
            "arrives": coefficients.max(axis=0), "residual": residual, "number": number}


@arguments(subject=Between(0, MAX_WEIGHT), clause=Between(0, MAX_WEIGHT), previous=Between(0, MAX_WEIGHT),
           wide=Flag(), heads=Whole(1, N_HEADS),
           alone=Choice(RELATIONSHIPS, "the relationship that keeps a head of its own when there are 2 heads"))
def one_vs_many(subject=1.0, clause=1.0, previous=1.0, wide: bool = False, heads: int = N_HEADS,
                alone: str = "subject") -> dict:
    """One head with the reader's weights against several heads (1, 2 or 3) at the verb.

    subject, clause, previous: the one head's relative weights (0..100 each, not all 0), normalised into
    its softmax shares. wide: the one head is d_model wide instead of d_head. heads: how many heads of d_head
    the other side has; alone: with 2, the relationship with a head of its own (the other two share one, half
    each; ignored otherwise). Returns {tokens, verb, relationships: {name: key positions}, d_model, d_head,
    wide, shares [3], groups (each of many's heads' relationships), one, many}; one and many each
    {n_heads, d_k, weights [h, n] (the verb's row), blocks [3 blocks, 3 relationships] (coefficients),
    arrives [3] (each relationship's largest coefficient), residual, number (block 0's: +1 singular, -1
    plural; within UNDECIDED of 0, neither)}. What the widget shows of it: mha_page.views.one_vs_many.
    """
    weights = [float(w) for w in (subject, clause, previous)]
    if sum(weights) <= 0:
        raise ValueError("give at least one relationship some weight: subject, clause and previous are all 0")
    shares = np.array(weights) / sum(weights)  # [3], sums to 1
    x = embed()  # [n, d_model]
    T = relationship_vectors(x)  # [3, d_content]
    one = _one_layer(x, T, [shares], D_MODEL if wide else D_HEAD)
    groups = head_groups(heads, alone)
    many = _one_layer(x, T, [group_shares(g) for g in groups], D_HEAD)  # head h: its relationships, evenly
    return {"tokens": list(TOKENS), "verb": VERB, "relationships": {r: list(KEYS[r]) for r in RELATIONSHIPS},
            "d_model": D_MODEL, "d_head": D_HEAD, "wide": wide, "shares": shares, "groups": groups,
            "one": one, "many": many}
