"""The heads of a real model, in Chromium, against the built site: the atlas reads before Python (every head's
scores the build's, the tokens, the text), a head opens its pattern by pointer and by keyboard, as a table of
weights mha_core computes here, named cell by cell and walked by the arrow keys; Load downloads
the model with byte progress, and the reader's text gives the scores mha_core computes here in CPython (a newer
text replacing one in progress, a long one cut); a revisit downloads nothing; a corrupted file is refused by its
sha256 and a download cut mid-way resumes with Retry, fetching only what is missing, the atlas staying
throughout, the error said as an error, Retry in Load's place, the focus on the text throughout. A text typed
before Load marks the atlas as not its own, says what to do beside Load (not as an error) and runs once the
model is in. conftest fails a test on any page error, console error, CSP violation or request off 127.0.0.1."""
from __future__ import annotations

import re

import numpy as np
import pytest
from playwright.sync_api import expect

import conftest
from mha_core.llama import head_scores, lab, read_gguf, run_layers, tokenizer_from_gguf
from mha_page.views import clip
from mha_page.views.real_model import KIND_NAMES, KINDS, messages, pruning_view, token_texts
from sitebuild.assets import fetch_model
from sitebuild.widgets import widget_module
from tests.helpers import contrast, over
from widgets.palette import colour
from test_accessibility import VIEWPORTS, axe_source, blocking_in_every_look, look  # noqa: F401 (a fixture)

pytestmark = pytest.mark.computes  # trains or runs a real model: conftest.BASELINE_COMPILERS

NAME = "real-model"
LOAD_TIMEOUT_MS = 180_000  # 98 MB from localhost, checked, then 30 layers, on a loaded 2-core machine
MODEL_FILE = re.compile(r"/assets/widgets/real_model/model/[^/]+\.gguf$")
SCORES = """root => [...root.querySelectorAll("[data-layer][data-head]")].map(el => [
  Number(el.dataset.layer), Number(el.dataset.head), el.dataset.scorePreviousToken, el.dataset.scoreInduction,
  el.dataset.scoreFirstToken, el.dataset.scoreDuplicateToken])"""
TOKENS = """root => [...root.querySelectorAll('[data-output="tokens"] [data-token-index]')].map(el => [Number(el.dataset.tokenIndex), el.textContent])"""
ORDER = ("previous_token", "induction", "first_token", "duplicate_token")
# Each head's score of the kind the atlas colours by (the root's data-kind) and its cell's colour.
COLOURED = """root => {
  const key = "score" + root.dataset.kind.split("-").map((w) => w[0].toUpperCase() + w.slice(1)).join("");
  return [...root.querySelectorAll("[data-layer][data-head]")].map((el) => [Number(el.dataset[key]),
                                                                           getComputedStyle(el).backgroundColor]);
}"""
# An opened pattern's table: its key labels, and each cell of each row as [q, k, data-weight (null: masked), name].
KEY_LABELS = """root => [...root.querySelectorAll(".mha-rm__map thead [data-token-index]")].map(el => el.textContent)"""
CELLS = """root => [...root.querySelectorAll(".mha-rm__map tbody tr")].flatMap((tr, q) => [...tr.cells].slice(1).map(
  (td, k) => [q, k, td.dataset.weight ?? null, td.ariaLabel]))"""
# Each label's computed font size and the width of a key's column, in CSS pixels.
LABEL_SIZES = """root => ({fonts: [...root.querySelectorAll(".mha-rm__map th span")].map(el =>
  parseFloat(getComputedStyle(el).fontSize)), column: root.querySelector(".mha-rm__map tbody td").offsetWidth})"""
# The focused cell: [q, k, tabindex], and how many of the table's cells are in the tab order.
FOCUSED_CELL = """root => [document.activeElement.dataset.q, document.activeElement.dataset.k,
  document.activeElement.tabIndex, root.querySelectorAll('.mha-rm__map td[tabindex="0"]').length]"""


# Press a button as a keyboard reader does (focus, then activate it), and read at once, before any answer, what the
# widget shows: where the focus went (None: the page), and which of the error, Load and Retry are shown.
PRESS = """button => {
  button.focus();
  button.click();
  const root = button.closest("[data-mha-widget]"), shown = (selector) => !root.querySelector(selector).hidden;
  const at = document.activeElement;
  return {focus: at === document.body ? null : at.name || at.tagName, error: shown('[data-message="error"]'),
          load: shown('button[name="load"]'), retry: shown('button[name="retry"]')};
}"""
FOCUSED = "() => document.activeElement === document.body ? null : document.activeElement.name"
ERROR_RED = "rgb(211, 47, 47)"  # the error colour of the widgets' messages and of the status line's dot


@pytest.fixture(scope="module")
def gguf():
    return read_gguf(fetch_model())


@pytest.fixture(scope="module")
def weights(gguf):
    """Every layer's weights unpacked once, for the module's many runs of mha_core (425 MB)."""
    return lab.unpacked_layers(gguf)


def shown_scores(widget) -> dict[str, np.ndarray]:
    out = {kind: np.full((30, 9), -1.0) for kind in ORDER}
    for layer, head, *values in widget.evaluate(SCORES):
        for kind, value in zip(ORDER, values):
            out[kind][layer, head] = float(value)
    return out


def shown_tokens(widget) -> list[str]:
    tokens = widget.evaluate(TOKENS)
    assert [i for i, _ in tokens] == list(range(len(tokens)))
    return [t for _, t in tokens]


def forward(gguf, text: str) -> tuple[list[str], list, np.ndarray]:
    """text's first 128 tokens as read, their ids and every head's pattern [30, 9, n, n], by mha_core here."""
    tokenizer = tokenizer_from_gguf(gguf)
    ids = tokenizer.encode(text)[:128]
    return token_texts(tokenizer, ids), ids, np.stack([p for _, _, p in run_layers(gguf, ids)])


def expected(gguf, text: str) -> tuple[list[str], dict]:
    tokens, ids, patterns = forward(gguf, text)
    return tokens, head_scores(patterns, ids)


# A cell reads its weight as a byte (round(255 · w)) in 2 decimals; the browser's float32 may round a byte apart.
CELL_TOLERANCE = 1 / 255 + 0.005 + 1e-6


def assert_pattern(widget, tokens: list[str], weights: np.ndarray) -> None:
    """The opened pattern is tokens' table: each token a key's and a query's label (a newline as ↵), cell (q, k)
    for k <= q reading weights[q, k] and named “query” (q) → “key” (k): its text, a later key masked and named so."""
    labels = [t.replace("\n", "\u21b5").replace("\t", "\u21e5") for t in tokens]
    expect(widget.locator(".mha-rm__map tbody tr")).to_have_count(len(tokens))
    assert widget.evaluate(KEY_LABELS) == labels
    cells = widget.evaluate(CELLS)
    assert len(cells) == len(tokens) ** 2
    for q, k, text, name in cells:
        named = f"“{clip(labels[q])}” ({q}) → “{clip(labels[k])}” ({k}): "
        if k > q:
            assert (text, name) == (None, named + "masked, a later token"), (q, k)
        else:
            assert abs(float(text) - weights[q, k]) <= CELL_TOLERANCE and name == named + text, (q, k, text, name)


# The page's 4 decimals (5e-5), and float32 sums in another order (Pyodide's NumPy has no BLAS): some 1e-6.
BROWSER_TOLERANCE = 1e-4


def assert_scores(widget, scores: dict) -> None:
    shown = shown_scores(widget)
    for kind in KINDS:
        np.testing.assert_allclose(shown[kind], scores[kind], atol=BROWSER_TOLERANCE, err_msg=kind)


def model_requests(page_log) -> list[str]:
    return [url for url in page_log.requests if MODEL_FILE.search(url)]


@pytest.fixture
def shared_widget(shared_page, site_url, widget_path):
    """The widget on the module's shared page, mounted afresh at its defaults (the page's text, Load not pressed):
    the tests that need the model but not its first download share one Python, which a Load after the first
    finds started, the model's files taken from what the first kept."""
    return conftest.on_widget_page(shared_page[0], site_url + widget_path(NAME), NAME, fresh=True, python=False)


def load(widget) -> None:
    widget.locator('button[name="load"]').click()
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)


@pytest.mark.before_python
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_strongest_head_stands_out_from_the_weakest_in_both_schemes(page, site_url, widget_path, scheme):
    """The atlas's highest score against its lowest, as drawn on the page: 3:1 or more (WCAG's contrast for the
    parts of a graphic) in both schemes."""
    widget, page_colour = conftest.open_in_scheme(page, site_url + widget_path(NAME), NAME, scheme)
    (low, weakest), (high, strongest) = min(cells := widget.evaluate(COLOURED)), max(cells)
    assert low < 0.05 and high > 0.9, (low, high)
    assert contrast(over(strongest, page_colour), over(weakest, page_colour)) >= 3, (scheme, weakest, strongest)


@pytest.mark.before_python
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_the_pattern_draws_a_masked_key_apart_from_a_weight_of_0(page, site_url, widget_path, scheme):
    """A later key, which no query may attend to, in a grey of its own: 1.5:1 or more from a cell of weight 0 (the
    palette's first colour) on the page, in both schemes, as the heads widget draws its masked cells."""
    widget, page_colour = conftest.open_in_scheme(page, site_url + widget_path(NAME), NAME, scheme)
    widget.locator('[data-layer="18"][data-head="6"]').click()
    fill = "td => getComputedStyle(td).backgroundColor"
    masked = over(widget.locator(".mha-rm__map td[data-masked]").first.evaluate(fill), page_colour)
    zero = "rgb({}, {}, {})".format(*bytes.fromhex(colour(0.0)[1:]))  # the site's palette (widgets/palette.py)
    assert contrast(masked, zero) >= 1.5, (scheme, masked, zero)


@pytest.mark.before_python
def test_the_atlas_reads_before_python_and_a_head_opens_its_pattern(page, site_url, widget_path, page_log, gguf):
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    expect(widget).to_have_attribute("data-mounted", "true")
    assert widget.get_attribute("data-state") == "idle"
    w = widget_module("real_model")
    first = w.heads()["repeated"]
    assert widget.locator('textarea[name="text"]').input_value() == w.texts()["repeated"]
    assert shown_tokens(widget) == first["tokens"]
    shown = shown_scores(widget)
    for kind in KINDS:
        np.testing.assert_allclose(shown[kind], w.scores_of("repeated")[kind], atol=5e-5, err_msg=kind)
    load_button = widget.locator('button[name="load"]')
    assert re.fullmatch(r"Load the model \(\d+ MB\)", load_button.text_content())

    assert widget.locator(".mha-rm__map td").count() == 0  # the table is built when a head is opened

    widget.locator('[data-layer="18"][data-head="6"]').click()
    pattern = widget.locator("[data-pattern]")
    expect(pattern).to_be_visible()
    expect(pattern.locator("[data-pattern-title]")).to_contain_text("Layer 18, head 6 (key/value group 2)")
    tokens, _, patterns = forward(gguf, w.texts()["repeated"])
    assert tokens == first["tokens"]
    assert_pattern(widget, tokens, patterns[18, 6])
    sizes = widget.evaluate(LABEL_SIZES)
    assert min(sizes["fonts"]) >= 12 and sizes["column"] >= 12, sizes

    start = pattern.locator('td[tabindex="0"]')  # the table's one tab stop, then the arrow keys
    expect(start).to_have_attribute("data-q", "0")
    page.mouse.move(0, 0)  # a cell pointed at is read too: the pointer away, the focus alone is read
    start.focus()
    n = len(tokens)
    for keys, cell in ((["ArrowDown", "ArrowDown", "ArrowRight"], [2, 1]), (["ArrowRight", "ArrowRight"], [2, 2]),
                       (["Home"], [2, 0]), (["ArrowUp", "ArrowUp", "ArrowUp"], [0, 0]), (["Control+End"], [n - 1, n - 1])):
        for key in keys:
            page.keyboard.press(key)
        assert widget.evaluate(FOCUSED_CELL) == [str(cell[0]), str(cell[1]), 0, 1], (keys, cell)
        q, k = cell
        expect(pattern.locator('[data-output="pattern-cell"]')).to_have_text(
            f"“{tokens[q]}” ({q}) → “{tokens[k]}” ({k}): " + pattern.locator(f'td[data-q="{q}"][data-k="{k}"]')
            .get_attribute("data-weight"))
    first_head = widget.locator('[data-layer="0"][data-head="0"]')
    first_head.focus()
    for key in ("ArrowDown", "ArrowDown", "ArrowRight", "Enter"):
        page.keyboard.press(key)
    expect(pattern.locator("[data-pattern-title]")).to_contain_text("Layer 2, head 1 (key/value group 0)")
    assert_pattern(widget, tokens, patterns[2, 1])
    assert widget.locator('[data-layer="2"][data-head="1"]').get_attribute("tabindex") == "0"
    assert first_head.get_attribute("tabindex") == "-1"

    widget.locator('select[name="example"]').select_option("prose")
    assert widget.locator('textarea[name="text"]').input_value() == w.texts()["prose"]
    prose, _, patterns = forward(gguf, w.texts()["prose"])
    expect(widget.locator('[data-output="tokens"] [data-token-index]')).to_have_count(len(prose))  # its view fetched
    assert shown_tokens(widget) == w.heads()["prose"]["tokens"] == prose
    shown = shown_scores(widget)
    np.testing.assert_allclose(shown["induction"], w.scores_of("prose")["induction"], atol=5e-5)
    expect(pattern.locator("[data-pattern-title]")).to_contain_text("Layer 2, head 1")
    expect(pattern.locator(".mha-rm__map tbody tr")).to_have_count(len(prose))  # the head opened again, on this text
    assert_pattern(widget, prose, patterns[2, 1])
    assert model_requests(page_log) == []  # nothing of the model before Load, nor Python: the widget is on request
    assert page.locator("html").get_attribute("data-mha-runtime") == "idle"
    built_words = re.compile(r"^These heads were computed when the page was built.*once you load the model\.$")
    expect(conftest.status(page).locator("span")).to_have_text(built_words)  # the status keeps its words as built


def test_load_then_the_reader_s_text_gives_mha_core_s_scores_a_revisit_downloads_nothing_and_cuts_a_long_text(
        page, site_url, widget_path, page_log, gguf):
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    text = widget.locator('textarea[name="text"]')
    typed = "A text typed before the model is in. A text typed before."
    text.fill(typed)
    text.press("Tab")  # the atlas is the example's, not this text's: marked, with what to do beside Load
    expect(widget.locator("[data-results]")).to_have_attribute("data-stale", "true")
    expect(widget.locator('[data-output="progress"]')).to_have_text(messages()["own"])
    expect(widget.locator('[data-message="error"]')).to_be_hidden()  # guidance, not an error
    assert widget.get_attribute("data-state") == "live"
    pressed = widget.locator('button[name="load"]').evaluate(PRESS)
    assert pressed == {"focus": "text", "error": False, "load": True, "retry": False}, pressed  # Load is off meanwhile
    expect(widget.locator('[data-output="progress"]')).to_contain_text(
        re.compile(r"Downloading the model: [\d.]+ of [\d.]+ MB"), timeout=LOAD_TIMEOUT_MS)
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    assert len(model_requests(page_log)) == 32
    expect(widget.locator('button[name="load"]')).to_be_hidden()
    assert page.evaluate(FOCUSED) == "text"
    expect(widget.locator("[data-results]")).to_have_attribute("data-stale", "false")
    tokens, scores = expected(gguf, typed)  # the text typed before Load is the one the model ran
    assert shown_tokens(widget) == tokens
    assert_scores(widget, scores)

    text = widget.locator('textarea[name="text"]')
    text.fill("An older text, replaced before it ends.")
    text.press("Tab")
    text.fill("The cat sat on the mat. Then the cat sat on the mat again.")
    text.press("Tab")
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    tokens, ids, patterns = forward(gguf, text.input_value())
    assert shown_tokens(widget) == tokens
    assert_scores(widget, head_scores(patterns, ids))
    widget.locator('[data-layer="17"][data-head="4"]').click()
    expect(widget.locator("[data-pattern-title]")).to_contain_text("Layer 17, head 4")
    assert_pattern(widget, tokens, patterns[17, 4])  # the reader's text's, from Python in the browser

    again = page.context.new_page()  # the same reader, a new visit: the model comes from what was kept
    before = len(model_requests(page_log))
    revisit = conftest.open_widget(again, site_url + widget_path(NAME), NAME)
    load(revisit)
    assert model_requests(page_log)[before:] == []
    assert_scores(revisit, expected(gguf, revisit.locator('textarea[name="text"]').input_value())[1])

    long_text = " ".join(["tokens"] * 140)
    text = revisit.locator('textarea[name="text"]')
    text.evaluate("(el, value) => { el.value = value; el.dispatchEvent(new Event('change')); }", long_text)  # not bubbling
    expect(revisit).to_have_attribute("data-cut", "true", timeout=LOAD_TIMEOUT_MS)
    expect(revisit).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    expect(revisit.locator('[data-output="note"]')).to_contain_text("the model ran on its first 128")
    assert len(shown_tokens(revisit)) == 128


def test_a_corrupted_file_is_refused_and_a_cut_download_resumes_with_retry(page, site_url, widget_path, page_log):
    page_log.allow("Failed to load resource|net::ERR")
    broken = {"layer-07.gguf": "corrupt", "layer-12.gguf": "cut"}

    def serve(route):
        how = broken.get(route.request.url.rsplit("/", 1)[1])
        if how == "cut":
            return route.abort("connectionreset")
        if how is None:
            return route.continue_()
        response = route.fetch()
        body = response.body()
        route.fulfill(response=response, body=body[:-1] + bytes([body[-1] ^ 1]))  # one bit changed

    page.context.route(re.compile(r"/model/layer-(07|12)\.gguf$"), serve)  # the others pass untouched
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    atlas = shown_scores(widget)
    widget.locator('button[name="load"]').click()
    expect(widget).to_have_attribute("data-state", "error", timeout=LOAD_TIMEOUT_MS)
    error = widget.locator('[data-message="error"]')
    expect(error).to_contain_text(re.compile("sha256|could not be read"))
    retry = widget.locator('button[name="retry"]')
    expect(retry).to_be_visible()
    expect(widget.locator('button[name="load"]')).to_be_hidden()  # Retry in its place, never both
    assert page.evaluate(FOCUSED) == "text"
    edge = error.evaluate("el => [getComputedStyle(el).borderLeftColor, parseFloat(getComputedStyle(el).borderLeftWidth)]")
    assert edge[0] == ERROR_RED and edge[1] > 0, edge  # an error, as the other widgets' errors, not information
    for kind in KINDS:  # the atlas stays
        np.testing.assert_array_equal(shown_scores(widget)[kind], atlas[kind])

    broken.pop("layer-12.gguf")  # the connection is back; the corrupted file is still corrupted
    before = len(model_requests(page_log))
    pressed = retry.evaluate(PRESS)
    assert pressed == {"focus": "text", "error": False, "load": True, "retry": False}, pressed  # the old error goes
    expect(widget).to_have_attribute("data-state", "error", timeout=LOAD_TIMEOUT_MS)
    expect(error).to_contain_text("layer-07.gguf is not the file this site was built with (its sha256 differs)")
    assert sorted(u.rsplit("/", 1)[1] for u in model_requests(page_log)[before:]) == ["layer-07.gguf", "layer-12.gguf"]

    broken.clear()
    before = len(model_requests(page_log))
    page.keyboard.press("Tab")  # from the text on to Retry (Load is hidden), pressed with the keyboard
    assert page.evaluate(FOCUSED) == "retry"
    page.keyboard.press("Enter")
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)
    assert page.evaluate(FOCUSED) == "text"
    expect(error).to_be_hidden()
    expect(retry).to_be_hidden()
    assert [u.rsplit("/", 1)[1] for u in model_requests(page_log)[before:]] == ["layer-07.gguf"]


# ---------------------------------------------------------------- the laboratory (issue's DOM contract)

LOSSES = """root => [...root.querySelectorAll('[data-output="tokens"] [data-token-index]')].map((el) => [
  el.dataset.loss ?? null, el.dataset.lossKnocked ?? null])"""
PREDICTIONS = """root => [...root.querySelectorAll('[data-output="prediction"]')].map((el) => [
  Number(el.dataset.rank), Number(el.dataset.tokenId), Number(el.dataset.probability)])"""
ATTRIBUTION = """root => [...root.querySelectorAll("[data-layer][data-head]")].map((el) => [
  Number(el.dataset.layer), Number(el.dataset.head), Number(el.dataset.logitAttribution)])"""
LENS = """root => [...root.querySelectorAll('[data-output="lens"] > li')].map((el) => Number(el.dataset.tokenId))"""
LOSS_TOLERANCE = 2e-3  # nats: float32 in another order of sums (Pyodide's NumPy has no BLAS), 4 decimals shown


def shown_losses(widget) -> tuple[list, list]:
    """(data-loss, data-loss-knocked) of each token, None where absent."""
    rows = widget.evaluate(LOSSES)
    return ([None if a is None else float(a) for a, _ in rows], [None if b is None else float(b) for _, b in rows])


def mean_value(widget, name: str) -> float:
    return float(widget.locator(f'[data-output="{name}"]').get_attribute("data-value"))


def assert_position(widget, ids, probabilities, heads) -> None:
    """The picked position's five predictions (rank, id, probability) and every head's attribution."""
    shown = widget.evaluate(PREDICTIONS)
    assert [r for r, _, _ in shown] == [1, 2, 3, 4, 5]
    assert [i for _, i, _ in shown] == list(ids)
    np.testing.assert_allclose([p for _, _, p in shown], probabilities, atol=1e-3)
    attribution = np.zeros((30, 9))
    for layer, head, value in widget.evaluate(ATTRIBUTION):
        attribution[layer, head] = value
    np.testing.assert_allclose(attribution, heads, atol=2e-3)


def set_field(locator, value) -> None:
    """A control's value changed as a reader changes it: filled, then left with Tab (its change event)."""
    locator.fill(str(value))
    locator.press("Tab")


@pytest.mark.before_python
def test_a_page_text_reads_its_losses_predictions_attribution_and_lens_before_load(page, site_url, widget_path,
                                                                                   page_log):
    """The DOM contract on the first page text, before Python: each token's data-loss (none on token 0, no
    data-loss-knocked), the mean, the default position's predictions and attribution, another position's from
    its asset; a knock-out asks for the model and loses nothing; a one-click set and a toggled cell fill the
    heads' field; the grid colours by attribution."""
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    expect(widget).to_have_attribute("data-mounted", "true")
    w = widget_module("real_model")
    entry = w.heads()["repeated"]
    n = len(entry["ids"])
    losses, knocked = shown_losses(widget)
    assert losses[0] is None and knocked == [None] * n
    np.testing.assert_allclose(losses[1:], entry["losses"][1:], atol=5e-5)
    assert mean_value(widget, "mean-loss") == pytest.approx(np.mean(losses[1:]), abs=1e-4)
    position = widget.locator('input[name="position"]')
    assert (position.get_attribute("min"), position.get_attribute("max")) == ("0", str(n - 1))
    assert position.input_value() == str(n - 2)

    def assert_at(p):
        at = entry["positions"][p]
        assert_position(widget, entry["top_ids"][p], entry["top_probabilities"][p], at["attribution"]["heads"])
        assert widget.evaluate(LENS) == at["lens"]["top_ids"]

    assert_at(n - 2)
    set_field(position, 5)
    expect(widget.locator('[data-output="prediction"]').first).to_have_attribute(
        "data-token-id", str(entry["top_ids"][5][0]))
    expect(widget).to_have_attribute("data-position", "5")
    assert_at(5)
    set_field(position, n)  # past the last token: said, nothing lost
    lab_error = widget.locator('[data-message="lab-error"]')
    expect(lab_error).to_contain_text(f"from 0 to {n - 1}")
    assert_at(5)

    knockout = widget.locator('[name="knockout"]')
    set_field(knockout, "L17H3 l18 h6")
    expect(lab_error).to_contain_text("Load the model to knock heads out")
    assert shown_losses(widget) == (losses, knocked)
    widget.locator('button[name="set"][value="induction"]').click()
    assert knockout.input_value() == widget.get_attribute("data-set-induction") != ""
    assert lab.parse_heads(knockout.input_value()) == lab.parse_heads(
        w.head_sets(w.scores_of("repeated"))["data"]["set-induction"])
    widget.locator('button[name="set"][value="induction-control"]').click()
    assert knockout.input_value() == widget.get_attribute("data-set-induction-control") != ""

    set_field(knockout, "l17 h3, L18H6")
    widget.locator('input[name="pick"][value="knockout"]').check()
    widget.locator('[data-layer="17"][data-head="3"]').click()  # out of the field
    assert lab.parse_heads(knockout.input_value()) == [(18, 6)]
    widget.locator('[data-layer="20"][data-head="1"]').focus()
    page.keyboard.press("Space")  # into it, from the keyboard
    assert lab.parse_heads(knockout.input_value()) == [(18, 6), (20, 1)]
    expect(widget.locator("[data-pattern]")).to_be_hidden()  # no pattern opened meanwhile

    widget.locator('input[name="kind"][value="attribution"]').check()
    colours = {(l, h): widget.locator(f'[data-layer="{l}"][data-head="{h}"]').evaluate(
        "el => getComputedStyle(el).backgroundColor") for l, h in [(0, 0), (29, 1)]}
    assert len(set(colours.values())) == 2, colours
    assert model_requests(page_log) == []


def knocked_out(gguf, weights, ids, clean, heads, hide_first=False) -> dict:
    """mha_core's predictions with heads knocked out (and the first token hidden), from the clean run."""
    return lab.predictions(gguf, lab.run(gguf, ids, knocked=heads, hide_first=hide_first, clean=clean, weights=weights))


def settled(widget) -> None:
    expect(widget).to_have_attribute("data-state", "live", timeout=LOAD_TIMEOUT_MS)


def test_after_load_the_text_s_losses_knock_outs_and_positions_are_mha_core_s(shared_widget, gguf, weights):
    """The page's repeated words run by the model in the browser: each token's loss, a knock-out's (typed in
    any case and separators), the first token hidden, another position's predictions and attribution, all as
    mha_core computes them here; a newer knock-out ends an older one; a malformed one is said and loses
    nothing; a new text reusing the token rows keeps no knocked-out loss of the older."""
    widget = shared_widget
    load(widget)
    ids = tokenizer_from_gguf(gguf).encode(widget.locator('textarea[name="text"]').input_value())[:128]
    clean = lab.run(gguf, ids, weights=weights)
    expected = lab.predictions(gguf, clean)
    losses, knocked = shown_losses(widget)
    np.testing.assert_allclose(losses[1:], expected["losses"][1:], atol=LOSS_TOLERANCE)
    assert knocked == [None] * len(ids)
    assert mean_value(widget, "mean-loss") == pytest.approx(np.mean(losses[1:]), abs=1e-4)

    knockout = widget.locator('[name="knockout"]')
    set_field(knockout, "l17 h3, L18H6")
    settled(widget)
    expect(widget).to_have_attribute("data-knocked", "true")
    heads = [(17, 3), (18, 6)]
    want = knocked_out(gguf, weights, ids, clean, heads)
    np.testing.assert_allclose(shown_losses(widget)[1][1:], want["losses"][1:], atol=LOSS_TOLERANCE)
    assert mean_value(widget, "mean-loss-knocked") == pytest.approx(np.mean(shown_losses(widget)[1][1:]), abs=1e-4)
    assert widget.locator('[data-layer="18"][data-head="6"]').get_attribute("data-knocked") == "true"

    position = widget.locator('input[name="position"]')
    set_field(position, 10)
    expect(widget).to_have_attribute("data-position", "10", timeout=LOAD_TIMEOUT_MS)
    settled(widget)
    heads_at = lab.logit_attribution(gguf, clean, 10, ids[11])["heads"]
    assert_position(widget, expected["top_ids"][10], expected["top_probabilities"][10], heads_at)
    assert [int(el.get_attribute("data-token-id")) for el in
            widget.locator('[data-output="predictions-knocked"] > li').all()] == want["top_ids"][10].tolist()
    assert widget.evaluate(LENS) == lab.logit_lens(gguf, clean, 10)["top_ids"].tolist()

    widget.locator('input[name="hide-first"]').check()
    settled(widget)
    expect(widget.locator('[data-output="mean-loss-knocked"]')).to_contain_text("first token hidden")
    want = knocked_out(gguf, weights, ids, clean, heads, True)
    np.testing.assert_allclose(shown_losses(widget)[1][1:], want["losses"][1:], atol=LOSS_TOLERANCE)

    set_field(knockout, "L0H0")  # from layer 0: 30 layers, ended by the newer one between two of them
    expect(widget).to_have_attribute("data-state", "busy")
    set_field(position, 9)  # answered between two of those layers: the widget stays busy while the knock-out runs
    expect(widget).to_have_attribute("data-position", "9", timeout=LOAD_TIMEOUT_MS)
    assert widget.get_attribute("data-state") == "busy"
    set_field(knockout, "L23H2")
    settled(widget)
    want = knocked_out(gguf, weights, ids, clean, [(23, 2)], True)
    np.testing.assert_allclose(shown_losses(widget)[1][1:], want["losses"][1:], atol=LOSS_TOLERANCE)
    assert widget.locator('[data-layer="0"][data-head="0"]').get_attribute("data-knocked") == "false"
    before = shown_losses(widget)

    set_field(knockout, "L23H2 L99H0")
    expect(widget).to_have_attribute("data-state", "error", timeout=LOAD_TIMEOUT_MS)
    expect(widget.locator('[data-message="lab-error"]')).to_contain_text(
        "Heads to knock out: 'L99H0' is not a head of this model")  # Python's refusal, in the control's words
    assert shown_losses(widget) == before

    text = widget.locator('textarea[name="text"]')
    set_field(text, "The cat sat on the mat, and the cat sat on the mat again today.")
    settled(widget)
    short = tokenizer_from_gguf(gguf).encode(text.input_value())
    losses, knocked = shown_losses(widget)
    assert len(losses) == len(short) and knocked == [None] * len(short)  # rows reused, no older knock-out's loss
    np.testing.assert_allclose(losses[1:], lab.predictions(gguf, lab.run(gguf, short, weights=weights))["losses"][1:],
                               atol=LOSS_TOLERANCE)
    assert widget.get_attribute("data-knocked") == "false"
    assert position.input_value() == str(len(short) - 2) and position.get_attribute("max") == str(len(short) - 1)


@pytest.mark.before_python
def test_at_390_px_the_lab_fits_its_pattern_labels_are_legible_and_axe_finds_nothing_in_light_and_dark(
        page, site_url, widget_path, axe_source):  # noqa: F811
    """On a phone the widget is no wider than the screen; an opened pattern keeps its labels at 12 px or more (and
    its columns as wide), scrolling sideways in a box the keyboard reaches; axe finds no serious violation with the
    attribution colouring, a pattern open and a knock-out's message shown."""
    widget = conftest.open_widget(page, site_url + widget_path(NAME), NAME)
    conftest.resize(page, VIEWPORTS["phone"])
    widget.scroll_into_view_if_needed()
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")
    n = len(widget_module("real_model").heads()["repeated"]["ids"])
    widget.locator('[data-layer="18"][data-head="6"]').click()
    expect(widget.locator(".mha-rm__map tbody tr")).to_have_count(n)
    sizes = widget.evaluate(LABEL_SIZES)
    assert len(sizes["fonts"]) == 2 * n and min(sizes["fonts"]) >= 12 and sizes["column"] >= 12, sizes
    scroll = widget.locator(".mha-rm__pattern-scroll")
    expect(scroll).to_have_attribute("tabindex", "0")
    assert widget.evaluate("root => root.scrollWidth <= root.clientWidth")
    widget.locator('input[name="kind"][value="attribution"]').check()
    knockout = widget.locator('[name="knockout"]')
    knockout.fill("L17H3")
    knockout.press("Tab")
    expect(widget.locator('[data-message="lab-error"]')).to_be_visible()
    found = []
    try:
        found = blocking_in_every_look(page, axe_source, "lab", f'[data-mha-widget="{NAME}"]')
    finally:
        look(page, "light", "desktop")
    assert not found, "\n".join(found)


EFFECT_ROUNDING = 1e-4  # nats: two runs' float32 losses (some 6 nats, a few ulp apart) in two NumPy builds
PRUNING_TIMEOUT_MS = 900_000  # 270 knock-outs and some 20 runs of a few tokens in Pyodide, on a loaded machine


def test_how_many_heads_can_go_on_the_reader_s_text_is_mha_core_s_and_a_newer_request_ends_it(
        shared_widget, gguf, weights):
    """The button measures how many heads can go on the reader's own text as the build measures the page's: its
    progress in Python's words; a knock-out asked meanwhile ends it (and so would a new text or Stop); run to the
    end on a short text, the count, the words and the curve are those mha_core computes here in CPython."""
    widget = shared_widget
    controls = widget.locator('[data-output="pruning-controls"]')
    expect(controls).to_be_hidden()  # the page's text: its curve computed when the page was built
    expect(widget.locator('[data-output="pruning-chart"]')).to_be_visible()
    text = "Mr."  # 2 tokens, a loss: the fewest to knock heads out on (in Pyodide, at a cost in proportion)
    set_field(widget.locator('textarea[name="text"]'), text)  # before Load: the one text the model runs
    load(widget)
    expect(controls).to_be_visible()
    expect(widget.locator('[data-output="pruning-chart"]')).to_be_hidden()
    prune, stop = widget.locator('button[name="prune"]'), widget.locator('button[name="prune-stop"]')
    progress = widget.locator('[data-output="pruning-progress"]')

    prune.click()
    expect(progress).to_contain_text("heads measured", timeout=LOAD_TIMEOUT_MS)
    expect(widget).to_have_attribute("data-state", "busy")
    expect(stop).to_be_enabled()
    set_field(widget.locator('[name="knockout"]'), "L17H3")  # a newer request: the measure ends between two slices
    expect(widget).not_to_have_attribute("data-state", "busy", timeout=LOAD_TIMEOUT_MS)
    assert widget.locator('[data-message="lab-error"]').text_content() == ""
    settled(widget)
    expect(progress).to_have_text("")
    expect(prune).to_be_enabled()
    expect(stop).to_be_disabled()
    expect(widget.locator('[data-output="pruning-chart"]')).to_be_hidden()

    prune.click()
    expect(widget).to_have_attribute("data-state", "busy")
    expect(widget.locator('[data-output="pruning-chart"]')).to_be_visible(timeout=PRUNING_TIMEOUT_MS)
    settled(widget)
    ids = tokenizer_from_gguf(gguf).encode(text)
    clean = lab.run(gguf, ids, weights=weights)
    effects = lab.knockout_effects(gguf, clean, weights)
    # The order the page went in: heads whose effects differ by float32's rounding may go either way round in
    # another NumPy build, moving a point of the curve; every other head is in mha_core's order here.
    order = [tuple(int(i) for i in head.split("."))
             for head in widget.locator('[data-output="pruning-chart"]').get_attribute("data-order").split()]
    assert sorted(order) == sorted(lab.removal_order(effects))
    in_order = np.array([effects[head] for head in order])
    assert np.all(np.diff(in_order) >= -EFFECT_ROUNDING), "the page's order is not the least costly first"
    found = lab.removable_heads(gguf, ids, order, clean, weights, 0.1, 15)
    expected = pruning_view(sorted(found["curve"].items()), found["removable"], order,
                            head_scores(np.stack(clean["patterns"]), ids), button=True)["outputs"]
    words = widget.locator('[data-output="pruning"]')
    assert int(words.get_attribute("data-value")) == found["removable"]
    expect(words).to_have_text(expected["pruning"]["text"])
    shown = [[float(v) for v in point.split(",")]
             for point in widget.locator('[data-output="pruning-line"]').get_attribute("points").split()]
    want = [[float(v) for v in point.split(",")] for point in expected["pruning-line"]["attrs"]["points"].split()]
    np.testing.assert_allclose(shown, want, atol=1.0)  # 120 units span 0.4 nats or more: LOSS_TOLERANCE is 0.6
