"""mha_page.bridge.exercises: the exercises' own entry point runs the reader's code; the widgets' bridge never does."""
import json

import pytest

from mha_page import bridge
from mha_page.bridge import exercises
from tests.core.test_exercises import RIGHT, trained_params


def ask(fn: str, **args) -> dict:
    return json.loads(exercises.call(fn, json.dumps(args)))


def test_a_right_answer_passes_through_the_entry_point():
    answer = ask("run_exercise", name="kv_cache", code=RIGHT["kv_cache"])
    assert answer["ok"] and answer["result"]["status"] == "pass"


def test_the_detectors_are_checked_with_the_trained_weights_the_page_hands_over():
    answer = ask("run_exercise", name="detectors", code=RIGHT["detectors"], params=trained_params())
    assert answer["ok"] and answer["result"]["status"] == "pass", answer
    assert "the trained model's layer 1 on its evaluation sequences" in answer["result"]["message"]
    refused = ask("run_exercise", name="detectors", code=RIGHT["detectors"])
    assert not refused["ok"] and refused["error"].startswith("params is needed"), refused


def test_the_widgets_bridge_cannot_run_a_reader_s_code():
    assert "run_exercise" not in bridge.FUNCTIONS
    assert not json.loads(bridge.call("run_exercise", json.dumps({"name": "kv_cache", "code": "x = 1"})))["ok"]


@pytest.mark.parametrize("args,words", [
    ({"name": "nope", "code": "x = 1"}, "name must be one of split_heads"),
    ({"name": "kv_cache", "code": ""}, "code is empty"),
    ({"name": "kv_cache", "code": 3}, "code must be a string"),
    ({"name": "kv_cache", "code": "#" * (exercises.MAX_CODE_CHARS + 1)}, "code is too long"),
    ({"name": "kv_cache"}, "missing a required argument: 'code'"),
])
def test_bad_arguments_are_named(args, words):
    answer = ask("run_exercise", **args)
    assert not answer["ok"] and words in answer["error"], answer
