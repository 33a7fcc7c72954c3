"""Figures: a line `<!-- figure: NAME -->` of a page becomes figure NAME, an inline SVG with its title,
description and caption, drawn at build time (from mha_core's numbers, or the shipped training run's, where it
shows any).

Inline, not an <img>, so that it follows the reader's scheme toggle: every colour is a class that
docs/stylesheets/figures.css styles from Material's --md-* variables. Each drawn number carries a data-*
attribute naming what it is, so tests can compare it with what mha_core computes. Layouts are about 420
units wide and scale with their viewBox: text of 14 units or more stays 11 px or more on a 390 px phone.
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass

from sitebuild import BuildError

WIDTH = 420  # viewBox width of every figure


@dataclass(frozen=True)
class Figure:
    title: str  # the SVG's accessible name
    desc: str  # its long description: everything the picture shows, numbers included
    caption: str
    height: int
    body: str  # SVG elements


def attrs(**kw) -> str:
    """class_="a" data_cell="X 1 2" x=70.333 -> ' class="a" data-cell="X 1 2" x="70.33"' (None values left out)."""
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{html.escape(str(round(v, 2) if isinstance(v, float) else v))}"'
                   for k, v in kw.items() if v is not None)


def text(x, y, s, cls="", anchor="start", **kw) -> str:
    return f'<text{attrs(x=x, y=y, class_=cls or None, text_anchor=anchor if anchor != "start" else None, **kw)}>{html.escape(s)}</text>'


def rect(x, y, w, h, cls, rx=3, **kw) -> str:
    return f'<rect{attrs(x=x, y=y, width=w, height=h, rx=rx, class_=cls, **kw)}/>'


def line(x1, y1, x2, y2, cls, **kw) -> str:
    return f'<line{attrs(x1=x1, y1=y1, x2=x2, y2=y2, class_=cls, **kw)}/>'


def path(d, cls, **kw) -> str:
    return f'<path{attrs(d=d, class_=cls, **kw)}/>'


def arrowheads(name: str, *tones: str) -> str:
    """One arrowhead marker per tone, #mha-fig-NAME-arrow-TONE (a marker takes no colour from its line)."""
    return "<defs>" + "".join(
        f'<marker id="mha-fig-{name}-arrow-{tone}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="6" '
        f'markerHeight="6" orient="auto-start-reverse"><path class="head {tone}" d="M0 0 L10 5 L0 10 z"/></marker>'
        for tone in tones) + "</defs>"


def arrow(name: str, tone: str) -> str:
    return f"url(#mha-fig-{name}-arrow-{tone})"


# ---------------------------------------------------------------- (a) the sentence to X

SENTENCE = "the cat sat on the mat"
EXAMPLE = 1  # the token whose lookup is drawn step by step: "cat", position 1
BLOCKS = (("token", "token", "tok"), ("position", "position", "pos"), ("boundary", "b", "flag"),
          ("previous", "previous", "prev"))  # (feature prefix, header, class), in mha_core's order


def sentence_to_x() -> Figure:
    from mha_core.heads import head_weights

    w = head_weights(SENTENCE)
    tokens, x, features = w["tokens"], w["x"], w["features"]  # x: [n, d_model]
    n, d_model = x.shape
    kinds = [f.split(":")[0] for f in features]
    cls = {prefix: c for prefix, _, c in BLOCKS}
    left, cell = 84, 19.4  # row labels, then one cell a feature
    body = []

    # the sentence, one chip a token, its position under it
    chip = (WIDTH - 16 - 5 * (n - 1)) / n
    for i, t in enumerate(tokens):
        cx = 8 + i * (chip + 5)
        body.append(rect(cx, 6, chip, 26, "chip" + (" focus" if i == EXAMPLE else "")))
        body.append(text(cx + chip / 2, 24, t, "word", "middle"))
        body.append(text(cx + chip / 2, 50, f"position {i}" if i == 0 else str(i), "muted small", "middle"))

    def headers(y):
        out = []
        for prefix, header, c in BLOCKS:
            cols = [j for j, k in enumerate(kinds) if k == prefix]
            x0, x1 = left + cols[0] * cell, left + (cols[-1] + 1) * cell
            out.append(line(x0 + 1, y + 4, x1 - 1, y + 4, "bracket " + c))
            out.append(text((x0 + x1) / 2, y, header, "small " + c + "-text", "middle"))
        return out

    def row(y, label, values, matrix, r, emphasis=""):
        out = [text(left - 5, y + 14, label, emphasis.strip(), "end")]
        for j, v in enumerate(values):
            lit = cls[kinds[j]] if v else "zero"
            out.append(rect(left + j * cell, y, cell - 2, cell - 2, "cell " + lit, rx=2))
            out.append(text(left + j * cell + (cell - 2) / 2, y + 14, f"{v:g}", "num" + (" on" if v else " muted"),
                            "middle", data_cell=f"{matrix} {r} {j}"))
        return out

    # one token's lookup: its word's row of W_E plus its position's row of W_pos gives its row of X
    t = tokens[EXAMPLE]
    e_row = [1.0 if f == f"token:{t}" else 0.0 for f in features]
    p_row = [1.0 if f == f"position:{EXAMPLE}" else 0.0 for f in features]
    y = 72
    body += headers(y)
    body += row(y + 12, f"W_E[{t}]", e_row, "W_E", EXAMPLE)
    body += row(y + 34, f"+ W_pos[{EXAMPLE}]", p_row, "W_pos", EXAMPLE)
    body += row(y + 58, f"= X[{EXAMPLE}]", list(x[EXAMPLE]), "X", EXAMPLE, " strong")
    body.append(line(left, y + 55, left + d_model * cell - 2, y + 55, "rule"))

    # all of X
    y = 196
    body.append(text(8, y, f"X, n × d_model = {n} × {d_model}: a row a token", "strong"))
    body += headers(y + 22)
    for i, t in enumerate(tokens):
        body += row(y + 32 + i * 22, f"{t} {i}", list(x[i]), "X", i, " strong" if i == EXAMPLE else "")
    body.append(rect(left - 3, y + 32 + EXAMPLE * 22 - 3, d_model * cell + 4, cell + 4, "outline", rx=3))
    height = y + 32 + n * 22 + 4

    first, again = [i for i, tok in enumerate(tokens) if tok == tokens[0]][:2]
    apart = " and ".join({"position": "position", "boundary": "the boundary flag"}[k] for k in dict.fromkeys(
        kinds[j] for j in range(d_model) if x[first, j] != x[again, j]))  # what tells the two rows apart
    desc = (f"The sentence '{SENTENCE}' is split into {n} tokens at positions 0 to {n - 1}. Each token's row of X "
            f"is its word's row of the embedding matrix W_E plus its position's row of W_pos. For '{tokens[EXAMPLE]}' "
            f"at position {EXAMPLE}: W_E[{tokens[EXAMPLE]}] has a 1 in the feature token:{tokens[EXAMPLE]}, W_pos[{EXAMPLE}] a 1 "
            f"in position:{EXAMPLE}, and their sum is row {EXAMPLE} of X. Below, all of X, {n} rows of {d_model} numbers: "
            f"{sum(k == 'token' for k in kinds)} token features, {sum(k == 'position' for k in kinds)} position "
            "features, a boundary flag (1 on the first token and on punctuation), and "
            f"{sum(k == 'previous' for k in kinds)} previous-token features, all 0, which layer 0 of the heads "
            f"explorer writes later. The two rows of '{tokens[0]}', {first} and {again}, have the same token features "
            f"and differ in {apart} only.")
    caption = ("From a sentence to X, as the site's hand-built model (behind the heads explorer) makes it. Each "
               "row of X is a word's row of W_E plus its position's row of W_pos; here each feature means one thing, so the sum "
               "keeps them apart (a "
               f"trained model learns dense rows in which they overlap). The two rows of “{tokens[0]}” differ only "
               f"in {apart}. b flags the first token and punctuation; previous stays empty until a layer writes it.")
    return Figure("From a sentence to the matrix X: token embeddings plus positions", desc, caption, height,
                  "\n".join(body))


# ---------------------------------------------------------------- (b) the agreement example

AGREEMENT = "The report that the committee members wrote about the rules was".split()
SUBJECT, CLAUSE, VERB = 1, (2, 9), 10  # report; that … rules; was


def agreement() -> Figure:
    step, top = 25, 24
    y = [top + i * step for i in range(len(AGREEMENT))]  # baseline of each token
    mid = [v - 5 for v in y]  # the middle of a token's letters
    end = 112  # where the words end
    lanes = {"previous": 146, "clause": 172, "subject": 198}
    notes = 212
    body = [arrowheads("agreement", "a", "b", "c")]
    tone = {SUBJECT: "a", VERB - 1: "c"}
    for i, word in enumerate(AGREEMENT):
        c = "strong" if i == VERB else (tone[i] + "-text strong" if i in tone else "")
        body.append(text(14, y[i], word, c or None))
        if CLAUSE[0] <= i <= CLAUSE[1]:
            body.append(line(8, mid[i] - 9, 8, mid[i] + 9, "bar b"))
    body.append(rect(8, y[VERB] - 18, 44, 26, "outline", rx=4))
    leave = {"previous": mid[VERB] - 6, "clause": mid[VERB], "subject": mid[VERB] + 6}  # one stem each
    # the subject: far back, across the clause
    body.append(path(f"M52 {leave['subject']} H{lanes['subject']} V{mid[SUBJECT]} H{end}", "link a",
                     marker_end=arrow("agreement", "a")))
    # the clause: a bracket over its tokens
    c0, c1 = mid[CLAUSE[0]] - 8, mid[CLAUSE[1]] + 8
    body.append(path(f"M{lanes['clause'] - 8} {c0} H{lanes['clause']} V{c1} H{lanes['clause'] - 8}", "link b bracket-b"))
    body.append(path(f"M52 {leave['clause']} H{lanes['clause']} V{c1 + 1}", "link b"))
    # the previous token
    body.append(path(f"M52 {leave['previous']} H{lanes['previous']} V{mid[VERB - 1]} H{end}", "link c",
                     marker_end=arrow("agreement", "c")))
    subject, verb, previous = AGREEMENT[SUBJECT], AGREEMENT[VERB], AGREEMENT[VERB - 1]
    labels = [
        (mid[SUBJECT] - 8, "a", f"subject: {subject}", f"agreement: {verb}, not were"),
        ((c0 + c1) / 2 - 8, "b", "the clause", f"which {subject} it is"),
        (mid[VERB - 1] - 8, "c", f"previous token: {previous}", "its neighbour (plural)"),
    ]
    for ly, c, head, sub in labels:
        body.append(text(notes, ly, head, f"{c}-text strong"))
        body.append(text(notes, ly + 17, sub, "muted"))
    clause = " ".join(AGREEMENT[CLAUSE[0]:CLAUSE[1] + 1])
    desc = (f"The sentence '{' '.join(AGREEMENT)}', one token a line. From the verb '{verb}', at the bottom, three "
            f"arrows: a solid one to its subject '{subject}', {VERB - SUBJECT} tokens back, which decides the "
            f"agreement ({verb}, not were); a dashed one to the relative clause '{clause}', which says which "
            f"{subject}; a dotted one to the previous token, '{previous}', its plural neighbour.")
    caption = ("Three relationships the verb needs at once: its subject (nine tokens back), the clause between "
               "them, and the previous token. One head's softmax spreads one budget of weight over all three.")
    return Figure("The relationships of the agreement example", desc, caption, y[VERB] + 14, "\n".join(body))


# ---------------------------------------------------------------- (c) the induction circuit

REPEAT = "the cat sat on the"  # … A B … A → B, with A = the, B = cat
A_AGAIN, B = 4, 1  # the second "the" (the induction head's query); "cat" (the key it finds)


def induction() -> Figure:
    from mha_core.heads import head_patterns, head_weights

    p = head_patterns(REPEAT)
    tokens, prev, ind = p["tokens"], p["heads"]["previous_token"], p["heads"]["induction"]  # [n, n] each
    w = head_weights(REPEAT)
    residual, features = w["residual"], w["features"]  # [n, d_model]
    previous = [j for j, f in enumerate(features) if f.startswith("previous:")]
    n = len(tokens)
    col = [44 + i * (WIDTH - 88) / (n - 1) for i in range(n)]
    out, layer1, written, layer0, base = 74, 196, 262, 356, 400  # heights, top to bottom
    body = [arrowheads("induction", "a", "c", "muted")]
    bands = [(layer1 - 92, layer1 - 52), (layer1 + 6, layer1 + 28), (layer0 - 78, layer0 - 40)]  # the labels' rows
    stops = [out + 18] + [y for band in sorted(bands) for y in band] + [base - 24]
    for i, t in enumerate(tokens):  # each position's residual stream, from its embedding upwards, under no label
        for top, bottom in zip(stops[::2], stops[1::2]):
            body.append(line(col[i], bottom, col[i], top, "stream"))
        body.append(rect(col[i] - 30, base - 24, 60, 26, "chip" + (" focus" if i in (B, A_AGAIN) else "")))
        body.append(text(col[i], base - 6, t, "word", "middle"))
        body.append(text(col[i], base + 18, str(i), "muted small", "middle"))
    # layer 0: each token attends to the one before it and writes that token into its own stream
    body.append(text(8, layer0 - 62, "layer 0: previous-token head", "c-text strong halo"))
    body.append(text(8, layer0 - 45, "writes the token before into each stream", "muted small halo"))
    for i in range(1, n):
        c = "c" if i == B else "muted"
        body.append(path(f"M{col[i] - 3} {layer0} Q{(col[i] + col[i - 1]) / 2} {layer0 - 30} {col[i - 1] + 5} {layer0}",
                         f"link solid {c}" + (" thick" if i == B else ""), marker_end=arrow("induction", c)))
        body.append(text((col[i] + col[i - 1]) / 2, layer0 - 18, f"{prev[i, i - 1]:.2f}",
                         "small halo " + ("c-text" if i == B else "muted"), "middle",
                         data_weight=f"previous_token {i} {i - 1}"))
        j = max(previous, key=lambda f: residual[i, f])  # the previous-token feature layer 0 wrote here
        body.append(rect(col[i] - 39, written - 16, 78, 24, "tag" + (" c" if i == B else ""), rx=4))
        body.append(text(col[i], written + 1, "prev: " + features[j].split(":", 1)[1], "small" + (" strong" if i == B else ""),
                         "middle", data_written=f"{i} {features[j]}"))
    # layer 1: the second "the" looks for a key whose written previous token is "the"
    body.append(text(8, layer1 - 76, "layer 1: induction head", "a-text strong halo"))
    body.append(text(8, layer1 - 59, "its keys read what layer 0 wrote", "muted small halo"))
    body.append(path(f"M{col[A_AGAIN] - 3} {layer1} C{col[A_AGAIN] - 20} {layer1 - 52} {col[B] + 20} {layer1 - 52} "
                     f"{col[B] + 5} {layer1}", "link a thick", marker_end=arrow("induction", "a")))
    body.append(text((col[A_AGAIN] + col[B]) / 2, layer1 - 44, f"{ind[A_AGAIN, B]:.2f}", "a-text strong halo", "middle",
                     data_weight=f"induction {A_AGAIN} {B}"))
    body.append(text(col[B] - 4, layer1 + 22, f"key: prev “{tokens[A_AGAIN]}”", "small a-text halo"))
    body.append(text(col[A_AGAIN] + 4, layer1 + 22, f"query: “{tokens[A_AGAIN]}”", "small a-text halo", "end"))
    body.append(rect(col[A_AGAIN] - 96, out - 30, 128, 42, "tag a", rx=4))
    body.append(text(col[A_AGAIN] - 32, out - 13, f"reads “{tokens[B]}”:", "small", "middle"))
    body.append(text(col[A_AGAIN] - 32, out + 4, f"next is likely {tokens[B]}", "small strong", "middle"))
    body.append(text(8, 20, "… A B … A → B", "strong"))
    body.append(text(8, 38, f"A = “{tokens[0]}”, B = “{tokens[B]}”", "muted small"))
    body.append(text(8, out + 6, "one residual stream a position", "muted small"))
    a, b = tokens[A_AGAIN], tokens[B]
    desc = (f"The tokens '{REPEAT}' at positions 0 to {n - 1}, each with its residual stream drawn upwards. In layer 0, "
            "the previous-token head makes each token attend to the one before it (weight "
            f"{prev[B, B - 1]:.2f} from '{b}' to '{tokens[B - 1]}') and writes that token into its stream: the stream at "
            f"'{b}' now carries 'previous token: {tokens[B - 1]}'. In layer 1, the induction head's query at the second "
            f"'{a}' matches keys computed from what layer 0 wrote (K-composition): the key at '{b}' says its previous "
            f"token was '{tokens[B - 1]}', so the head puts weight {ind[A_AGAIN, B]:.2f} on '{b}' and reads '{b}', the "
            f"token that followed '{a}' before.")
    caption = ("The induction circuit on a repeat, with the constructed heads of the explorer (mha_core's weights and "
               "attention): the previous-token head writes “the token before me” into each position's residual "
               "stream, and the induction head's keys read it (K-composition).")
    return Figure("The induction circuit: a previous-token head feeds an induction head's keys", desc, caption,
                  base + 24, "\n".join(body))


# ---------------------------------------------------------------- (d) the block around the layer

def block() -> Figure:
    stream, box_x, box_w = 78, 146, 266
    body = [arrowheads("block", "fg", "muted")]

    def box(y, h, title, sub, cls):
        return [rect(box_x, y, box_w, h, "box " + cls, rx=5), text(box_x + box_w / 2, y + 19, title, "strong", "middle"),
                text(box_x + box_w / 2, y + 36, sub, "small", "middle")]

    def sublayer(top, norm, layer, layer_sub, cls, result, formula):
        out = [path(f"M{stream} {top} H{box_x + box_w / 2} V{top + 14}", "link fg", marker_end=arrow("block", "fg"))]
        out += box(top + 16, 44, norm, "LayerNorm or RMSNorm, each row", "norm")
        out.append(line(box_x + box_w / 2, top + 60, box_x + box_w / 2, top + 74, "link fg", marker_end=arrow("block", "fg")))
        out += box(top + 76, 44, layer, layer_sub, cls)
        plus = top + 146
        out.append(path(f"M{box_x + box_w / 2} {top + 120} V{plus} H{stream + 12}", "link fg", marker_end=arrow("block", "fg")))
        out.append(f'<circle{attrs(cx=stream, cy=plus, r=11, class_="plus")}/>')
        out.append(text(stream, plus + 5, "+", "strong", "middle"))
        out.append(text(stream - 18, plus + 5, result, "strong", "end"))
        out.append(text(stream + 18, plus + 26, formula, "small muted"))
        return out

    body.append(text(stream - 12, 18, "x from the block before, n × d_model", "strong"))
    body.append(line(stream, 28, stream, 411, "residual"))  # to the last ⊕
    body.append(text(8, 236, "residual", "small muted"))
    body.append(text(8, 252, "stream", "small muted"))
    body += sublayer(60, "Norm", "Multi-head attention", "this site's layer: across positions", "layer",
                     "x′", "x′ = x + MultiHead(Norm(x))")
    body += sublayer(254, "Norm", "Feed-forward, each position", "d_model → d_ff → d_model", "ffn",
                     "x″", "x″ = x′ + FFN(Norm(x′))")
    body.append(line(stream, 411, stream, 446, "link fg", marker_end=arrow("block", "fg")))
    body.append(text(stream - 12, 466, "x″ to the next block, n × d_model", "strong"))
    body.append(text(stream - 12, 492, "after the last block: Norm, × W_U (unembed), softmax", "small"))
    body.append(text(stream - 12, 510, "→ next-token probabilities, a row per position", "small"))
    desc = ("A pre-norm transformer block, top to bottom. The residual stream x, n by d_model, runs down the left. "
            "It branches into a normalisation and the multi-head attention layer, whose output is added back to "
            "it: x prime equals x plus MultiHead of Norm of x. It branches again into a normalisation and the "
            "feed-forward network, which widens each position to d_ff and back, and that output is added too: "
            "x double prime equals x prime plus FFN of Norm of x prime, which goes on to the next block with the "
            "same shape. After the last block, each position's row is normalised once more, multiplied by the "
            "unembedding W_U, and a softmax turns the result into that position's next-token probabilities.")
    caption = ("The pre-norm block around the layer (GPT-2 and later): the first block reads X, the embeddings; each "
               "sub-layer reads a normalised copy of the residual stream and adds its output back, so the stream keeps "
               "its shape, n × d_model, and is only ever added to. After the last block, a final norm, the unembedding "
               "W_U and a softmax turn each position's row into next-token probabilities (the attention-only toy "
               "model of what heads learn has no norm at all).")
    return Figure("A pre-norm transformer block: residual connections, normalisation, attention, feed-forward",
                  desc, caption, 518, "\n".join(body))


# ---------------------------------------------------------------- (e) from the last residual vector to a loss

SEQUENCE, SHOWN = 0, 6  # the evaluation batch's sequence drawn, and how many of its last tokens


def prediction_example() -> dict:
    """The shipped run's last checkpoint predicting the last token of one evaluation sequence:
    {"tokens" [n], "t" (the position that predicts), "target", "logits" [V], "probs" [V], "loss"}."""
    from mha_core import model, training
    from mha_core.params_codec import decode_params
    from widgets.training import run as recorded

    run = recorded.run()
    config = model.TrainConfig(**run["config"])
    params = decode_params(run["checkpoints"][-1]["params"], config)
    tokens = training.eval_batch(config, run["seed"])  # [B, n]
    logits, _ = model.forward(params, tokens, config)  # [B, n, V]
    losses, probs = model.next_token_losses(logits, tokens)  # [B, n-1], [B, n-1, V]
    t = tokens.shape[1] - 2  # the last position with a next token
    return {"tokens": tokens[SEQUENCE].tolist(), "t": t, "target": int(tokens[SEQUENCE, t + 1]),
            "logits": logits[SEQUENCE, t], "probs": probs[SEQUENCE, t], "loss": float(losses[SEQUENCE, t])}


def prediction() -> Figure:
    e = prediction_example()
    tokens, t, target, logits, probs = e["tokens"], e["t"], e["target"], e["logits"], e["probs"]
    V, mid = len(logits), WIDTH / 2
    body = [arrowheads("prediction", "fg")]

    def down(y0, y1):
        return line(mid, y0, mid, y1, "link fg", marker_end=arrow("prediction", "fg"))

    def box(y, title, sub, cls):
        return [rect(40, y, WIDTH - 80, 42, "box " + cls, rx=5), text(mid, y + 18, title, "strong", "middle"),
                text(mid, y + 35, sub, "small", "middle")]

    # the sequence so far: its last SHOWN tokens, then the one to predict
    chip, gap = 46, 8
    x0 = (WIDTH - (SHOWN + 1) * chip - SHOWN * gap) / 2
    for i, pos in enumerate(range(t - SHOWN + 1, t + 2)):
        cx = x0 + i * (chip + gap)
        body.append(rect(cx, 8, chip, 26, "chip" + (" focus" if pos == t else "")))
        body.append(text(cx + chip / 2, 26, str(tokens[pos]) if pos <= t else "?", "word", "middle",
                         data_token=f"{pos}" if pos <= t else None))
        body.append(text(cx + chip / 2, 50, f"{pos}", "muted small", "middle"))
    body.append(down(56, 72))
    body += box(74, f"embed: W_E[{tokens[t]}] + W_pos[{t}]", "one row a token, d_model numbers", "norm")
    body.append(down(116, 130))
    body += box(132, "the blocks: attention, added to the stream", "the last residual vector, d_model numbers", "layer")
    body.append(down(174, 188))
    body += box(190, "unembed: × W_U, d_model × V", f"one logit per vocabulary entry, V = {V}", "ffn")

    left, step = 40, (WIDTH - 80) / V  # one column a vocabulary entry

    def columns(values, base, scale, label_value, kind):
        out = []
        for entry, value in enumerate(values):
            h = value * scale
            out.append(rect(left + entry * step + 1, base - max(h, 0), step - 2, abs(h),
                            "col" + (" a" if entry == target else ""), rx=0))
        x = left + target * step + step / 2
        top = base - max(values[target] * scale, 0)
        out.append(text(x, top - 6, label_value, "small a-text strong halo", "middle" if 60 < x < WIDTH - 60 else
                        ("start" if x <= 60 else "end"), data_value=kind))
        return out

    # the logits, above and below 0
    zero, span = 300, 40 / max(abs(float(x)) for x in logits)
    body.append(line(left, zero, WIDTH - left, zero, "axis"))
    body += columns([float(x) for x in logits], zero, span, f"{target}: {float(logits[target]):.2f}", "logit")
    body.append(text(left - 4, zero + 5, "0", "muted small", "end"))
    body.append(text(left - 4, zero - 14, "logits", "muted small", "end"))
    body.append(down(352, 368))
    body.append(text(mid + 8, 364, "softmax over the vocabulary", "small"))
    # the probabilities
    base = 450
    body.append(line(left, base, WIDTH - left, base, "axis"))
    body += columns([float(p) for p in probs], base, 60, f"p({target}) = {float(probs[target]):.2f}", "probability")
    body.append(text(mid, base + 18, "probabilities", "muted small", "middle"))
    body.append(text(left, base + 18, "token 0", "muted small"))
    body.append(text(WIDTH - left, base + 18, str(V - 1), "muted small", "end"))
    body.append(text(8, base + 44, f"loss = −ln {float(probs[target]):.2f} = {e['loss']:.2f} nats", "strong",
                     data_value="loss"))
    body.append(text(8, base + 64, f"a uniform guess: ln {V} = {math.log(V):.2f} nats", "muted small",
                     data_value="uniform"))
    best = int(logits.argmax())
    largest = "the largest" if best == target else f"below token {best}'s {float(logits[best]):.2f}"
    desc = (f"One prediction of the trained two-layer model, on a sequence of its task. The tokens at positions "
            f"{t - SHOWN + 1} to {t} are {', '.join(str(x) for x in tokens[t - SHOWN + 1:t + 1])}; the next is to be "
            f"predicted. Token {tokens[t]} at position {t} is embedded (its row of W_E plus row {t} of W_pos), the "
            f"blocks add their attention outputs to it, and the last residual vector times the unembedding W_U gives "
            f"{V} logits, one per vocabulary entry, from {float(logits.min()):.2f} to {float(logits.max()):.2f}; token "
            f"{target}'s is {float(logits[target]):.2f}, {largest}. Softmax over the vocabulary turns them into "
            f"probabilities that sum to 1: token {target} gets {float(probs[target]):.2f}. It is the correct next "
            f"token, so the loss is minus the log of {float(probs[target]):.2f}, {e['loss']:.2f} nats, against "
            f"{math.log(V):.2f} for a uniform guess.")
    caption = (f"How the trained model predicts, on one sequence of its task: embed, the blocks, unembed, softmax. "
               f"The correct next token, {target}, gets probability {float(probs[target]):.2f}; the loss is −ln of "
               "that probability.")
    return Figure("From the last residual vector to next-token probabilities and the loss", desc, caption,
                  base + 72, "\n".join(body))


FIGURES = {"sentence-to-x": sentence_to_x, "agreement": agreement, "induction-circuit": induction, "block": block,
           "prediction": prediction}


def render(name: str) -> str:
    """Figure NAME as one block of HTML with no blank line, so that Markdown keeps it as it is. Search indexes
    its caption, not the labels and digits of its drawing."""
    if name not in FIGURES:
        raise BuildError(f"unknown figure {name!r} (known: {', '.join(FIGURES)})")
    f = FIGURES[name]()
    ids = f"mha-fig-{name}-title mha-fig-{name}-desc"
    return (f'<figure class="mha-figure mha-fig" data-mha-figure="{name}">\n'
            f'<svg xmlns="http://www.w3.org/2000/svg" class="mha-fig__svg" viewBox="0 0 {WIDTH} {f.height}" '
            f'role="img" aria-labelledby="{ids}" data-search-exclude="">\n'
            f'<title id="mha-fig-{name}-title">{html.escape(f.title)}</title>\n'
            f'<desc id="mha-fig-{name}-desc">{html.escape(f.desc)}</desc>\n'
            f'{f.body}\n</svg>\n<figcaption>{html.escape(f.caption)}</figcaption>\n</figure>')
