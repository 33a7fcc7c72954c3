"""What the tests and the benchmarks read and drive in a page: the heads widget's answer to a sentence, and
the memory Python's first start keeps for a revisit."""
from __future__ import annotations

from playwright.sync_api import expect

# Times the next change of the sentence: from the change event (seen first, on the way down to the field)
# to data-state="live", into window.__answeredMs.
TIME_ANSWER = """root => {
  window.__answer?.disconnect();
  window.__answeredMs = null;
  let t0 = null;
  root.addEventListener("change", () => { t0 = performance.now(); }, { capture: true, once: true });
  window.__answer = new MutationObserver(() => {
    if (t0 === null || root.dataset.state !== "live") return;
    window.__answeredMs = performance.now() - t0;
    window.__answer.disconnect();
  });
  window.__answer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
}"""


def show_sentence(widget, text: str) -> float | None:
    """Type a sentence and leave the field, as a reader does (applied on change); wait for its patterns.
    Returns the milliseconds from the change to data-state="live" (None if the text was already there)."""
    widget.evaluate(TIME_ANSWER)
    field = widget.locator('textarea[name="sentence"]')
    field.fill(text)
    field.press("Tab")
    expect(widget).to_have_attribute("data-state", "live")
    return widget.evaluate("() => window.__answeredMs")


# The memory Python's first start keeps in Cache Storage (widgets/runtime/memory.js), for a revisit.
HEX = """const hex = async (b) => Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", b)),
                                        (x) => x.toString(16).padStart(2, "0")).join("");"""
# The key of the memory kept in Cache Storage once it is whole (readable, and its bytes those of its sha256).
KEPT_MEMORY = """async () => {
  %s
  const store = await caches.open("mha-python");
  const key = (await store.keys()).map((r) => r.url).find((url) => url.includes("/python-memory?"));
  const kept = key && await store.match(key);
  if (!kept) return null;
  return (await hex(await kept.arrayBuffer())) === kept.headers.get("X-Content-SHA256") ? key : null;
}""" % HEX


def kept_memory(page) -> str:
    """The Cache Storage key of the memory Python's start kept (waited for: it is kept after ready)."""
    for _ in range(120):
        key = page.evaluate(KEPT_MEMORY)
        if key:
            return key
        page.wait_for_timeout(250)
    raise AssertionError("no memory was kept within 30 s of ready")
