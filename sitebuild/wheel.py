"""The wheels the browser installs, built by the backend pyproject.toml names (flit_core): mha_core's, as
`pip install .` builds it, and mha_page's (the page's views and bridge, which `pip install .` leaves out), from
PAGE_PROJECT; byte-identical for identical sources (their dates come from SOURCE_DATE_EPOCH)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from flit_core.wheel import make_wheel_in

from sitebuild import ROOT

PAGE_PROJECT = """[build-system]
requires = ["flit_core>=3.12,<5"]
build-backend = "flit_core.buildapi"

[project]
name = "mha-page"
dynamic = ["version"]  # mha_page.__version__
description = "The explainer's views and bridge: what its page reads and calls, computed by mha_core."
requires-python = ">=3.11"
dependencies = ["mha-core"]

[tool.flit.module]
name = "mha_page"
"""
FIXED_EPOCH = 315532800  # 1980-01-01, the earliest date a zip can hold


def set_source_date_epoch() -> None:
    """Date the build (zip entries, the sitemap) by the last commit, else a fixed date, unless set already."""
    out = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True)
    commit_time = out.stdout.strip() if out.returncode == 0 else ""
    os.environ.setdefault("SOURCE_DATE_EPOCH", commit_time or str(FIXED_EPOCH))


def build_wheel(project: Path = ROOT) -> tuple[str, bytes]:
    """(file name, bytes) of the project's wheel: mha_core."""
    set_source_date_epoch()
    with tempfile.TemporaryDirectory(prefix="mha-wheel-") as tmp:
        wheel = make_wheel_in(project / "pyproject.toml", Path(tmp)).file
        return wheel.name, wheel.read_bytes()


def build_page_wheel(project: Path = ROOT) -> tuple[str, bytes]:
    """(file name, bytes) of mha_page's wheel, built from a copy of the package beside PAGE_PROJECT."""
    with tempfile.TemporaryDirectory(prefix="mha-page-") as tmp:
        shutil.copytree(project / "mha_page", Path(tmp) / "mha_page", ignore=shutil.ignore_patterns("__pycache__"))
        (Path(tmp) / "pyproject.toml").write_text(PAGE_PROJECT)
        return build_wheel(Path(tmp))


def build_wheels(project: Path = ROOT) -> list[tuple[str, bytes]]:
    """[(file name, bytes)] of every wheel the browser installs: mha_core's, then mha_page's."""
    return [build_wheel(project), build_page_wheel(project)]
