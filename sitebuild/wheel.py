"""The mha_core wheel the browser installs, built by the backend pyproject.toml names (flit_core), as
`pip install .` builds it; byte-identical for identical sources (its dates come from SOURCE_DATE_EPOCH)."""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from flit_core.wheel import make_wheel_in

from sitebuild import ROOT

FIXED_EPOCH = 315532800  # 1980-01-01, the earliest date a zip can hold


def set_source_date_epoch() -> None:
    """Date the build (zip entries, the sitemap) by the last commit, else a fixed date, unless set already."""
    out = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    commit_time = out.stdout.strip() if out.returncode == 0 else ""
    os.environ.setdefault("SOURCE_DATE_EPOCH", commit_time or str(FIXED_EPOCH))


def build_wheel(project: Path = ROOT) -> tuple[str, bytes]:
    """(file name, bytes) of the project's wheel."""
    set_source_date_epoch()
    with tempfile.TemporaryDirectory(prefix="mha-wheel-") as tmp:
        wheel = make_wheel_in(project / "pyproject.toml", Path(tmp)).file
        return wheel.name, wheel.read_bytes()
