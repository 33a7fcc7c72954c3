"""How fast does the heads widget answer, in headless Chromium, on a 40-token sentence?

Three figures, each from the reader's action to the updated heatmap painted (the next frame after it):
  - head switch: a click on a head button (its outputs bound from the view in hand, no Python);
  - sentence change: a new sentence applied on change (heads_view in the page's Python worker);
  - unusual text: the same, for text that is not a plain sentence (UNUSUAL), the slowest of them.
Each sentence is new to the widget. The budget is p95 ≤ 50 ms, and for the
unusual texts a second at most.

    python bench/browser_heads.py [--rounds N] [--site DIR]   (without --site, the site is built first)
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from browser_window import open_window  # noqa: E402
from mha_core import tokenize
from mha_page import bridge  # noqa: E402
from sitevisit.chromium import chromium  # noqa: E402
from sitevisit.site import pages_with, served_site  # noqa: E402

PHRASE = "the old keeper of the light waved at the ships , and"
N_TOKENS = 40
BUDGET_MS = 50

MEASURE = """async ({ kinds, sentences, unusual, rounds }) => {
  const root = document.querySelector('[data-mha-widget="heads"]');
  const field = root.querySelector('textarea[name="sentence"]');
  const painted = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const live = () => new Promise((resolve) => {
    const observer = new MutationObserver(() => root.dataset.state === "live" && (observer.disconnect(), resolve()));
    observer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
  });
  const answer = async (sentence) => {
    const done = live();
    const t0 = performance.now();
    field.value = sentence;
    field.dispatchEvent(new Event("change", { bubbles: true }));
    await done;
    await painted();
    return performance.now() - t0;
  };
  const times = { switchDom: [], switchPainted: [], sentence: [], unusual: [] };
  for (const sentence of sentences) times.sentence.push(await answer(sentence));
  for (const text of unusual) times.unusual.push(await answer(text));
  for (let i = 0; i < rounds; i++) {
    const button = root.querySelector(`button[data-head="${kinds[(i + 1) % kinds.length]}"]`);
    await painted();
    const t0 = performance.now();
    button.click();
    times.switchDom.push(performance.now() - t0);
    await painted();
    times.switchPainted.push(performance.now() - t0);
  }
  return times;
}"""


# Text a reader may type that is not a plain sentence: markup, scripts from right to left with emoji and
# combining marks, punctuation alone, numbers, and 10,000 characters (cut to the first 64 tokens).
UNUSUAL = ['<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b> & "quotes"',
           "שלום עולם, שלום 😀 🇫🇷 e\u0301 !!! ¿?", "!!! ... ???", "-5 0 3.5 1e12 12345678901234567890",
           " ".join(f"w{i % 50:03d}" for i in range(2000))]


def sentence(i: int) -> str:
    """A 40-token sentence with repeats, different for each i (so the widget has no cached answer)."""
    words = (PHRASE + " ") * 4
    text = " ".join(tokenize(words)[:N_TOKENS - 1] + [f"w{i}"])
    assert len(tokenize(text)) == N_TOKENS
    return text


def view_kb(text: str) -> float:
    """The size of the bridge's answer for text's view, in KB: what the page's Python hands the page."""
    return len(bridge.call("heads_view", json.dumps({"text_or_tokens": text})).encode()) / 1000


def summary(name: str, times: list[float]) -> str:
    p95 = statistics.quantiles(times, n=20, method="inclusive")[18]
    verdict = "within" if p95 <= BUDGET_MS else "OVER"
    return f"  {name:<44} median {statistics.median(times):6.1f} ms   p95 {p95:6.1f} ms   ({verdict} the {BUDGET_MS} ms budget)"


def measure(browser, url: str, rounds: int) -> dict:
    """{switchDom, switchPainted, sentence, unusual: [ms]} on the heads widget's page at url."""
    page = open_window(browser, viewport={"width": 1200, "height": 900})
    page.goto(url)
    page.locator('[data-mha-widget="heads"]').scroll_into_view_if_needed()  # Python starts near a widget
    page.wait_for_selector('html[data-mha-runtime="ready"]', state="attached", timeout=30_000)
    kinds = page.eval_on_selector_all('[data-mha-widget="heads"] button[data-head]', "bs => bs.map(b => b.dataset.head)")
    times = page.evaluate(MEASURE, {"kinds": kinds, "sentences": [sentence(i) for i in range(rounds // 2)],
                                    "unusual": UNUSUAL, "rounds": rounds})
    page.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100, help="head switches (sentence changes: half as many)")
    parser.add_argument("--site", type=Path, help="an already built site (default: build one now)")
    args = parser.parse_args()
    with served_site(args.site) as (site, base), chromium() as browser:
        times = measure(browser, base + pages_with(site, 'data-mha-widget="heads"')[0], args.rounds)
    print(f"heads widget, {N_TOKENS}-token sentence, headless Chromium: {args.rounds} head switches, "
          f"{args.rounds // 2} sentence changes; its view (five heads) is {view_kb(sentence(0)):.0f} KB of JSON")
    print(summary("head switch: click -> heatmap in the DOM", times["switchDom"]))
    print(summary("head switch: click -> heatmap painted", times["switchPainted"]))
    print(summary("sentence change: change -> heatmap painted", times["sentence"]))
    print(f"  unusual text: change -> heatmap painted, slowest of {len(UNUSUAL)}: {max(times['unusual']):.1f} ms")


if __name__ == "__main__":
    main()
