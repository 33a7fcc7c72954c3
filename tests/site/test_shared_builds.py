"""SharedBuilds, which builds each test site once for all the workers of a run: a site built or being built by
another process is not built again, a failed build fails everyone who needs it with what build.py said, and a
process that needs a site someone else is building waits for it."""
from __future__ import annotations

import fcntl
import threading

import pytest

from sitevisit.site import SharedBuilds


def built_elsewhere(folder, name: str, said: str = "") -> None:
    """What another process leaves once its build of name has ended."""
    (folder / name).mkdir()
    (folder / f"{name}.built").write_text(said, encoding="utf-8")


def test_a_site_built_by_another_process_is_not_built_again(tmp_path):
    built_elsewhere(tmp_path, "plain")
    builds = SharedBuilds(tmp_path, {"plain": ()})
    builds.run()
    assert builds.site("plain") == tmp_path / "plain"
    assert builds.building == []


def test_a_failed_build_fails_whoever_needs_it_with_what_build_py_said(tmp_path):
    built_elsewhere(tmp_path, "plain", "build.py failed or warned:\nWARNING: a page links nowhere")
    with pytest.raises(RuntimeError, match="a page links nowhere"):
        SharedBuilds(tmp_path, {"plain": ()}).site("plain")


def test_a_site_another_process_is_building_is_left_to_it_and_waited_for(tmp_path):
    builds = SharedBuilds(tmp_path, {"plain": ()})
    with open(tmp_path / "plain.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process, building
        builds.run()
        assert builds.building == [] and not (tmp_path / "plain.built").exists()
        got = []
        waiting = threading.Thread(target=lambda: got.append(builds.site("plain")))
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive() and got == []
        built_elsewhere(tmp_path, "plain")
    waiting.join(10)
    assert got == [tmp_path / "plain"] and builds.building == []
