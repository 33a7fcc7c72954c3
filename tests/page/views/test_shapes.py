"""The shapes widget's view: the text every number is shown as, exact at any size, and the slots it fills."""

import inspect
import math

import pytest

from mha_core import LIMITS, shape_report
from mha_page.views.shapes import (byte_size, flop_count, integer, memory_note, pending_words, shape, shapes_display,
                                  shapes_view)


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1, "1 B"), (1023, "1,023 B"), (1024, "1.00 KiB"), (1152, "1.13 KiB"), (1536, "1.50 KiB"),
    (10_240, "10.0 KiB"), (1_048_575, "1024 KiB"), (1_048_576, "1.00 MiB"), (1_050_624, "1.00 MiB"),
    (64 * 2**20, "64.0 MiB"), (2 * 2**30, "2.00 GiB"), (2**80, "1.00 YiB"), (2**90, "1024 YiB"),
])
def test_byte_sizes(n, text):
    assert byte_size(n) == text


def test_rounding_is_half_up_and_exact():
    assert byte_size(1029) == "1.00 KiB" and byte_size(1030) == "1.01 KiB"  # 1.0048 and 1.0058...
    assert byte_size(1024 + 5 * 1024 // 1000) == "1.00 KiB"
    assert flop_count(1005) == "1.01 kFLOP"  # exactly 1.005: half up (a float would give 1.00)
    assert flop_count(999) == "999 FLOP" and flop_count(2_500_000) == "2.50 MFLOP"
    assert flop_count(99_950) == "100.0 kFLOP"  # 99.95 rounds up past 100 within its unit


def test_integers_are_exact_past_float_precision():
    assert integer(2**67) == "147,573,952,589,676,412,928"
    assert integer(2**53 + 1) == "9,007,199,254,740,993"
    assert shape([2, 10, 512]) == "2 × 10 × 512"


def test_the_largest_configuration_is_shown_exactly():
    B, n, h, d_k = LIMITS["batch"], LIMITS["seq_len"], LIMITS["n_heads"], LIMITS["d_head"]
    report = shape_report(LIMITS["d_model"], h, n, B, d_head=d_k, dtype_bytes=8)
    shown = {t["name"]: t for t in shapes_display(report)["tensors"]}
    scores = B * h * n * n
    assert scores == 2**80
    assert shown["scores"]["numel"] == f"{scores:,}" == "1,208,925,819,614,629,174,706,176"
    assert shown["scores"]["bytes"] == "8.00 YiB"
    totals = shapes_display(report)["totals"]
    assert int(totals["params"]["value"]) == report["params"]["total"]
    assert int(totals["flops"]["value"]) == report["flops"] > 2**90
    assert totals["params"]["text"] == f"{report['params']['total']:,}"


def test_display_of_a_report():
    report = shape_report(512, 8, seq_len=10, batch=2, n_kv_heads=2, n_layers=6)
    shown = shapes_display(report)
    assert shown["kind"] == "grouped-query" and shown["n_layers"] == "6 layers"
    by = {t["name"]: t for t in shown["tensors"]}
    assert by["k_heads"]["shape"] == "2,2,10,64" and by["k_heads"]["shape_text"] == "2 × 2 × 10 × 64"
    assert by["x"]["numel"] == "10,240" and by["x"]["bytes"] == "40.0 KiB"
    assert [p["name"] for p in shown["params"]] == ["W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V", "b_O"]
    assert shown["totals"]["kv_cache"] == {"value": str(2 * 2 * 10 * 128 * 4), "text": "20.0 KiB"}
    assert shown["totals"]["kv_cache_model"]["value"] == str(6 * 2 * 2 * 10 * 128 * 4)
    assert shapes_display(shape_report(512, 8, 10, 2, bias=False))["params"][4] == {"name": "b_Q", "shape": "none", "numel": "0"}
    assert shapes_display(shape_report(512, 8, 10, 2, n_layers=1))["n_layers"] == "1 layer"


def test_suggestions_are_labelled_with_their_symbols():
    shown = shapes_display(shape_report(512, 6, 10, 2))["check"]
    assert not shown["ok"]
    assert [s["text"] for s in shown["suggestions"]] == ["h = 4", "h = 8", "d_model = 510", "d_model = 516",
                                                         "d_head = 85", "d_head = 86"]
    assert shown["suggestions"][0] == {"name": "n_heads", "value": "4", "text": "h = 4"}
    big = shapes_display(shape_report(1_048_574, 3, 10, 2))["check"]["suggestions"]
    assert [s["text"] for s in big if s["name"] == "d_model"] == ["d_model = 1,048,575", "d_model = 1,048,572"]


def test_the_waiting_words_name_each_size_the_form_holds_as_the_suggestions_do():
    """shapes.js fills these in before Python has answered: a {value} for every field of shapes_view's, {changes}
    and {error} in its sentences."""
    words = pending_words()
    sizes = set(inspect.signature(shapes_view).parameters) - {"preset"}
    assert set(words["fields"]) == sizes and set(words["main"]) <= sizes
    assert all("{value}" in said for said in words["fields"].values())
    suggested = shapes_display(shape_report(512, 6, 10, 2))["check"]["suggestions"][0]  # h = 4
    assert words["fields"][suggested["name"]].format(value=suggested["value"]) == suggested["text"]
    changes = words["separator"].join(words["fields"][k].format(value=v) for k, v in (("n_heads", 16), ("seq_len", 128)))
    assert words["waiting"].format(changes=changes) == "Waiting for Python to compute h = 16, n = 128…"
    assert words["failed"].format(changes=changes, error="why") == "Could not compute h = 16, n = 128: why"


def test_memory_notes_say_what_numpy_did():
    by = {t["name"]: t for t in shape_report(512, 8, 10, 2)["tensors"]}
    assert memory_note(by["x"]) == "input"
    assert memory_note(by["q_heads"]) == "a view of q: no data copied"
    assert memory_note(by["merged"]).startswith("a copy")
    assert memory_note(by["weights"]) == "same buffer as scores: the softmax runs in place"


def test_the_view_fills_every_slot_from_the_display():
    args = dict(d_model=512, n_heads=8, seq_len=10, batch=2, n_kv_heads=2, n_layers=6)
    shown, view = shapes_display(shape_report(**args)), shapes_view(**args)["outputs"]
    assert view["check"] == {"text": shown["check"]["message"], "data": {"ok": "true", "stale": "false"}}
    assert view["results"] == {"data": {"stale": "false"}}
    for t in shown["tensors"]:
        row = view[f"tensor-{t['name']}"]
        assert row["data"]["shape"] == t["shape"] and row["outputs"]["numel"] == t["numel"]
        assert row["outputs"]["layout"] == t["note"] and row["outputs"]["op"] == {"title": t["op"]}
    assert view["params"] == shown["totals"]["params"] and view["kind"] == "grouped-query"
    assert view["n_layers"] == "6 layers"
    totals = {name: shown["totals"][name]["text"] for name in ("params", "params_bytes", "kv_cache", "flops",
                                                                  "kv_cache_model")}
    assert view["totals"] == {"data": {"stale": "false"}, "text": (
        "This layer: {params} parameters ({params_bytes}), KV cache {kv_cache}, {flops} per forward pass; the KV "
        "cache of all 6 layers: {kv_cache_model}.").format(**totals)}
    one = shapes_view(**{**args, "n_layers": 1})["outputs"]["totals"]["text"]
    assert one == view["totals"]["text"].split("; the KV cache of all")[0] + "."  # a layer's totals, and no more


def test_a_configuration_that_does_not_fit_fills_the_check_and_marks_the_results_stale():
    view = shapes_view(512, 6, 10, 2)["outputs"]
    assert sorted(view) == ["check", "results", "suggestions", "totals"]
    assert view["check"]["data"]["ok"] == "false" and view["results"]["data"]["stale"] == "true"
    assert view["totals"] == {"data": {"stale": "true"}}  # the last that fitted stays, marked
    assert view["suggestions"]["rows"][0] == {"outputs": {"suggestion": {"text": "h = 4", "data": {"name": "n_heads", "value": "4"}}}}


def test_an_encoder_s_preset_keeps_no_kv_cache_in_every_slot_that_names_one():
    """BERT reads its whole input at once: the headline, the two KV cache slots and the note all say so."""
    from mha_core.presets import PRESETS

    bert = PRESETS["bert-base"]
    sizes = {"d_model": bert.d_model, "n_heads": bert.n_heads, "seq_len": 512, "batch": 1, "n_layers": bert.n_layers}
    view = shapes_view(**sizes, preset="bert-base")["outputs"]
    assert view["kv_cache"] == view["kv_cache_model"] == {"value": "0", "text": "none"}
    assert "KV cache" not in view["totals"]["text"].split(";")[0] and "no KV cache" in view["totals"]["text"]
    assert view["cache_note"] == {"text": bert.cache_note, "hidden": False}
    as_decoder = shapes_view(**sizes)["outputs"]  # the same sizes, no model named: a cache, no note
    assert int(as_decoder["kv_cache"]["value"]) > 0 and as_decoder["cache_note"] == {"text": "", "hidden": True}
    base = PRESETS["transformer-base"]
    note = shapes_view(512, 8, 10, 2, n_layers=12, preset="transformer-base")["outputs"]["cache_note"]
    assert note == {"text": base.cache_note, "hidden": False}


def test_an_unknown_preset_is_refused_by_name():
    with pytest.raises(ValueError, match="preset must be one of"):
        shapes_view(512, 8, 10, 2, preset="gpt-5")
