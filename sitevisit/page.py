"""What the tests and the benchmarks read and drive in a page: the heads widget's answer to a sentence (given
through Playwright's locators, or as a reader's hands give it), and the memory Python's first start keeps for a
revisit."""
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


# Resolves with window.__answeredMs once TIME_ANSWER has timed the answer (one promise: no polling script in the page).
ANSWERED = """() => new Promise((done) => {
  const check = () => (window.__answeredMs !== null ? done(window.__answeredMs) : requestAnimationFrame(check));
  check();
})"""


def type_sentence(page, widget, text: str) -> float:
    """As show_sentence, but as a reader's hands do it, for a benchmark that times the page's own work: the wheel
    brings the field on screen, a click puts the caret in it, the keys replace its text and Tab leaves it. (Only
    input events: none of Playwright's scripts run in the page meanwhile, as its locators' checks would.)"""
    widget.evaluate(TIME_ANSWER)
    field = widget.locator('textarea[name="sentence"]')
    box = field.evaluate("el => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }")
    viewport = page.viewport_size["height"]
    while box[1] < 100 or box[1] + box[3] > viewport - 100:  # a wheel's notch at a time, until it is on screen
        page.mouse.wheel(0, -100 if box[1] < 100 else 100)
        page.wait_for_timeout(50)
        box = field.evaluate("el => { const r = el.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }")
    page.mouse.click(box[0] + box[2] / 2, box[1] + box[3] / 2)
    page.keyboard.press("Control+A")
    page.keyboard.type(text)
    page.keyboard.press("Tab")
    return page.evaluate(ANSWERED)


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
