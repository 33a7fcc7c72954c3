"""The tiling widget's view: every step's numbers are mha_core.flash's for that tile, the grid marks each tile as
the step has it, the counts are flash_counts', the last step's error is the tiled output against the ordinary one,
and the browser gets the view through the bridge."""

import json

import numpy as np
import pytest

from mha_core import scaled_dot_product_attention
from mha_page import bridge
from mha_core.flash import flash_attention_steps, flash_counts, sentence_head
from mha_page.views.tiling import MAX_TILES, scientific, smallest_block, tiling_view

SENTENCE = "The old lighthouse keeper waved, and the old lighthouse keeper smiled."
CASES = [(d, block, causal) for d in (2, 4, 8) for block in (2, 3, 4, 13, 20) for causal in (False, True)]


def parsed(text: str) -> float:
    return -np.inf if text == "−∞" else float(text.replace("−", "-"))


@pytest.mark.parametrize("d_head, block, causal", CASES)
def test_each_step_shows_its_tile(d_head, block, causal):
    head = sentence_head(SENTENCE, d_head)
    r = flash_attention_steps(head["q"], head["k"], head["v"], block, block, causal)
    computed = [step for step in r["steps"] if not step["skipped"]]
    view = tiling_view(SENTENCE, d_head, block, causal)
    assert len(view["steps"]) == len(computed) == view["data"]["steps"]
    assert {k: v for k, v in view["outputs"].items() if k != "grid"} == {
        k: v for k, v in (view["outputs"] | view["steps"][0]).items() if k != "grid"}
    for s, (slots, step) in enumerate(zip(view["steps"], computed)):
        states = slots["grid"]["cells"]["data"]["state"]
        states = [states["values"][i] for i in states["index"]]
        assert states == ["skipped" if t["skipped"] else "current" if t is step else "done"
                          if computed.index(t) < s else "todo" for t in r["steps"]]
        rows = slots["queries"]["rows"]
        assert [row["outputs"]["token"] for row in rows] == [f"{i + 1} “{head['tokens'][i]}”" for i in range(*step["rows"])]
        for name, (before, after) in (("m", step["m"]), ("l", step["l"])):
            assert np.allclose([parsed(row["outputs"][f"{name}-before"]) for row in rows], before, atol=0.005)
            assert np.allclose([parsed(row["outputs"][f"{name}-after"]) for row in rows], after, atol=0.005)
        assert np.allclose([float(row["outputs"]["rescale"]["value"]) for row in rows], step["rescale"], rtol=1e-5)
        moved = step["m"][1] > step["m"][0]
        assert [row["data"]["moved"] == "true" for row in rows] == moved.tolist()
        o_after = [[parsed(x) for x in row["outputs"]["o-after"].split()] for row in rows]
        assert np.allclose(o_after, step["o"][1], atol=0.005)
        scores = [[-np.inf if c["data"]["kind"] == "masked" else parsed(c["text"]) for c in row["rows"]]
                  for row in slots["scores"]["rows"]]
        assert np.allclose(scores, step["scores"], atol=0.005)
        assert len(slots["score-keys"]["rows"]) == step["cols"][1] - step["cols"][0]


@pytest.mark.parametrize("d_head, block, causal", CASES)
def test_counts_and_the_last_step_s_error(d_head, block, causal):
    view = tiling_view(SENTENCE, d_head, block, causal)
    head = sentence_head(SENTENCE, d_head)
    n = len(head["tokens"])
    c = flash_counts(n, n, d_head, d_head, block, block, causal)
    o = view["outputs"]
    assert int(o["held"]["value"]) == c["held"] == min(block, n) ** 2 and int(o["full"]["value"]) == n * n
    assert int(o["tiles"]["value"]) == c["tiles"] and int(o["tiles-skipped"]["value"]) == c["skipped"]
    assert (c["skipped"] > 0) == (causal and block < n)
    for way in ("ordinary", "tiled"):
        assert int(o[f"reads-{way}"]["value"]) == c[way]["reads"] and int(o[f"writes-{way}"]["value"]) == c[way]["writes"]
    tiled = flash_attention_steps(head["q"], head["k"], head["v"], block, block, causal)["out"]
    ordinary, _ = scaled_dot_product_attention(head["q"], head["k"], head["v"], causal=causal)
    error = float(view["steps"][-1]["max-error"]["value"])
    assert error == pytest.approx(np.abs(tiled - ordinary).max(), rel=1e-3, abs=1e-300) and error < 1e-6
    assert all(slots["max-error"]["hidden"] for slots in view["steps"][:-1])


def test_the_block_is_refused_when_it_makes_too_many_tiles():
    sentence = " ".join(f"w{i}" for i in range(64))
    assert smallest_block(64) == 8 and (64 // 8) ** 2 == MAX_TILES
    assert len(tiling_view(sentence, 2, 8, False)["steps"]) == MAX_TILES
    with pytest.raises(ValueError, match="block must be at least 8 for 64 tokens"):
        tiling_view(sentence, 2, 7, False)
    with pytest.raises(ValueError, match="block must be at least 8 for 64 tokens .* got 4"):
        tiling_view(sentence)  # the default block
    with pytest.raises(ValueError, match="d_head must be one of"):
        tiling_view(sentence, 3, 8, False)


def test_the_browser_gets_the_view_through_the_bridge():
    args = {"text_or_tokens": SENTENCE, "d_head": 4, "block": 4, "causal": True}
    answer = json.loads(bridge.call("tiling_view", json.dumps(args)))
    assert answer["ok"] and answer["result"] == json.loads(json.dumps(tiling_view(**args)))
    refused = json.loads(bridge.call("tiling_view", json.dumps(args | {"block": 0})))
    assert not refused["ok"] and "block" in refused["error"]


def test_scientific():
    assert scientific(0) == "0" and scientific(2.2e-16) == "2.2 × 10⁻¹⁶" and scientific(3.0e5) == "3.0 × 10⁵"
