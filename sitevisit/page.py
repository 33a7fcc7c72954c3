"""What the tests and the benchmarks read and drive in a page: the heads widget's answer to a sentence (given
through Playwright's locators, or as a reader's hands give it), and the memory Python's first start keeps for a
revisit."""
from __future__ import annotations

from playwright.sync_api import expect

# Times the next change of the sentence: from the change event (seen first, on the way down to the field)
# to data-state="live", into window.__answeredMs, and window.__answered (a promise of it).
TIME_ANSWER = """root => {
  window.__answer?.disconnect();
  window.__answeredMs = null;
  let t0 = null;
  let answered;
  window.__answered = new Promise((resolve) => { answered = resolve; });
  root.addEventListener("change", () => { t0 = performance.now(); }, { capture: true, once: true });
  window.__answer = new MutationObserver(() => {
    if (t0 === null || root.dataset.state !== "live") return;
    window.__answeredMs = performance.now() - t0;
    window.__answer.disconnect();
    answered(window.__answeredMs);
  });
  window.__answer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
}"""


WHERE = "el => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }"
MARGIN_PX, NOTCH_PX, NOTCHES = 100, 100, 100  # on screen: this far from its edges; a wheel's notch; at most


def type_sentence(widget, text: str) -> float:
    """As show_sentence, but as a reader's hands do it, for a benchmark that times the page's own work: the wheel
    brings the field on screen, a click puts the caret in it, the keys replace its text and Tab leaves it; returns
    the milliseconds from the change to the answer. (Input events, and one line of script that asks where the
    field is: none of the checks Playwright's locators run in the page.)"""
    page = widget.page
    widget.evaluate(TIME_ANSWER)
    field = widget.locator('textarea[name="sentence"]').element_handle()
    height = page.viewport_size["height"]
    for _ in range(NOTCHES):
        x, y, width, tall = field.evaluate(WHERE)
        if MARGIN_PX <= y and y + tall <= height - MARGIN_PX:
            break
        page.mouse.wheel(0, -NOTCH_PX if y < MARGIN_PX else NOTCH_PX)
        page.wait_for_timeout(50)
    else:
        raise AssertionError(f"the sentence field is not on screen after {NOTCHES} turns of the wheel")
    page.mouse.click(x + width / 2, y + tall / 2)
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Tab")
    return page.evaluate("""() => Promise.race([window.__answered, new Promise((_, fail) => setTimeout(() =>
      fail(new Error("the heads widget did not answer within 30 s")), 30_000))])""")


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
