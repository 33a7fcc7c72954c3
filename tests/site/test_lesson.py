"""The lesson read in order: every term a newcomer would trip on is defined before it is used (or the use
links to the definition), every content page asks a question before it answers it, every paragraph of the
built pages is short, the softmax example is computed right, and each claim the review corrected is
computed with mha_core.

How a definition is marked: the first use of a term is in bold with an id, `**residual stream**{#residual-stream}`
(attr_list turns it into <strong id="residual-stream">), once in the whole site. A use before that, in the
nav's order, must be the text of a link to it: `[residual stream](index.md#residual-stream)`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import mha_core

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONTENT_PAGES = ("index.md", "why-heads.md", "mechanism.md", "parameters-and-shapes.md", "what-heads-learn.md",
                 "caveats-and-the-block.md")

# term -> (how the text writes it, case-sensitive?, its id). "multi-head" names the topic, not a head.
TERMS = {
    "head": (r"(?<!multi-)\bheads?\b", False, "head"),
    "token": (r"\btokens?\b", False, "token"),
    "embedding": (r"\bembeddings?\b", False, "embedding"),
    "residual stream": (r"\bresidual streams?\b", False, "residual-stream"),
    "query": (r"\bquer(?:y|ies)\b", False, "query"),
    "key": (r"\bkeys?\b", False, "key"),
    "value": (r"\bvalues?\b", False, "value"),
    "softmax": (r"\bsoftmax\b", False, "softmax"),
    "decoder": (r"\bdecoders?\b", False, "decoder"),
    "encoder": (r"\bencoders?\b", False, "encoder"),
    "causal mask": (r"\bcausal mask\b", False, "causal-mask"),
    "FLOPs": (r"\bFLOPs?\b", True, "flops"),
    "stride": (r"\bstrides?\b", False, "strides"),
    "view": (r"\bviews?\b", False, "view"),
    "copy": (r"\bcop(?:y|ies|ied)\b", False, "copy"),
    "KV cache": (r"\bKV caches?\b", True, "kv-cache"),
    "BLEU": (r"\bBLEU\b", True, "bleu"),
    "phase change": (r"\bphase changes?\b", False, "phase-change"),
    "loss": (r"\bloss(?:es)?\b", False, "loss"),
    "logit": (r"\blogits?\b", False, "logit"),
    "unembedding": (r"\bunembedding\b", False, "unembedding"),
    "nats": (r"\bnats?\b", False, "nats"),
    "learning rate": (r"\blearning rates?\b", False, "learning-rate"),
    "Adam": (r"\bAdam\b", True, "adam"),
    "feed-forward": (r"\bfeed-forward\b", False, "feed-forward"),
    "MLP": (r"\bMLPs?\b", True, "feed-forward"),
    "RMSNorm": (r"\bRMSNorm\b", True, "rmsnorm"),
    "K-composition": (r"\bK-composition\b", True, "k-composition"),
}

DEFINITION = re.compile(r"\*\*([^*]+)\*\*\{#([a-z0-9-]+)\}")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")


def nav_pages() -> list[str]:
    from mkdocs.config import load_config
    return [next(iter(entry.values())) for entry in load_config(str(ROOT / "mkdocs.yml"))["nav"]]


def blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group())


def readable(markdown: str) -> str:
    """The text a reader reads, at the same offsets: code, math, comments, headings, snippet lines, HTML
    tags, link targets and attribute lists blanked out."""
    for pattern in (r"^(```|~~~).*?^\1[^\n]*$", r"\$\$.*?\$\$", r"<!--.*?-->"):
        markdown = re.sub(pattern, blank, markdown, flags=re.S | re.M)
    for pattern in (r"`[^`\n]*`", r"\$[^$\n]*\$", r"^#.*$", r"^\s*--8<--.*$", r"<[^>\n]*>", r"\]\([^)\s]*\)",
                    r"\{#[^}]*\}"):
        markdown = re.sub(pattern, blank, markdown, flags=re.M)
    return markdown


def link_targets(page: str, markdown: str) -> list[tuple[int, int, str]]:
    """(start, end, target page#id) of each link's text; a same-page #id gets the page's name."""
    out = []
    for m in LINK.finditer(markdown):
        target = m.group(2)
        out.append((m.start(1), m.end(1), page + target if target.startswith("#") else target))
    return out


def undefined_uses(pages: dict[str, str]) -> list[str]:
    """pages: {name: Markdown} in reading order -> the uses of TERMS before their definition, not linked to it."""
    definitions = {}  # id -> (page index, offset)
    for index, (page, text) in enumerate(pages.items()):
        for m in DEFINITION.finditer(text):
            assert m.group(2) not in definitions, f"{m.group(2)} is defined twice"
            definitions[m.group(2)] = (index, m.start(), page)
    problems = []
    for term, (pattern, case, anchor) in TERMS.items():
        assert anchor in definitions, f"{term}: no definition **{term}**{{#{anchor}}}"
        def_index, def_offset, def_page = definitions[anchor]
        for index, (page, text) in enumerate(pages.items()):
            if index > def_index:
                break
            links = link_targets(page, text)
            for m in re.finditer(pattern, readable(text), 0 if case else re.I):
                if index == def_index and m.start() >= def_offset:
                    break
                linked = any(start <= m.start() < end and target == f"{def_page}#{anchor}" for start, end, target in links)
                if not linked:
                    line = text.count("\n", 0, m.start()) + 1
                    problems.append(f"{page}:{line}: {term!r} used before its definition in {def_page}")
    return problems


def test_terms_are_defined_before_they_are_used():
    pages = {page: (DOCS / page).read_text(encoding="utf-8") for page in nav_pages()}
    problems = undefined_uses(pages)
    assert not problems, "\n".join(problems)


def test_the_term_check_can_fail():
    later = "An **encoder**{#encoder}.\n"
    defined = "A **decoder**{#decoder} with a **causal mask**{#causal-mask}.\n"
    anchors = dict.fromkeys(a for _, _, a in TERMS.values())  # a term may share its definition with another (MLP)
    others = "".join(f"**{a}**{{#{a}}} " for a in anchors if a not in ("decoder", "causal-mask", "encoder"))
    ok = {"a.md": others + defined + "A decoder again.", "b.md": later}
    assert undefined_uses(ok) == []
    used_early = {"a.md": others + "The decoder reads.\n" + defined, "b.md": later}
    assert undefined_uses(used_early) == ["a.md:1: 'decoder' used before its definition in a.md"]
    linked = {"a.md": others + "The [decoder](#decoder) reads.\n" + defined, "b.md": later}
    assert undefined_uses(linked) == []
    wrong_link = {"a.md": others + "The [decoder](b.md#decoder) reads.\n" + defined, "b.md": later}
    assert len(undefined_uses(wrong_link)) == 1
    in_code = {"a.md": others + "`decoder` and $decoder$ <!-- decoder -->\n" + defined, "b.md": later}
    assert undefined_uses(in_code) == []


def test_every_definition_is_an_anchor_of_the_built_page():
    pages = {page: (DOCS / page).read_text(encoding="utf-8") for page in nav_pages()}
    for _, (_, _, anchor) in TERMS.items():
        holders = [page for page, text in pages.items() if f"{{#{anchor}}}" in text]
        assert len(holders) == 1, (anchor, holders)


# ---------------------------------------------------------------- predict, then reveal

QUESTION = re.compile(r'^\?\?\? question "([^"]+)"\n((?:    .*\n|\n)+)', re.M)


@pytest.mark.parametrize("page", CONTENT_PAGES)
def test_every_content_page_asks_before_it_answers(page):
    """At least one collapsed question (the answer inside, hidden until opened) on every content page."""
    text = (DOCS / page).read_text(encoding="utf-8")
    found = QUESTION.findall(text)
    assert found, f"{page}: no ??? question"
    for title, answer in found:
        assert title.rstrip().endswith("?"), (page, title)
        assert len(answer.split()) >= 10, (page, title, "the answer is inside the collapsed block")


# ---------------------------------------------------------------- the built pages: short paragraphs

MAX_WORDS = 90


class Paragraphs(HTMLParser):
    """The words of each <p> and <li> (without nested lists) of the article's prose, widgets left out; a
    formula counts as one word."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.found, self.open, self.math, self.skip = [], [], 0, 0
        self.depth, self.widget_at = 0, None  # element depth; the depth of the widget being skipped
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if tag == "br" and self.open and self.widget_at is None:
                self.open[-1][1].append(" ")
            return
        self.depth += 1
        if self.widget_at is None and "data-mha-widget" in dict(attrs):
            self.widget_at = self.depth
        if self.widget_at is not None:
            return
        if tag in ("p", "li"):
            if self.open and self.open[-1][0] == "li" and tag == "li":
                self.open[-1][1].append(" ")
            self.open.append((tag, []))
        elif tag == "math":
            self.math += 1
            if self.open and self.math == 1:
                self.open[-1][1].append(" M ")
        elif tag in ("pre", "code", "svg", "script", "style"):
            self.skip += 1

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        self.depth -= 1
        if self.widget_at is not None:
            if self.depth < self.widget_at:
                self.widget_at = None
            return
        if tag in ("p", "li") and self.open and self.open[-1][0] == tag:
            self.found.append("".join(self.open.pop()[1]))
        elif tag == "math":
            self.math -= 1
        elif tag in ("pre", "code", "svg", "script", "style"):
            self.skip -= 1

    def handle_data(self, data):
        if self.open and not self.math and self.widget_at is None:
            self.open[-1][1].append(" C " if self.skip else data)


@pytest.fixture(scope="module")
def site(cdn_site) -> Path:
    """The site as build.py builds it, without Pyodide's files (read only: every module shares one build)."""
    return cdn_site


def article(html: str) -> str:
    m = re.search(r'<article class="md-content__inner[^"]*">(.*)</article>', html, re.S)
    assert m, "no Material article in the page"
    return m.group(1)


def test_every_built_paragraph_is_short(site):
    for page in nav_pages():
        url = "index.html" if page == "index.md" else page[:-3] + "/index.html"
        paragraphs = Paragraphs(article((site / url).read_text(encoding="utf-8"))).found
        assert paragraphs, page
        long = [(len(p.split()), " ".join(p.split()[:10])) for p in paragraphs if len(p.split()) > MAX_WORDS]
        assert not long, f"{page}: paragraphs over {MAX_WORDS} words: {long}"


def test_the_paragraph_count_can_fail():
    words = " ".join(["word"] * (MAX_WORDS + 1))
    found = Paragraphs(f"<p>{words}</p><ul><li>a <math><mi>x</mi><mo>+</mo></math> b<ul><li>c</li></ul></li></ul>"
                       f'<div data-mha-widget="w"><div><p>{words}</p></div></div><p>d<br>e</p>').found
    assert [len(p.split()) for p in found] == [MAX_WORDS + 1, 1, 3, 2]


# ---------------------------------------------------------------- the on-ramp's numbers

def test_the_softmax_row_is_computed_right():
    text = (DOCS / "index.md").read_text(encoding="utf-8")
    rows = {cells[0]: cells[1:] for cells in
            ([c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
             if line.startswith(("| score", "| $e^{s_j}$", "| weight")))}
    scores = np.array([float(c) for c in rows["score $s_j$"][:3]])
    exps, total = np.exp(scores), np.exp(scores).sum()
    weights = mha_core.softmax(scores)
    assert rows["$e^{s_j}$"] == [f"{e:.3f}" for e in exps] + [f"{total:.3f}"]
    weight_label = next(label for label in rows if label.startswith("weight"))
    assert weight_label == f"weight $e^{{s_j}} / {total:.3f}$"
    assert rows[weight_label] == [f"{w:.3f}" for w in weights] + [f"{weights.sum():.3f}"]
    shifted = mha_core.softmax(scores + 10)
    assert np.allclose(shifted, weights), "the question's answer: adding 10 changes nothing"
    assert ", ".join(f"{w:.3f}" for w in weights[:2]) + f" and {weights[2]:.3f}" in text.replace("\n    ", " ")
    assert f"*cat* gets {weights[1]:.3f}" in text


def test_the_worked_question_s_answer_holds():
    """Without positions, a repeated word gets equal weights from every query and gives equal outputs."""
    from mha_core.worked import worked_steps

    steps = worked_steps(1, ("the", "cat", "the"))
    assert np.array_equal(steps["X"][0], steps["X"][2])
    for head in range(2):
        w = steps[f"weights_{head}"]
        assert np.allclose(w[:, 0], w[:, 2])
    assert np.allclose(steps["out"][0], steps["out"][2])
    # with a causal mask the first "the" reads only itself, the second all three: their rows differ
    for head in range(2):
        q, k, v = (steps[f"{m}_{head}"] for m in "qkv")
        masked = mha_core.scaled_dot_product_attention(q, k, v, causal=True)[0]  # [n, d_k]
        assert not np.allclose(masked[0], masked[2])


# ---------------------------------------------------------------- the review's corrections, computed

def test_the_detector_score_counts_only_the_queries_that_have_a_target():
    """The page: a perfect head scores 1 here, and less by TransformerLens's measure, which averages over every
    query (the first token has no previous token)."""
    from mha_core.detectors import detector_scores, ideal_patterns

    tokens = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
    perfect = ideal_patterns(tokens)["previous_token"].astype(float)  # [B, n, n]
    perfect[:, 0, 0] = 1.0  # the first query has nowhere else to look
    score = detector_scores([perfect[:, None]], tokens)["previous_token"][0][0]
    every_query = (perfect * ideal_patterns(tokens)["previous_token"]).sum() / perfect.shape[1]  # TransformerLens
    assert score == pytest.approx(1.0) and every_query == pytest.approx(7 / 8)


def test_positions_count_from_0_as_the_formula_for_x_says():
    """X = W_E[tokens] + W_pos[0..n-1]: the trained model's first residual stream, from its own code."""
    from mha_core.model import TrainConfig, init_params, run_with_cache

    config = TrainConfig()
    params = init_params(config, 0)
    tokens = np.array([[5, 7, 9, 5, 7]])
    _, cache = run_with_cache(params, tokens, config)
    np.testing.assert_array_equal(cache["blocks.0.hook_resid_pre"][0], params["W_E"][tokens[0]] + params["W_pos"][0:5])


def test_h_kv_d_k_is_d_model_only_when_d_k_is_d_model_over_h():
    """The caveats' KV-cache rule: the cache follows h_kv·d_k, which is d_model only for the usual d_k."""
    def cache(**kw):
        return mha_core.shape_report(512, 8, 10, 2, dtype_bytes=4, **kw)["kv_cache_bytes"]

    usual = cache()
    assert usual == 2 * 2 * 10 * 512 * 4 == cache(d_head=64)
    assert cache(d_head=128) == 2 * usual  # Gemma's kind of head: h·d_k ≠ d_model
    assert cache(n_kv_heads=2) == usual // 4


def test_swiglu_s_hidden_width_keeps_the_parameter_count():
    """Three matrices of d × (2/3 · 4d) hold as many weights as two of d × 4d; SiLU(u) = u·σ(u) tends to ReLU."""
    d = 4096
    assert 3 * d * (2 * 4 * d // 3) == pytest.approx(2 * d * 4 * d, rel=1e-3)
    u = np.array([-20.0, -1.0, 0.0, 1.0, 20.0])
    silu = u / (1 + np.exp(-u))
    np.testing.assert_allclose(silu[[0, 2, 4]], np.maximum(u, 0)[[0, 2, 4]], atol=1e-7)
    assert silu[1] < 0 < silu[3] < 1  # smooth, not a hinge


def test_the_split_is_a_view_and_the_merge_a_copy_as_the_reveal_answers():
    """The mechanism's question: the split copies nothing; the merge of attention's output copies."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 16))
    heads = mha_core.split_heads(x, 4)
    assert np.shares_memory(heads, x)
    z = np.ascontiguousarray(heads)  # attention's output: a new array, stored head by head
    assert not np.shares_memory(mha_core.merge_heads(z), z)


def test_the_one_vs_many_score_is_what_the_page_says():
    """The number feature's signs, one head delivering each relationship at its share (narrow or wide) and a
    number that is the weighted sum, three heads delivering each whole, two heads half each to the pair that
    shares one."""
    from mha_core import one_vs_many as ovm
    from mha_page.views.one_vs_many import verb_form

    number = ovm.embed()[:, ovm.CONTENT][:, ovm.NUMBER_FEATURE]  # [n]
    signs = {t: number[i] for i, t in enumerate(ovm.TOKENS) if t in ("report", "committee", "members", "rules")}
    assert signs == {"report": 1, "committee": 1, "members": -1, "rules": -1}
    assert set(number[[i for i, t in enumerate(ovm.TOKENS) if t not in signs]]) == {0}
    for wide in (False, True):
        r = ovm.one_vs_many(50, 20, 30, wide=wide)
        np.testing.assert_allclose(r["one"]["arrives"], r["shares"], atol=1e-9)
        means = [number[list(keys)].mean() for keys in r["relationships"].values()]
        assert r["one"]["number"] == pytest.approx(float(np.dot(r["shares"], means)), abs=1e-9)
        np.testing.assert_allclose(r["many"]["arrives"], 1, atol=1e-9)
        assert r["many"]["number"] == pytest.approx(1, abs=1e-9) and verb_form(r["many"]["number"]) == "was"
    # two heads: the pair sharing one arrives at half each; the subject beside the clause stays singular,
    # beside the neighbour it cancels
    forms = {alone: verb_form(ovm.one_vs_many(heads=2, alone=alone)["many"]["number"]) for alone in ovm.RELATIONSHIPS}
    assert forms == {"subject": "was", "previous": "was", "clause": "was or were?"}
    assert sorted(ovm.one_vs_many(heads=2, alone="clause")["many"]["arrives"]) == pytest.approx([0.5, 0.5, 1])


def test_the_knock_out_question_s_answer_holds():
    """With the previous-token head zeroed, the induction head's queries at the repeat rest on themselves."""
    sentence = "the cat sat on the mat . the cat sat"
    intact = np.array(mha_core.head_patterns(sentence)["heads"]["induction"])
    ablated = np.array(mha_core.head_patterns(sentence, ablate=["previous_token"])["heads"]["induction"])
    assert intact[8, 2] > 0.9 and intact[9, 3] > 0.9  # the second "cat" and "sat" read the tokens after their first
    assert all(ablated[i, i] > 0.9 for i in (7, 8, 9))


def test_pytorch_fuses_attention_on_a_cpu_too():
    """The shapes page's fused kernels: the pinned torch, on this CPU, runs its flash kernel for SDPA with or
    without a mask, and the unfused steps (a softmax of its own) when dropout is asked for."""
    import torch
    import torch.nn.functional as F

    q = torch.randn(1, 4, 16, 8)

    def kernels(**kw):
        with torch.profiler.profile() as prof:
            F.scaled_dot_product_attention(q, q, q, **kw)
        return {e.key for e in prof.key_averages()}

    flash = "aten::_scaled_dot_product_flash_attention_for_cpu"
    assert flash in kernels(is_causal=True)
    assert flash in kernels(attn_mask=torch.ones(16, 16, dtype=torch.bool).tril())
    steps = kernels(dropout_p=0.5)
    assert flash not in steps and "aten::_scaled_dot_product_attention_math" in steps


def test_the_toy_unembeds_with_no_norm_and_the_real_model_with_one():
    """The block figure's caption: the attention-only toy's logits are its last residual stream times W_U, and it
    has no norm's weights; the real model's unembed normalises first (its output_norm), as mha_core.llama runs it."""
    from mha_core.llama.model import rms_norm, unembed
    from mha_core.model import TrainConfig, init_params, run_with_cache

    config = TrainConfig()
    params = init_params(config, 0)
    logits, cache = run_with_cache(params, np.array([[5, 7, 9, 5, 7]]), config)
    np.testing.assert_allclose(logits, cache["hook_resid_final"] @ params["W_U"], rtol=1e-12)
    assert not any("norm" in name or name.startswith("ln") for name in params)

    from mha_core.llama import llama_config, read_gguf, tensor, tensor_rows
    from sitebuild.assets import fetch_model

    gguf = read_gguf(fetch_model())
    resid = np.random.default_rng(0).standard_normal((2, llama_config(gguf).d_model)).astype(np.float32) * 3
    W_E = tensor_rows(gguf, "token_embd.weight", np.arange(8))  # [8, d_model], tied: W_U = W_Eᵀ
    normed = rms_norm(resid, tensor(gguf, "output_norm.weight"), llama_config(gguf).eps)
    np.testing.assert_allclose(unembed(gguf, resid)[:, :8], normed @ W_E.T, rtol=1e-4, atol=1e-4)
    assert not np.allclose(resid @ W_E.T, normed @ W_E.T, atol=0.1)


def test_the_clause_s_nouns_are_shrunk_by_the_average_as_why_heads_says():
    """The clause's nouns, from the sentence itself (committee +1, members −1, rules −1), averaged over all its
    tokens, and one head giving the subject and the clause half each: the numbers why-heads quotes."""
    import importlib.util
    from mha_core import one_vs_many as ovm

    spec = importlib.util.spec_from_file_location("ovm_facts", ROOT / "widgets/one_vs_many/facts.py")
    facts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(facts)
    f = {k: v.replace("\u2212", "-") for k, v in facts.facts().items()}
    clause = ovm.TOKENS[2:-1]  # after the subject, before the verb
    nouns = [{"committee": 1, "members": -1, "rules": -1}[t] for t in clause if t in ("committee", "members", "rules")]
    assert [int(x) for x in re.split(r", | and ", f["ovm_clause_nouns"])] == nouns
    assert int(f["ovm_clause_sum"]) == sum(nouns) and f["ovm_clause_tokens"] == str(len(clause))
    assert float(f["ovm_clause_mean"]) == sum(nouns) / len(clause)
    assert float(f["ovm_pair_number"]) == pytest.approx(0.5 * 1 + 0.5 * sum(nouns) / len(clause), abs=0.005)
    assert 0 < float(f["ovm_pair_number"])  # still singular
