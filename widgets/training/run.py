"""The training widget's recorded run, as the page ships it (run.json): the default TrainConfig trained from SEED
for the widget's schedule by mha_page.views.training.recorded_run, in float32 as the reader's live runs are.

One module for every reader of it (the training widget's assets, the circuits widget, the exercises, the facts),
imported by name, so that no widget.py reads another through the build's loader. The run is kept in .cache/,
keyed on this file, SEED and every module recorded_run imports (found from the imports themselves,
sitebuild.sources), so an edit to any of them trains it again; byte-identical between builds of the same sources.
"""
from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path

from mha_core.model import RECORDED_SEED as SEED, TrainConfig
from mha_page.views.training import recorded_run
from sitebuild import CACHE, ROOT, kept
from sitebuild.sources import sources_key

RUN_MODULE = Path("mha_page") / "views" / "training.py"  # where recorded_run lives
ASSET = "run.json"


def cache_key(root: Path = ROOT) -> str:
    """What the recorded run depends on: SEED, this file, and every module recorded_run imports, transitively."""
    digest = hashlib.sha256(f"seed={SEED}".encode() + Path(__file__).read_bytes())
    digest.update(sources_key(root, root / RUN_MODULE).encode())
    return digest.hexdigest()[:20]


@functools.cache
def asset_bytes() -> bytes:
    """run.json: the recorded run as compact JSON (sorted keys, no NaN), from the cache when the sources match."""
    def make() -> bytes:
        run = recorded_run(TrainConfig(), SEED)
        return json.dumps(run, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return kept(CACHE / f"training-run-{cache_key()}.json", make)


def run() -> dict:
    """The recorded run, as the browser reads it."""
    return json.loads(asset_bytes())
