"""sitebuild/sources.py and the training widget's cache: the recorded run's key follows every module the run
imports (found from the imports, rng.py included) and nothing else."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sitebuild import ROOT
from sitebuild.sources import imported_files, sources_key
from widgets.training import run as recorded

RUN = Path("mha_page/views/training.py")


@pytest.fixture()
def copy(tmp_path) -> Path:
    """A copy of mha_core and mha_page to edit."""
    for package in ("mha_core", "mha_page"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def imported(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in imported_files(root, root / RUN)}


def test_the_run_imports_the_model_its_task_and_their_helpers_not_the_other_widgets_modules():
    assert imported(ROOT) == {"mha_page/views/training.py", "mha_core/model.py", "mha_core/detectors.py",
                              "mha_core/training.py", "mha_core/attention.py", "mha_core/rng.py", "mha_core/tokens.py",
                              "mha_core/fields.py", "mha_core/params_codec.py", "mha_page/views/charts.py",
                              "mha_page/views/training_charts.py", "mha_page/views/training_codec.py",
                              "mha_page/views/training_schedule.py", "mha_page/views/training_words.py"}


def test_relative_absolute_and_package_imports_are_followed(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    files = {"pkg/__init__.py": "", "pkg/a.py": "from .b import f\nfrom . import c\nimport pkg.sub.e\n",
             "pkg/b.py": "import numpy as np\nfrom .sub import d\n", "pkg/c.py": "", "pkg/sub/__init__.py": "X = 1\n",
             "pkg/sub/d.py": "from ..c import *\n", "pkg/sub/e.py": "", "pkg/unused.py": ""}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = {p.relative_to(tmp_path).as_posix() for p in imported_files(tmp_path, tmp_path / "pkg/a.py")}
    assert found == set(files) - {"pkg/__init__.py", "pkg/unused.py"}


@pytest.mark.parametrize("module", sorted(imported(ROOT)))
def test_the_key_changes_when_any_imported_module_changes(copy, module):
    before = sources_key(copy, copy / RUN)
    with (copy / module).open("a") as f:
        f.write("\n# edited\n")
    assert sources_key(copy, copy / RUN) != before


@pytest.mark.parametrize("module", ["mha_core/heads.py", "mha_core/shapes.py", "mha_core/config.py",
                                    "mha_page/bridge/__init__.py", "mha_core/__init__.py"])
def test_the_key_does_not_depend_on_unrelated_files(copy, module):
    before = sources_key(copy, copy / RUN)
    with (copy / module).open("a") as f:
        f.write("\n# edited\n")
    (copy / "mha_core" / "new_module.py").write_text("X = 1\n")
    assert sources_key(copy, copy / RUN) == before


def test_the_training_widget_keys_its_cached_run_on_the_imports(copy):
    widget = recorded  # widgets/training/run.py, which the training widget ships
    assert widget.cache_key() == widget.cache_key(ROOT)
    assert widget.cache_key(copy) == widget.cache_key(ROOT)  # the same files, elsewhere
    with (copy / "mha_core" / "rng.py").open("a") as f:  # what draws the run's weights and batches
        f.write("\n# edited\n")
    assert widget.cache_key(copy) != widget.cache_key(ROOT)
