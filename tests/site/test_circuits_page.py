"""The circuits widget as built: the page holds it pre-rendered at the run's last step, with the contract's
elements (the step control spanning the recorded steps, every K-composition and copying score with its
unrounded value) equal to what mha_core.circuits computes from the run the site ships, its heatmaps the
circuits' own pixels, and every step's view in an asset the page names by its content's sha256 (not in the page)."""
from __future__ import annotations

import hashlib
import html
import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest

from tests.helpers import circuits_expected, png_indices

PAGE = "what-heads-learn/index.html"


class Elements(HTMLParser):
    """Every start tag of a page as (tag, {attribute: value}, the text right inside it, up to the next tag)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[list] = []
        self.open = None

    def handle_starttag(self, tag, attrs):
        self.open = [tag, dict(attrs), ""]
        self.found.append(self.open)

    def handle_endtag(self, tag):
        self.open = None

    def handle_data(self, data):
        if self.open:
            self.open[2] += data


@pytest.fixture(scope="module")
def built(plain_site):
    """(the circuits widget's HTML, its elements, the run the site ships)."""
    page = (plain_site / PAGE).read_text(encoding="utf-8")
    start = page.index('<div class="mha-circuits"')
    widget = page[start:page.index('data-output="summary"', start)]
    parser = Elements()
    parser.feed(widget)
    run = json.loads((plain_site / "assets" / "widgets" / "training" / "run.json").read_bytes())
    return widget, parser.found, run


def having(elements, **attrs) -> list:
    return [(tag, a, text) for tag, a, text in elements if all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]


def test_the_root_and_the_step_control_span_the_recorded_steps(built):
    _, elements, run = built
    steps = [c["step"] for c in run["checkpoints"]]
    (root,) = having(elements, data_mha_widget="circuits")
    assert root[1]["data-state"] == "initial" and root[1]["data-step"] == str(steps[-1])
    (step,) = [e for e in elements if e[0] == "input" and e[1].get("name") == "step"]
    assert step[1]["type"] == "range"
    assert (int(step[1]["min"]), int(step[1]["max"]), int(step[1]["step"]), int(step[1]["value"])) == (
        steps[0], steps[-1], steps[1] - steps[0], steps[-1])
    (label,) = [e for e in elements if e[0] == "label" and e[1].get("for") == step[1]["id"]]
    assert label[2].strip()


def test_every_score_is_mha_core_s_at_the_last_step(built):
    _, elements, run = built
    want = circuits_expected(run, run["checkpoints"][-1]["step"])
    shown = {(int(a["data-source-head"]), int(a["data-target-head"])): (float(a["data-value"]), text)
             for _, a, text in having(elements, data_output="k-composition")}
    assert shown == {pair: (score, f"{score:.2f}") for pair, score in want["k"].items()}
    copying = {(int(a["data-layer"]), int(a["data-head"])): (float(a["data-value"]), text)
               for _, a, text in having(elements, data_output="ov-copying")}
    assert copying == {(1, b): (score, f"{score:.2f}") for b, score in want["ov"].items()}


def test_the_heatmaps_are_the_circuits_and_each_is_named(built):
    _, elements, run = built
    want = circuits_expected(run, run["checkpoints"][-1]["step"])
    maps = having(elements, data_output="ov-map")
    assert len(maps) == 2
    for b, (_, a, _) in enumerate(maps):
        assert np.array_equal(png_indices(html.unescape(a["style"])), want["ov_levels"][b])
        assert a["role"] == "img" and a["aria-label"].startswith(f"Full OV circuit of L1 H{b} at step 600")
    (_, qk, _), = having(elements, data_output="qk-map")
    assert np.array_equal(png_indices(qk["style"]), want["qk_levels"]) and qk["role"] == "img"
    bars = [a for _, a, _ in elements if a.get("class") == "mha-circuits__bar" and "data-kind" in a]  # not the <template>'s
    assert len(bars) == run["config"]["seq_len"] - 1
    assert [float(a["data-value"]) for a in bars] == pytest.approx(want["positions"], abs=5e-4)
    assert [a["data-kind"] for a in bars].count("start") == 1


def test_every_step_s_view_is_in_the_asset_the_page_names_with_mha_core_s_scores(built, plain_site):
    widget, elements, run = built
    (root,) = having(elements, data_mha_widget="circuits")
    name = root[1]["data-asset"]
    data = (plain_site / "assets" / "widgets" / "circuits" / name).read_bytes()
    assert name == f"steps-{hashlib.sha256(data).hexdigest()[:16]}.json"  # another build's file has another name
    assert "<template data-circuits" not in widget and len(widget) < len(data) / 4  # the steps are not in the page
    asset = json.loads(data)
    views = asset["views"]
    assert list(views) == [str(c["step"]) for c in run["checkpoints"]]
    assert asset["run"]["data"]["last"] == run["checkpoints"][-1]["step"]
    for step in (0, 270, 450):
        want = circuits_expected(run, step)
        out = views[str(step)]["outputs"]
        assert {pair: float(out[f"k-{pair[0]}-{pair[1]}"]["outputs"]["k-composition"]["value"]) for pair in want["k"]} == want["k"]
        assert {b: float(out[f"ov-{b}"]["outputs"]["ov-copying"]["value"]) for b in want["ov"]} == want["ov"]


def test_the_lesson_s_circuit_facts_are_the_shipped_run_s(built):
    """Each number the lesson quotes about the circuits, recomputed here with mha_core.circuits from run.json."""
    from mha_core import circuits
    from mha_page.views.training import decode_params, display_tokens
    from mha_core.model import TrainConfig
    from sitebuild import facts as fact_markers
    _, _, run = built
    facts = fact_markers.all_facts()
    config = TrainConfig(**run["config"])
    params = [decode_params(c["params"], config) for c in run["checkpoints"]]
    steps = [c["step"] for c in run["checkpoints"]]
    prev = run["checkpoints"][-1]["roles"][0].index("previous_token")
    k = np.array([circuits.k_composition(p, config)[0, :, 1, :] for p in params])  # [checkpoints, h0, h1]
    copying = np.array([circuits.copying_scores(circuits.full_ov_circuits(p, config, 1)) for p in params])  # [c, h]
    two = lambda values: " and ".join(f"{v:.2f}" for v in values)
    peak = int(np.argmax(k[:, prev].min(axis=1)))
    assert (facts["k_prev_start"], facts["k_prev_end"]) == (two(k[0, prev]), two(k[-1, prev]))
    assert (facts["k_prev_peak"], facts["k_prev_peak_step"]) == (two(k[peak, prev]), str(steps[peak]))
    assert facts["k_other_end"] == two(k[-1, 1 - prev])
    assert facts["k_baseline_mean"] == f"{circuits.random_k_composition(config).mean():.2f}"
    assert facts["copying_start"] == two(copying[0])
    full = next(i for i in range(len(steps)) if (copying[i:] == 1).all())
    assert facts["copying_full_step"] == str(steps[full])
    ov = circuits.full_ov_circuits(params[-1], config, 1)  # [h, V, V]
    on = np.array([np.diag(m) for m in ov])
    assert facts["ov_diagonal_end"] == f"{on.mean():.2f}"
    assert facts["ov_off_end"].replace("\u2212", "-") == f"{(ov.sum() - on.sum()) / (ov.size - on.size):.2f}"
    qk = circuits.positional_qk_circuits(params[-1], config, 0)[prev]
    n = len(qk)
    back = [qk[i, i - 1] for i in range(1, n)]
    rest = [qk[i, j] for i in range(n) for j in range(i + 1) if j != i - 1]
    assert (facts["qk_prev_below_end"], facts["qk_prev_rest_end"].replace("\u2212", "-")) == (
        f"{np.mean(back):.1f}", f"{np.mean(rest):.1f}")
    tokens = display_tokens(config)
    period = tokens.index(tokens[0], 1)
    losses = circuits.position_losses(params[-1], tokens, config)  # [n - 1]: position t predicts token t + 1
    assert facts["positions_first_end"] == f"{losses[:period - 1].mean():.2f}"
    assert facts["positions_start_end"] == f"{losses[period - 1]:.2f}"
    assert facts["positions_repeat_end"] == f"{losses[period:].mean():.2f}"


def test_the_lesson_s_logit_attribution_is_the_shipped_run_s(built):
    """The direct logit attribution the lesson quotes, recomputed from run.json's last checkpoint: the last token of
    the chart's sequence, from the token before it; the parts as the page lists them add up to the logit."""
    from mha_page.views.training import decode_params, display_tokens
    from mha_core.model import TrainConfig, forward
    from sitebuild import facts as fact_markers
    _, _, run = built
    facts = {k: v.replace("\u2212", "-") for k, v in fact_markers.all_facts().items()}
    config = TrainConfig(**run["config"])
    params = decode_params(run["checkpoints"][-1]["params"], config)
    tokens = np.array(display_tokens(config))
    p, target = len(tokens) - 2, tokens[-1]
    logits, patterns = forward(params, tokens[None], config)
    x = params["W_E"][tokens] + params["W_pos"][:len(tokens)]  # [n, d_model]
    terms = {}
    for layer in range(config.n_layers):
        for head in range(config.n_heads):  # each head's output at p, from its own pattern and weights
            z = patterns[layer][0, head, p] @ (x @ params[f"blocks.{layer}.attn.W_V"][head])  # [d_k]
            terms[f"L{layer} H{head}"] = float(z @ params[f"blocks.{layer}.attn.W_O"][head] @ params["W_U"][:, target])
        x = x + sum(patterns[layer][0, h] @ (x @ params[f"blocks.{layer}.attn.W_V"][h]) @ params[f"blocks.{layer}.attn.W_O"][h]
                    for h in range(config.n_heads))
    direct = float((params["W_E"][tokens[p]] + params["W_pos"][p]) @ params["W_U"][:, target])
    assert facts["dla_logit"] == f"{logits[0, p, target]:.2f}" and facts["dla_direct"] == f"{direct:.2f}"
    shown = dict(re.findall(r"(L\d H\d) (-?\d+\.\d\d)", facts["dla_heads"]))
    assert shown == {name: f"{round(v, 2) + 0.0:.2f}" for name, v in terms.items()}
    assert direct + sum(terms.values()) == pytest.approx(float(logits[0, p, target]), abs=1e-9)
