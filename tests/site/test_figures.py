"""The figures sitebuild/figures.py draws: each on its page of the built site, once, where its marker is, an
SVG with a text alternative and a caption, coloured only by classes (so the stylesheet can follow the scheme),
and every number it draws the number mha_core computes."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from mha_core.heads import head_patterns, head_weights
from sitebuild import ROOT, BuildError, figures, widgets

PAGES = {"sentence-to-x": "index.html", "agreement": "why-heads/index.html",
         "induction-circuit": "what-heads-learn/index.html", "block": "caveats-and-the-block/index.html",
         "prediction": "what-heads-learn/index.html"}
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def site(cdn_site):
    """The site as build.py builds it, without Pyodide's files (read only: every module shares one build)."""
    return cdn_site


def built_figure(site, name: str) -> ET.Element:
    """Figure NAME as the built page holds it (exactly once), parsed."""
    html = (site / PAGES[name]).read_text(encoding="utf-8")
    found = re.findall(rf'<figure class="mha-figure mha-fig" data-mha-figure="{name}">.*?</figure>', html, re.S)
    assert len(found) == 1, f"{name}: {len(found)} times on {PAGES[name]}"
    for other in {other for other, page in PAGES.items() if page != PAGES[name]}:
        assert f'data-mha-figure="{other}"' not in html, f"{other} is on {PAGES[name]} too"
    return ET.fromstring(found[0])


def drawn(figure: ET.Element, attribute: str) -> dict[str, str]:
    """{the attribute's value: the text drawn} of every SVG text that carries the attribute."""
    return {t.get(attribute): t.text for t in figure.iter(f"{SVG}text") if t.get(attribute) is not None}


@pytest.mark.parametrize("name", PAGES)
def test_each_figure_is_on_its_page_with_a_text_alternative_and_a_caption(site, name):
    figure = built_figure(site, name)
    svg = figure.find(f"{SVG}svg")
    assert svg.get("role") == "img"
    ids = svg.get("aria-labelledby").split()
    named = {e.get("id"): (e.text or "").strip() for e in svg if e.get("id")}
    assert [svg[0].tag, svg[1].tag] == [f"{SVG}title", f"{SVG}desc"] and ids == [svg[0].get("id"), svg[1].get("id")]
    assert all(len(named[i]) > 30 for i in ids), named
    assert len("".join(figure.find("figcaption").itertext()).strip()) > 60
    width, height = map(float, svg.get("viewBox").split()[2:])
    assert width == figures.WIDTH and 200 < height < 600


@pytest.mark.parametrize("name", PAGES)
def test_colours_come_from_classes_only(site, name):
    """No colour is written into the SVG: the stylesheet gives each class its colour in either scheme."""
    svg = ET.tostring(built_figure(site, name).find(f"{SVG}svg"), encoding="unicode")
    assert not re.search(r'\b(fill|stroke|style|color)="|#[0-9a-fA-F]{3,6}\b|rgb\(', svg)
    classes = set(" ".join(re.findall(r'class="([^"]*)"', svg)).split())
    stylesheet = (ROOT / "docs" / "stylesheets" / "figures.css").read_text(encoding="utf-8")
    unstyled = {c for c in classes if c != "mha-fig__svg" and f".{c}" not in stylesheet}
    assert not unstyled, f"classes the stylesheet does not know: {unstyled}"


def test_the_sentence_to_x_draws_mha_cores_embeddings(site):
    w = head_weights(figures.SENTENCE)
    x, features, tokens = w["x"], w["features"], w["tokens"]  # x: [n, d_model]
    cells = drawn(built_figure(site, "sentence-to-x"), "data-cell")
    n, d_model = x.shape
    shown = np.array([[float(cells[f"X {i} {j}"]) for j in range(d_model)] for i in range(n)])
    np.testing.assert_array_equal(shown, x)
    e = figures.EXAMPLE
    e_row = np.array([float(cells[f"W_E {e} {j}"]) for j in range(d_model)])
    p_row = np.array([float(cells[f"W_pos {e} {j}"]) for j in range(d_model)])
    assert [features[j] for j in np.flatnonzero(e_row)] == [f"token:{tokens[e]}"]  # the word's row of E
    assert [features[j] for j in np.flatnonzero(p_row)] == [f"position:{e}"]  # the position's row of P
    np.testing.assert_array_equal(e_row + p_row, x[e])  # and their sum is X's row
    assert len(cells) == (n + 2) * d_model
    # the caption's claim: the two rows of the repeated word differ only in position and the boundary flag
    first, again = [i for i, t in enumerate(tokens) if t == tokens[0]]
    apart = {features[j].split(":")[0] for j in np.flatnonzero(x[first] != x[again])}
    assert apart == {"position", "boundary"}
    caption = "".join(built_figure(site, "sentence-to-x").find("figcaption").itertext())
    assert f"The two rows of “{tokens[0]}” differ only in position and the boundary flag." in caption


def test_the_induction_circuit_draws_the_constructed_heads_weights(site):
    figure = built_figure(site, "induction-circuit")
    patterns = head_patterns(figures.REPEAT)["heads"]  # {kind: [n, n]}
    weights = drawn(figure, "data-weight")
    n = len(head_patterns(figures.REPEAT)["tokens"])
    assert set(weights) == {f"previous_token {i} {i - 1}" for i in range(1, n)} | {
        f"induction {figures.A_AGAIN} {figures.B}"}
    for key, text in weights.items():
        kind, q, k = key.split()
        assert text == f"{patterns[kind][int(q), int(k)]:.2f}", key
    # what layer 0 wrote at each position is the token before it, as the residual stream mha_core computes holds
    w = head_weights(figures.REPEAT)
    tokens, residual = w["tokens"], w["residual"]
    for key, text in drawn(figure, "data-written").items():
        i, feature = key.split()
        assert feature == f"previous:{tokens[int(i) - 1]}" and text == f"prev: {tokens[int(i) - 1]}"
        assert residual[int(i), w["features"].index(feature)] == pytest.approx(1, abs=1e-3)
    # the circuit the figure explains is the one mha_core's heads form: B follows A, the second A finds B
    assert tokens[figures.A_AGAIN] == tokens[0] and figures.B == 1
    assert patterns["induction"][figures.A_AGAIN].argmax() == figures.B
    desc = figure.find(f"{SVG}svg/{SVG}desc").text  # the text alternative quotes the same weights
    assert f"weight {patterns['previous_token'][figures.B, 0]:.2f} from '{tokens[figures.B]}'" in desc
    assert f"weight {patterns['induction'][figures.A_AGAIN, figures.B]:.2f} on '{tokens[figures.B]}'" in desc


def test_the_agreement_figure_draws_the_pages_sentence(site):
    figure = built_figure(site, "agreement")
    words = [t.text for t in figure.iter(f"{SVG}text")][:len(figures.AGREEMENT)]
    assert words == figures.AGREEMENT
    assert "data-search-exclude" in ET.tostring(figure, encoding="unicode")  # search indexes the caption only
    prose = re.sub(r"[*_]", "", (ROOT / "docs" / "why-heads.md").read_text(encoding="utf-8"))  # emphasis left out
    assert " ".join(figures.AGREEMENT) in prose, "the figure draws the sentence the page discusses"
    assert figures.AGREEMENT[figures.SUBJECT] == "report" and figures.AGREEMENT[figures.VERB - 1] == "rules"
    assert figures.VERB - figures.SUBJECT == 9  # "nine tokens back", as the page and the caption say


def test_the_prediction_draws_the_trained_model_s_own_numbers(site):
    """Recomputed here from the shipped run with NumPy alone: the last residual vector times W_U, a softmax,
    −ln p of the next token."""
    import json
    import math

    from mha_core import model, training
    from mha_page.views import training as training_views

    run = json.loads((site / "assets/widgets/training/run.json").read_bytes())
    config = model.TrainConfig(**run["config"])
    params = training_views.decode_params(run["checkpoints"][-1]["params"], config)
    tokens = training.eval_batch(config, run["seed"])[figures.SEQUENCE]  # [n]
    _, cache = model.run_with_cache(params, tokens[None], config)
    t = len(tokens) - 2
    logits = cache["hook_resid_final"][0, t] @ params["W_U"]  # [d_model] @ [d_model, V] -> [V]
    probs = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    target = int(tokens[t + 1])
    figure = built_figure(site, "prediction")
    values = drawn(figure, "data-value")
    assert values["logit"] == f"{target}: {logits[target]:.2f}" and logits.argmax() == target
    assert values["probability"] == f"p({target}) = {probs[target]:.2f}"
    assert values["loss"] == f"loss = −ln {probs[target]:.2f} = {-math.log(probs[target]):.2f} nats"
    assert values["uniform"] == f"a uniform guess: ln {config.vocab} = {math.log(config.vocab):.2f} nats"
    shown = drawn(figure, "data-token")
    assert shown == {str(i): str(tokens[i]) for i in range(t - figures.SHOWN + 1, t + 1)}
    bars = [r for r in figure.iter(f"{SVG}rect") if (r.get("class") or "").split()[0] == "col"]
    assert len(bars) == 2 * config.vocab  # a column per vocabulary entry, logits then probabilities
    heights = np.array([float(r.get("height")) for r in bars[config.vocab:]])
    np.testing.assert_allclose(heights / heights.max(), probs / probs.max(), atol=0.01)


def test_figure_markers_fail_clearly():
    env = widgets.template_env()
    with pytest.raises(BuildError, match=r"page.md:2: unknown figure 'nope' \(known: sentence-to-x"):
        widgets.expand_markers("text\n<!-- figure: nope -->", env, "page.md")
    with pytest.raises(BuildError, match="must stand alone on its line"):
        widgets.expand_markers("see <!-- figure: block --> here", env, "page.md")
    assert widgets.expand_markers("```\n<!-- figure: block -->\n```", env, "page.md")[0].count("<svg") == 0
    rendered, names = widgets.expand_markers("<!-- figure: block -->", env, "page.md")
    assert names == []
    assert rendered.startswith('<figure class="mha-figure mha-fig" data-mha-figure="block">')
    assert "\n\n" not in rendered  # one raw HTML block for Markdown
