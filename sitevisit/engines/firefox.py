"""Pages visited in one headless Firefox (firefox.mjs, puppeteer-core over WebDriver BiDi)."""
from __future__ import annotations

import json
import subprocess

from sitevisit.engines import HERE, EngineMissing, firefox


def visit_in_firefox(base: str, paths: list[str], timeout_s: float) -> list[dict]:
    """probe.js's report for each page base + path, in order: {path, runtime, widgets, problems}."""
    node, executable = firefox()
    asked = json.dumps({"executable": executable, "base": base, "paths": paths, "timeoutMs": timeout_s * 1000})
    done = subprocess.run([node, str(HERE / "firefox.mjs")], input=asked, capture_output=True, text=True,
                          timeout=timeout_s * (len(paths) + 1))
    reports = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if reports and "failed" in reports[0]:
        raise EngineMissing(reports[0]["failed"])
    if done.returncode or len(reports) != len(paths):
        raise RuntimeError(f"firefox.mjs ended with {done.returncode} after {len(reports)} of {len(paths)} "
                           f"pages:\n{done.stderr}")
    return reports
