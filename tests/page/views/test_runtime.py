"""The runtime's ready status: the start's time in seconds to one decimal, how it started, and the bridge (both
Pythons' entries, which every start asks) refusing what is not a start's time."""

import json
import re

import pytest

from mha_page import bridge
from mha_page.bridge import exercises
from mha_page.views.runtime import MAX_START_MS, ready_message

RESTORED = " (its start restored from the memory an earlier visit kept)"


@pytest.mark.parametrize("ms, seconds", [(0, "0.0"), (2140, "2.1"), (2160, "2.2"), (950, "0.9"), (36_400.5, "36.4"),
                                         (MAX_START_MS, "86400.0")])
@pytest.mark.parametrize("restored", [False, True])
def test_the_start_s_seconds_and_how_it_started(ms, seconds, restored):
    how = RESTORED if restored else ""
    assert ready_message(ms, restored) == f"Python ready in {seconds} s{how}: the numbers are computed in your browser."


@pytest.mark.parametrize("entry", [bridge, exercises], ids=["widgets", "exercises"])
def test_each_python_s_entry_answers_its_start(entry):
    answer = json.loads(entry.call("ready_message", json.dumps({"ms": 1234.5, "restored": True})))
    assert answer == {"ok": True, "result": ready_message(1234.5, True)}


@pytest.mark.parametrize("args, words", [
    ({"ms": -1, "restored": False}, "ms must be a number from 0 to 8.64e+07, got -1."),
    ({"ms": MAX_START_MS + 1, "restored": False}, "ms must be a number from 0 to 8.64e+07"),
    ({"ms": "2100", "restored": False}, "ms must be a number from 0 to 8.64e+07, got '2100'."),
    ({"ms": 2100, "restored": 1}, "restored must be true or false, got 1."),
    ({"ms": 2100}, "missing a required argument: 'restored'"),
])
def test_what_is_not_a_start_is_refused_with_its_name(args, words):
    answer = json.loads(bridge.call("ready_message", json.dumps(args)))
    assert answer["ok"] is False and words in answer["error"]
    with pytest.raises((ValueError, TypeError), match=re.escape(words)):  # a Python user's call is refused alike
        ready_message(**args)
