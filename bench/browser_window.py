"""A bench's page opened as a reader's is when they go to a site: in a window that is open already, the browser
quiet. Chromium builds each new window's own pages as it opens it (its omnibox popup,
chrome://omnibox-popup.top-chrome/): 1.3-1.4 s of CPU within a second of the window, which on two cores would
compete with a visit begun at once; a closed page's end, before a revisit, likewise."""
from __future__ import annotations

import time

# Quiet: every process of the browser together under a tenth of a core over QUIET_S, waited for at most WITHIN_S.
QUIET_S, QUIET_SHARE, WITHIN_S = 0.2, 0.1, 10


def browser_cpu_s(session) -> float:
    """The CPU seconds every process of the browser has used so far."""
    return sum(p["cpuTime"] for p in session.send("SystemInfo.getProcessInfo")["processInfo"])


def open_window(opener, **options):
    """opener.new_page(**options) (opener: a browser or a context), returned once the browser has gone quiet."""
    page = opener.new_page(**options)
    session = page.context.browser.new_browser_cdp_session()
    used, deadline = browser_cpu_s(session), time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        time.sleep(QUIET_S)
        used, before = browser_cpu_s(session), used
        if used - before < QUIET_S * QUIET_SHARE:
            break
    session.detach()
    return page
