"""The widget pattern, kept: outside widgets/runtime/, a widget's JavaScript wires its controls to calls through
runtime/live.js and binds Python's views; it does not write the root's data-state (live.js's life cycle does),
keep a request counter (a count compared to know whether an answer is stale: live.js's "latest wins" does that),
format a number (every number a reader reads is Python's), fill in a sentence (fillIn: the words come whole
from Python's view, or the runtime fills them before Python exists) or hold words in a string (two words of letters
with a space, in quotes or a template literal: the reader's words are Python's; a selector's combinator is written
with ">" there). Read from the source text, comments and strings left out (but for the words in strings); each
finding names its file and line. An aid for the next engineer, like test_imports.py."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from sitebuild import editor, widgets

WIDGETS = widgets.WIDGETS
RUNTIME = WIDGETS / "runtime"
SOURCES = sorted(p for p in WIDGETS.rglob("*.js") if RUNTIME not in p.parents and p.name != editor.BUNDLE)

STATE_WRITE = re.compile(r"\.dataset\.state\s*=(?!=)")
# the same through a name in a string (STR in the code, read in the line as written)
NAMED_STATE_WRITE = re.compile(r"""dataset\[\s*["'](?:state)["']\s*\]\s*=(?!=)|setAttribute\(\s*["']data-state["']|"""
                               r"""setData\(\s*[^,()]+,\s*["']state["']""")
INCREMENT = re.compile(r"(?:\+\+|--)\s*((?:this\.)?\w+)|((?:this\.)?\w+)\s*(?:\+\+|--)|((?:this\.)?\w+)\s*[+-]=\s*1\b")
FOR = re.compile(r"\bfor\s*\(")
NUMBER_FORMAT = re.compile(r"\.(?:toFixed|toPrecision|toExponential|toLocaleString)\s*\(|\bIntl\.NumberFormat\b")
FILL_IN = re.compile(r"\bfillIn\s*\(")
WORDS = re.compile(r"[A-Za-z]+ [A-Za-z]+")

# What the pattern allows, each with its reason: (file under widgets/, what).
ALLOWED: dict[tuple[str, str], str] = {
    ("exercise/runner.js", "fills in a sentence"): "the exercise's words while Python starts or once it has stopped "
                                                   "(the status line's, a stop's reason): no Python to word them",
    ("real_model/real_model.js", "fills in a sentence"): "the model's download progress, before Python has the model",
    ("real_model/model.js", "fills in a sentence"): "a failed load of the model, before Python has it",
    ("shapes/shapes.js", "fills in a sentence"): "what the widget waits for and a failure, before Python has answered: "
                                                 "Python's sentences (pending_words) with the form's values",
}


def read(text: str) -> tuple[list[str], list[tuple[int, str]]]:
    """text's lines with comments removed and every string literal's content replaced by STR (a quote's
    content, a template literal's text; its ${...} kept), so that words in prose never match; and each literal's
    content (a template literal's, each stretch between its ${...}) with the number of the line it starts on."""
    out, literals, i, n = [], [], 0, len(text)
    state = None  # None, "'", '"', "`", "//", "/*"
    depth = []  # template literals' open ${ braces
    start, held = 0, []  # where the literal read starts in text, and its content so far
    while i < n:
        c, pair = text[i], text[i:i + 2]
        if state is None:
            if pair in ("//", "/*"):
                state, i = pair, i + 2
                continue
            if c in "'\"`":
                state, start, held = c, i, []
                out.append("STR" if c != "`" else "`")
            elif c == "}" and depth and depth[-1] == 0:
                depth.pop()
                state, start, held = "`", i, []
                out.append("}")
            else:
                if depth and c == "{":
                    depth[-1] += 1
                elif depth and c == "}":
                    depth[-1] -= 1
                out.append(c)
        elif state == "//":
            if c == "\n":
                state = None
                out.append(c)
        elif state == "/*":
            if pair == "*/":
                state, i = None, i + 2
                continue
            if c == "\n":
                out.append(c)
        elif c == "\\":
            held.append(text[i + 1:i + 2])
            i += 2
            continue
        elif state == "`" and pair == "${":
            literals.append((start, "".join(held)))
            state = None
            depth.append(0)
            out.append("${")
            i += 2
            continue
        elif c == state:
            literals.append((start, "".join(held)))
            if state == "`":
                out.append("STR`")
            state = None
        else:
            held.append(c)
            if c == "\n":
                out.append(c)
        i += 1
    return "".join(out).split("\n"), [(text.count("\n", 0, at) + 1, content) for at, content in literals]


def without_loop_headers(line: str) -> str:
    """line without its for (...) headers, whose counters count a loop's turns."""
    while match := FOR.search(line):
        depth, end = 1, match.end()
        while end < len(line) and depth:
            depth += {"(": 1, ")": -1}.get(line[end], 0)
            end += 1
        line = line[:match.start()] + line[end:]
    return line


def findings(text: str) -> list[tuple[int, str]]:
    """(line number, what) for each place text breaks the pattern."""
    (lines, literals), written = read(text), text.split("\n")
    found = []
    counters = set()
    for number, line in enumerate(lines, 1):
        if STATE_WRITE.search(line) or (NAMED_STATE_WRITE.search(written[number - 1]) and "STR" in line):
            found.append((number, "writes data-state"))
        for match in INCREMENT.finditer(without_loop_headers(line)):
            counters.add((number, next(g for g in match.groups() if g)))
        if NUMBER_FORMAT.search(line):
            found.append((number, "formats a number"))
        if FILL_IN.search(line):
            found.append((number, "fills in a sentence"))
    found += [(number, "holds words") for number, content in literals if WORDS.search(content)]
    code = "\n".join(lines)
    for number, name in sorted(counters):  # a count that is compared: whether an answer is still the latest
        compared = rf"(?:===|!==)\s*{re.escape(name)}\b|\b{re.escape(name)}\s*(?:===|!==)"
        if re.search(compared, code):
            found.append((number, "keeps a request counter"))
    return sorted(found)


@pytest.mark.parametrize("snippet, expected", [
    ('root.dataset.state = "busy";', ["writes data-state"]),
    ('w.root.dataset.state = status;\nif (w.root.dataset.state === "busy") go();', ["writes data-state"]),
    ('el.setAttribute("data-state", "live");', ["writes data-state"]),
    ('setData(root, "state", "error");', ["writes data-state"]),
    ('if (root.dataset.state === "error") retry(); // root.dataset.state = "x"', []),
    ('const mine = ++wanted;\nif (mine !== wanted) return null;', ["keeps a request counter"]),
    ('const run = ++this.run;\nif (run !== this.run) return;', ["keeps a request counter"]),
    ('for (let i = 0; i < n; i++) rows.push(i);', []),
    ('for (let d = 1; d <= Math.min(of, n); d++) if (of % d === 0) divisors.push(d);', []),
    ('seed += 1; // an argument, never compared', []),
    ('setText(el, `${loss.toFixed(3)} nats`);', ["formats a number"]),
    ('say("use .toFixed( in Python");', ["holds words"]),
    ('throw new InputError("Train a run first.");', ["holds words"]),
    ('go();\nshow(`Waiting for ${what}…`);', ["holds words"]),
    ("const key = `${instead} ${waits}`; // \"two words\" in a comment", []),
    ('root.querySelector(`button[name="${name}"]`);\nroot.querySelector("details > summary");', []),
    ('setText(el, fillIn(words.left, { left }));', ["fills in a sentence"]),
    ('import { fillIn } from "../runtime/dom.js"; // fillIn(words) is the runtime\'s', []),
])
def test_the_reader_finds_what_it_must_and_nothing_else(snippet, expected):
    assert [what for _, what in findings(snippet)] == expected


def test_the_widgets_outside_the_runtime_keep_the_pattern():
    assert SOURCES and all(p.suffix == ".js" for p in SOURCES)
    broken, used = [], set()
    for path in SOURCES:
        name = path.relative_to(WIDGETS).as_posix()
        text = path.read_text(encoding="utf-8")
        for number, what in findings(text):
            if (name, what) in ALLOWED:
                used.add((name, what))
            else:
                broken.append(f"widgets/{name}:{number} {what}: {text.split(chr(10))[number - 1].strip()}")
    assert not broken, "outside widgets/runtime/ (runtime/live.js owns the life cycle, Python the numbers):\n" + \
        "\n".join(broken)
    assert used == set(ALLOWED), f"allowed but no longer found, drop them: {set(ALLOWED) - used}"


# A timer handed a Promise's resolve itself: the code that awaits it then runs as a script without a source in the
# browser's Long Animation Frames timing, which the benchmarks (bench/training_speed.py) leave out as the test
# harness's own (runtime/page.js's nextTask calls a function of the site's instead).
RESOLVE_TIMER = re.compile(r"\b(?:setTimeout|setInterval|requestAnimationFrame)\(\s*(?:resolve|res|r)\s*[,)]")


@pytest.mark.parametrize("snippet, found", [("await new Promise((resolve) => setTimeout(resolve));", True),
                                            ("new Promise((r) => requestAnimationFrame(r))", True),
                                            ("new Promise((resolve) => setTimeout(() => resolve(), 10))", False)])
def test_a_timer_handed_resolve_is_found(snippet, found):
    assert bool(RESOLVE_TIMER.search(snippet)) is found


def test_every_timer_of_the_site_calls_a_function_of_the_site():
    sources = sorted([*WIDGETS.rglob("*.js"), *WIDGETS.rglob("*.mjs")])
    sources = [p for p in sources if "node_modules" not in p.parts and p.name != editor.BUNDLE]
    assert editor.ENTRY in sources
    found = [f"widgets/{p.relative_to(WIDGETS).as_posix()}:{number}: {line.strip()}" for p in sources
             for number, line in enumerate(p.read_text(encoding="utf-8").split("\n"), 1) if RESOLVE_TIMER.search(line)]
    assert not found, "a timer handed resolve (runtime/page.js's nextTask instead):\n" + "\n".join(found)
