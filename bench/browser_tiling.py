"""How fast does the tiling widget's step move, in headless Chromium, on the built site served from 127.0.0.1?

    python bench/browser_tiling.py [--site DIR] [--moves 100]

The widget's heaviest view (64 tokens, the smallest block they allow, d_head 8, no mask: 64 tiles of 8 × 8
scores, eight queries' rows each) is asked of the page's Python once; then the step slider moves MOVES times,
each to a tile of another query block, and each move is timed from its input event to the step's slots in the
DOM (bound from the view in hand, no Python) and to the next frame painted. Also printed: the view's size and
how long Python took to answer it. Target: a step moves in p95 ≤ 16 ms (DOM updated).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(Path(__file__).resolve().parent), str(ROOT)]
from browser_shapes import percentile  # noqa: E402
from browser_window import open_window  # noqa: E402
from bench.figures import Figures  # noqa: E402
from mha_page import bridge  # noqa: E402
from mha_page.views.tiling import smallest_block  # noqa: E402
from sitevisit.chromium import chromium  # noqa: E402
from sitevisit.site import pages_with, served_site  # noqa: E402

FIGURES = Figures("browser_tiling")
N_TOKENS, D_HEAD = 64, 8
SENTENCE = " ".join(f"w{i}" for i in range(N_TOKENS))
BLOCK = smallest_block(N_TOKENS)

# Asks for the heavy view through the form (as a reader does), then moves the step: each move to a tile some
# query blocks away, so that every number of the tables changes.
MEASURE = """async ({ sentence, dHead, block, moves }) => {
  const root = document.querySelector('[data-mha-widget="tiling"]');
  const form = root.querySelector("form");
  const slider = root.querySelector('input[name="step"]');
  const painted = () => new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const live = () => new Promise((resolve) => {
    const observer = new MutationObserver(() => root.dataset.state === "live" && (observer.disconnect(), resolve()));
    observer.observe(root, { attributes: true, attributeFilter: ["data-state"] });
  });
  const done = live();
  const asked = performance.now();
  form.sentence.value = sentence;
  form.d_head.value = String(dHead);
  form.block.value = String(block);
  form.causal.checked = false;
  form.requestSubmit();
  await done;
  const answered = performance.now() - asked;
  await painted();
  const steps = Number(slider.max) + 1;
  const text = root.querySelector('[data-output="step-text"]');
  const times = { dom: [], painted: [], answered, steps };
  for (let i = 0; i < moves; i++) {
    const value = String((i * 19) % steps);
    const t0 = performance.now();
    slider.value = value;
    slider.dispatchEvent(new Event("input", { bubbles: true }));
    const t1 = performance.now();
    if (!text.textContent.startsWith(`Tile ${Number(value) + 1} of ${steps}`)) throw new Error(`step ${value} not shown`);
    times.dom.push(t1 - t0);
    await painted();
    times.painted.push(performance.now() - t0);
  }
  return times;
}"""


def measure(browser, url: str, moves: int) -> dict:
    page = open_window(browser, viewport={"width": 1200, "height": 900})
    page.goto(url)
    page.locator('[data-mha-widget="tiling"]').scroll_into_view_if_needed()  # Python starts near a widget
    page.wait_for_selector('html[data-mha-runtime="ready"]', state="attached", timeout=30_000)
    times = page.evaluate(MEASURE, {"sentence": SENTENCE, "dHead": D_HEAD, "block": BLOCK, "moves": moves})
    page.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, help="an already built site (default: build one now)")
    parser.add_argument("--moves", type=int, default=100, help="step moves timed")
    args = parser.parse_args()
    if args.moves < 20:
        parser.error("--moves must be at least 20 (a p95 of fewer says little)")
    with served_site(args.site) as (site, base), chromium() as browser:
        times = measure(browser, base + pages_with(site, 'data-mha-widget="tiling"')[0], args.moves)
    view = bridge.call("tiling_view", json.dumps({"text_or_tokens": SENTENCE, "d_head": D_HEAD, "block": BLOCK,
                                                  "causal": False}))
    print(f"tiling widget, {N_TOKENS} tokens, block {BLOCK}, d_head {D_HEAD}, no mask: {times['steps']} steps; its view "
          f"is {len(view.encode()) / 1000:.0f} KB of JSON, answered by the page's Python in {times['answered']:.0f} ms")
    dom, painted = times["dom"], times["painted"]
    print(f"    step move -> next frame painted: p95 {percentile(painted, 95):.1f} ms, median {statistics.median(painted):.1f} ms")
    FIGURES.check(f"tiling widget: step move → updated DOM ({len(dom)} moves, {N_TOKENS} tokens in tiles of {BLOCK} × {BLOCK})",
                  f"p95 {percentile(dom, 95):.1f} ms, median {statistics.median(dom):.1f} ms", "p95 ≤ 16 ms",
                  percentile(dom, 95) <= 16)
    return 0


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
