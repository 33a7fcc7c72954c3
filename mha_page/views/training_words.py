"""The training widget's words: the heads' roles and names, the sentence under the slider, the heatmap's captions,
what a knock-out changes, the status of a reader's run, and the sentences the page shows as they are."""
from __future__ import annotations

from mha_core.detectors import DETECTORS
from mha_core.model import RECORDED_SEED, TrainConfig

from . import decimal, head_name, plural

ROLE_MIN = 0.4  # a head is named after its best detector score when that score reaches this
ROLE_NAMES = {"previous_token": "previous-token", "induction": "induction", "duplicate_token": "duplicate-token",
              "first_token": "first-token", None: "no clear role"}


def head_roles(scores: dict) -> list[list[str | None]]:
    """roles[layer][head]: the detector kind with the head's highest score if it is ≥ ROLE_MIN, else None."""
    n_layers, n_heads = len(scores[DETECTORS[0]]), len(scores[DETECTORS[0]][0])
    roles = []
    for layer in range(n_layers):
        best = [max(DETECTORS, key=lambda kind: scores[kind][layer][head]) for head in range(n_heads)]
        roles.append([kind if scores[kind][layer][head] >= ROLE_MIN else None for head, kind in enumerate(best)])
    return roles


def display_words(config: TrainConfig) -> str:
    """What the patterns are shown on, in the reader's words."""
    return f"a test sequence that repeats a block of {(config.min_period + config.max_period) // 2} tokens"


def summary(roles: list[list[str | None]], scores: dict, step: int) -> str:
    """The heads that have a role at step, with the score that names them, and the best score of the others:
    during the drop a head can do its part before its score reaches ROLE_MIN."""
    named = [(role, layer, head) for layer, row in enumerate(roles) for head, role in enumerate(row) if role]
    parts = [f"{head_name(layer, head)} is {'an' if ROLE_NAMES[role][0] in 'aeiou' else 'a'} {ROLE_NAMES[role]} head "
             f"(score {decimal(scores[role][layer][head], 3)})" for role, layer, head in named]
    others = [(scores[kind][layer][head], kind, layer, head) for kind in scores
              for layer, row in enumerate(roles) for head, role in enumerate(row) if not role]
    rest = ""
    if others:
        score, kind, layer, head = max(others, key=lambda o: o[0])  # the first of equal scores, as listed
        rest = (f" The highest score of {'the other heads' if named else 'any head'}: {head_name(layer, head)}'s "
                f"{ROLE_NAMES[kind]} score, {decimal(score, 3)}.")
    if not named:
        return f"At step {step} no head has a clear role yet: every detector score is below {ROLE_MIN}.{rest}"
    return f"At step {step}, {'; '.join(parts)}.{rest}"


def head_titles(config: TrainConfig) -> list[list[dict]]:
    """Each head's names, [n_layers][n_heads]: {"name": "L1 H0" (the grid's, a knock-out's), "title": "Layer 1,
    head 0" (the heatmap's caption)}."""
    return [[{"name": head_name(layer, head), "title": f"Layer {layer}, head {head}"} for head in range(config.n_heads)]
            for layer in range(config.n_layers)]


YOUR_TEXT = "your text"  # what a caption calls the reader's text


def captions(config: TrainConfig, step: int, ablate=(), sequence: str | None = None) -> list[list[str]]:
    """The heatmap's caption for each head, [n_layers][n_heads], at step with the heads of ablate knocked out, on
    sequence (the reader's words for it; None: display_words')."""
    knocked = f" (knocked out: {', '.join(head_name(*h) for h in sorted(ablate))})" if ablate else ""
    on = display_words(config) if sequence is None else sequence
    return [[f"{head['title']} at step {step}{knocked}: each row is a query, each column a key, on {on}."
             for head in row] for row in head_titles(config)]


def messages() -> dict:
    """The widget's sentences that are not a view's, shown as they are; "asset-failed" is the one the runtime
    fills in, with why the recorded run's file did not arrive ({error}: runtime/asset.js)."""
    return {"knock-out": "Knock out this head", "restore": "Restore this head",
            "measuring": "Measuring without the knocked-out heads (Python)\u2026",
            "starting": "Starting Python and a fresh model\u2026",
            "partial": "Shown: your run, up to its last good checkpoint.",
            "no-text": "Type a text first: at least two words or punctuation marks.",
            "asset-failed": "The recorded run could not be loaded: {error}"}


def built_status(seed: int = RECORDED_SEED) -> str:
    """The status line while the run the page was built with is shown."""
    return f"Shown: the run trained when this page was built (seed {seed})."


def run_name(seed: int) -> str:
    """'seed 7', or 'seed 0, the recorded run's' for the seed whose numbers the lesson quotes."""
    return f"seed {seed}, the recorded run's" if seed == RECORDED_SEED else f"seed {seed}"


def reference_label(config: TrainConfig) -> str:
    """The legend of a run's loss on repeats drawn beside another run's, for comparison."""
    return f"recorded run ({plural(config.n_layers, 'layer')}), loss on repeats"


def head_names(heads) -> str:
    """[(1, 0), (0, 1)] -> 'L0 H1 and L1 H0'."""
    names = [head_name(layer, head) for layer, head in sorted(heads)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def knockout_readout(intact: dict, ablated: dict, ablate: list[tuple[int, int]]) -> str:
    """What a knock-out changes, in words: the two losses, then the heads of later layers, which read what the
    knocked-out heads wrote (a knocked-out head's own pattern never changes: zeroing removes what it writes,
    not where it looks). intact and ablated: evaluate's answers without and with the heads in ablate zeroed."""
    if not ablate:
        return ""
    its = "its" if len(ablate) == 1 else "their"
    n_layers, n_heads = len(intact["scores"]["induction"]), len(intact["scores"]["induction"][0])
    text = (f"{head_names(ablate)} knocked out ({its} output zeroed). "
            f"Loss on the repeats {decimal(intact['loss_repeat'], 3)} → {decimal(ablated['loss_repeat'], 3)} nats; "
            f"on first occurrences (tokens new to the sequence, which no head can copy) "
            f"{decimal(intact['loss_first'], 3)} → {decimal(ablated['loss_first'], 3)}.")
    readers = [(layer, head) for layer in range(min(layer for layer, _ in ablate) + 1, n_layers)
               for head in range(n_heads) if (layer, head) not in ablate]
    if readers:
        return text + f" Later heads read {its} output, so their patterns change: induction score of " + \
            ", ".join(f"{head_names([h])} {_score(intact, h)} → {_score(ablated, h)}" for h in readers) + "."
    last = max(layer for layer, _ in ablate)  # no layer after it: every pattern stays
    others = [(last, head) for head in range(n_heads) if (last, head) not in ablate]
    kept = "".join(f" {head_names([h])} keeps its pattern (induction score {_score(intact, h)})." for h in others)
    return (text + f" No later layer reads {its} output, so no pattern changes: what changes is the prediction, "
            f"which loses what {'it' if len(ablate) == 1 else 'they'} wrote.{kept}")


def _score(evaluated: dict, head: tuple[int, int]) -> str:
    return decimal(evaluated["scores"]["induction"][head[0]][head[1]], 3)
