"""The explainer's sentences about the trained models against the runs: every `<!-- fact: NAME -->` of the
built page shows the number the recorded run gives (recomputed here, from the shipped run.json), the
one-layer control forms no induction head, and each claim the text makes in words holds in the runs."""
from __future__ import annotations

import html
import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

from mha_core import model, training
from mha_page.views import training as training_views
from mha_page.views.training_words import ROLE_MIN
from sitebuild import BuildError, facts as fact_markers

ROOT = Path(__file__).resolve().parents[2]
PAGE = "what-heads-learn.md"
SECTION = "## Heads that emerge"


def load_facts_module():
    spec = importlib.util.spec_from_file_location("training_facts", ROOT / "widgets/training/facts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(cdn_site) -> Path:
    """The site as build.py builds it, without Pyodide's files (read only: every module shares one build)."""
    return cdn_site


@pytest.fixture(scope="module")
def run(site) -> dict:
    return json.loads((site / "assets/widgets/training/run.json").read_bytes())


@pytest.fixture(scope="module")
def facts() -> dict[str, str]:
    return fact_markers.all_facts()


def text_of(page_html: str) -> str:
    body = re.search(r'<article class="md-content__inner[^"]*">(.*)</article>', page_html, re.S).group(1)
    return plain(html.unescape(re.sub(r"<[^>]+>", " ", body)))


def plain(text: str) -> str:
    """text with its whitespace collapsed and none before a punctuation mark."""
    return re.sub(r" ([:;,.)])", r"\1", " ".join(text.split()))


def first_step_from_which(history: list[dict], above) -> int:
    """The first logged step from which above(entry) holds to the end."""
    steps = [h["step"] for h in history]
    last_below = max((i for i, h in enumerate(history) if not above(h)), default=-1)
    return steps[last_below + 1]


def test_the_figures_are_the_recorded_runs(run, facts):
    """Recomputed here without facts.py's helpers: the losses, the drop and the order of events."""
    h = run["history"]
    first = [e["loss_first"] for e in h]
    repeat = {e["step"]: e["loss_repeat"] for e in h}
    prev = [e["scores"]["previous_token"][0][0] for e in h]
    assert facts["uniform_loss"] == f"{math.log(32):.2f}" == "3.47"
    assert (facts["first_loss_start"], facts["first_loss_peak"], facts["first_loss_end"]) == (
        f"{first[0]:.2f}", f"{max(first):.2f}", f"{first[-1]:.2f}")
    assert facts["first_loss_peak_step"] == str(h[first.index(max(first))]["step"])
    start = max((s for s in repeat if s + 50 in repeat), key=lambda s: repeat[s] - repeat[s + 50])
    assert (facts["drop_start"], facts["drop_end"]) == (str(start), str(start + 50))
    both = first_step_from_which(h, lambda e: min(e["scores"]["induction"][1]) >= ROLE_MIN)
    assert facts["induction_step"] == str(both) and start <= both <= start + 50
    assert facts["induction_end"] == " and ".join(f"{s:.2f}" for s in h[-1]["scores"]["induction"][1])
    assert run["checkpoints"][-1]["roles"][0] == ["previous_token", None]  # L0 H0, as the text names it
    named = first_step_from_which(h, lambda e: e["scores"]["previous_token"][0][0] >= ROLE_MIN)
    assert facts["prev_head"] == "L0 H0" and facts["prev_named_step"] == str(named) and named > start + 50
    assert facts["prev_end"] == f"{prev[-1]:.2f}"
    # the figures, as the shipped run gives them
    assert float(facts["first_loss_start"]) == pytest.approx(3.49, abs=0.05)
    assert 4.2 <= float(facts["first_loss_peak"]) <= 4.6 and 250 <= int(facts["first_loss_peak_step"]) <= 350
    assert 250 <= both <= 300 and 300 <= named <= 350 and 0.45 <= prev[-1] <= 0.6


def test_knock_outs_quoted_are_what_the_widget_measures(run, facts):
    last = run["checkpoints"][-1]["params"]

    def repeat_loss(heads):
        return training_views.training_evaluate(run["config"], run["seed"], last, heads)["ablated"]["loss_repeat"]
    induction = run["history"][-1]["scores"]["induction"][1]
    best = max(range(len(induction)), key=lambda h: induction[h])  # the head the widget's experiment knocks out
    assert facts["ko_induction_head"] == f"L1 H{best}"
    assert facts["ko_induction_repeat"] == f"{repeat_loss([[1, best]]):.2f}"
    both = repeat_loss([[1, 0], [1, 1]])
    assert facts["ko_both_induction_repeat"] == f"{both:.2f}"
    assert repeat_loss([[1, best]]) < both / 2 and repeat_loss([[1, 1 - best]]) < both / 2  # the other does most of it
    assert facts["ko_induction_other_head"] == f"L1 H{1 - best}"
    assert facts["ko_induction_other_repeat"] == f"{repeat_loss([[1, 1 - best]]):.2f}"
    assert facts["ko_prev_repeat"] == f"{repeat_loss([[0, 0]]):.2f}"


def test_the_one_layer_control_forms_no_induction_head(run):
    one = load_facts_module().one_layer_run(run)
    assert one["config"] == {**run["config"], "n_layers": 1} and one["seed"] == run["seed"]
    assert one["steps"] == run["steps"]
    scores = [s for e in one["history"] for row in e["scores"]["induction"] for s in row]
    assert max(scores) <= 0.2
    repeat = [e["loss_repeat"] for e in one["history"]]
    assert min(repeat) > 2 and run["history"][-1]["loss_repeat"] < 0.2


def test_blocks_of_fixed_length_need_no_previous_token_head(run, facts):
    module = load_facts_module()
    fixed = module.fixed_block_run(run)
    assert fixed["config"] == {**run["config"], "min_period": 8, "max_period": 8} and fixed["seed"] == run["seed"]
    prev = [s for e in fixed["history"] for row in e["scores"]["previous_token"] for s in row]
    assert max(prev) < ROLE_MIN and facts["fixed_prev_max"] == f"{max(prev):.2f}"
    below = [next(e["step"] for e in r["history"] if e["loss_repeat"] < 1) for r in (fixed, run)]
    assert below[0] < below[1] and [facts["fixed_below_one_step"], facts["below_one_step"]] == list(map(str, below))
    assert "induction" in fixed["checkpoints"][-1]["roles"][0]  # a positional head, at the induction offset


def test_every_fact_in_the_page_is_shown_where_its_marker_was(site, facts):
    markdown = (ROOT / "docs" / PAGE).read_text(encoding="utf-8")
    section = markdown[markdown.index(SECTION):]
    shown = text_of((site / "what-heads-learn/index.html").read_text(encoding="utf-8"))
    assert "fact:" not in shown
    prose = re.sub(r"\{#[^}]*\}", "", section)  # attr_list's ids are not shown
    prose = plain(re.sub(r"(^|\n)\s*(- |\?\?\? question )", " ", prose).replace("*", "").replace('"', ""))
    markers = list(fact_markers.MARKER.finditer(prose))
    assert len(markers) >= 30
    values = fact_markers.MARKER.sub(lambda m: facts[m.group(1)], prose)
    offset = 0
    for m in markers:  # the words before each marker, then its value, as the page shows them
        end = m.start() + offset + len(facts[m.group(1)])
        offset += len(facts[m.group(1)]) - len(m.group(0))
        words = values[:end].split()[-4:]
        assert " ".join(words) in shown, m.group(1)


def test_first_occurrences_can_be_predicted_better_than_by_a_uniform_guess(run, facts):
    """The page: the block's end grows more likely as it grows, certain after max_period tokens, and the best
    possible loss on predictions from a new token is below a uniform guess's. The odds are counted here over
    the periods the task draws (each as likely); the best loss is training.best_first_loss, tested in
    tests/core against the exact predictor on sampled sequences."""
    config = model.TrainConfig(**run["config"])
    periods = range(config.min_period, config.max_period + 1)
    ends = [sum(p == k for p in periods) / sum(p >= k for p in periods) for k in range(1, config.max_period + 1)]
    assert ends == sorted(ends) and ends[-1] == 1 and ends[config.min_period - 2] == 0
    assert (facts["min_period"], facts["max_period"]) == (str(config.min_period), str(config.max_period))
    best = training.best_first_loss(config)
    assert facts["best_first_loss"] == f"{best:.2f}" and best < math.log(config.vocab) - 0.2
    assert float(facts["first_loss_end"]) > math.log(config.vocab) > best  # the model ends worse than a guess


def test_the_first_induction_head_is_named_by_its_own_history(run, facts):
    h = run["history"]
    named = {head: first_step_from_which(h, lambda e, head=head: e["scores"]["induction"][1][head] >= ROLE_MIN)
             for head in range(run["config"]["n_heads"])}
    first = min(named, key=named.get)
    assert facts["induction_first_head"] == f"L1 H{first}" and facts["induction_first_step"] == str(named[first])


def test_an_unknown_fact_stops_the_build():
    with pytest.raises(BuildError, match=r"page\.md:2: unknown fact 'no_such_fact'"):
        fact_markers.expand("first line\nthe loss is <!-- fact: no_such_fact --> nats", "page.md")
    assert fact_markers.expand("no markers here", "page.md") == "no markers here"
