"""The widgets' pure ES modules (those that need no page: numbers, the heads widget's URL state, the palette, the
wheels' unpacking, the kept memory's layout) under Node's own test runner, from tests/widgets/*.test.mjs, one folder per folder of widgets/;
and palette.js against its twin in Python, widgets/palette.py's colour(). Run from pytest so that `make test`
and `make test-core` report them in one summary; `node --test tests/widgets/` runs them alone."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from sitebuild import assets
from widgets.palette import PALETTE, STEPS, colour

ROOT = Path(__file__).resolve().parents[2]
NODE_TESTS = ROOT / "tests" / "widgets"


def node(*args: str) -> subprocess.CompletedProcess:
    executable = shutil.which("node")
    assert executable, "Node.js is needed (README: Two commands)"
    return subprocess.run([executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_node_tests_pass():
    assets.fetch_pyodide()  # NumPy's wheel, which wheels.test.mjs unpacks
    files = sorted(NODE_TESTS.rglob("*.test.mjs"))
    assert len(files) >= 4, files
    ran = node("--test", "--test-reporter=tap", *map(str, files))
    assert ran.returncode == 0, ran.stdout[-6000:] + ran.stderr[-2000:]
    summary = dict(line[2:].split(" ", 1) for line in ran.stdout.splitlines() if line.startswith("# "))
    assert int(summary["fail"]) == 0 and int(summary["pass"]) >= 15, summary


def test_palette_js_gives_the_colours_of_its_python_twin():
    weights = [i / 1000 for i in range(1001)] + [-0.5, 1.5, 0.5 / STEPS, 1.5 / STEPS]
    script = (f"import {{ makePalette }} from './widgets/shared/palette.js';"
              f"const p = makePalette({json.dumps(PALETTE)}, {STEPS});"
              f"console.log(JSON.stringify({json.dumps(weights)}.map(p.css)));")
    ran = node("--input-type=module", "-e", script)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [colour(w) for w in weights]
