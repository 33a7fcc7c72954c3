"""The runtime's own words once Python is up: the status the page shows when Python is ready. (What the status
says before, while Python downloads and starts, the page says itself: there is no Python yet to make it.)"""

from __future__ import annotations

from mha_core.fields import Between, Flag, arguments

MAX_START_MS = 86_400_000  # a day: a start is ended long before, by the page's watchdog or the reader


@arguments(ms=Between(0, MAX_START_MS), restored=Flag())
def ready_message(ms: float, restored: bool) -> str:
    """'Python ready in 2.1 s: the numbers are computed in your browser.', ms being the start's milliseconds;
    restored (the start came from the memory an earlier visit kept) says so in parentheses before the colon."""
    how = " (its start restored from the memory an earlier visit kept)" if restored else ""
    return f"Python ready in {ms / 1000:.1f} s{how}: the numbers are computed in your browser."
