"""The figures in Chromium: each visible on its page, inside its column on a phone (390 px) and a desktop
(1280 px) with its smallest text 11 px or more, and following Material's scheme toggle: every text and shape
changes colour when the reader switches to the dark scheme, every text stays at least 4.5:1 against what
is behind it in both schemes, and axe finds no serious violation in either."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from test_accessibility import axe_source, blocking  # noqa: F401 (a fixture, used by name)

FIGURES = {"sentence-to-x": "", "agreement": "why-heads/", "induction-circuit": "what-heads-learn/",
           "prediction": "what-heads-learn/", "block": "caveats-and-the-block/"}  # a page's figures side by side
WIDTHS = (390, 1280)
SCHEMES = ("default", "slate")  # Material's light and dark schemes

# Where the figure sits: its box, its SVG's, its column's, its texts' and the page's width, the SVG's scale.
GEOMETRY = """fig => {
  const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const svg = fig.querySelector("svg");
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  return { figure: box(fig), svg: box(svg), column: box(fig.closest(".md-content__inner")),
           texts: [...svg.querySelectorAll("text")].map(t => [t.textContent, box(t), parseFloat(getComputedStyle(t).fontSize) * scale]),
           page: [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth] };
}"""

# Each text's colour and the colour behind it (the filled shapes under its middle, painted over the page's
# background; a colour with alpha mixed with what is below), and their WCAG contrast ratio; each shape's colours.
COLOURS = """fig => {
  const rgba = s => { const m = /rgba?\\(([^)]+)\\)/.exec(s); if (!m) return null;
    const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number); return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1]; };
  const over = (top, below) => [0, 1, 2].map(i => top[i] * top[3] + below[i] * (1 - top[3])).concat(1);
  const lum = c => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const ratio = (a, b) => { const [hi, lo] = [lum(a), lum(b)].sort((p, q) => q - p); return (hi + 0.05) / (lo + 0.05); };
  const page = rgba(getComputedStyle(document.body).backgroundColor);
  const texts = [...fig.querySelectorAll("svg text")].map(t => {
    const r = t.getBoundingClientRect();
    const under = document.elementsFromPoint(r.left + r.width / 2, r.top + r.height / 2)
      .filter(e => (e instanceof SVGRectElement || e instanceof SVGCircleElement) && fig.contains(e));
    let behind = page;
    for (const e of under.reverse()) {
      const fill = rgba(getComputedStyle(e).fill);
      if (fill) behind = over([...fill.slice(0, 3), fill[3] * Number(getComputedStyle(e).fillOpacity)], behind);
    }
    const colour = getComputedStyle(t).fill;
    return [t.textContent, colour, ratio(over(rgba(colour), behind), behind)];
  });
  const shapes = [...fig.querySelectorAll("svg rect, svg line, svg path, svg circle")]
    .map(e => `${getComputedStyle(e).fill} ${getComputedStyle(e).stroke}`);
  return { texts, shapes };
}"""


def set_scheme(page, scheme: str) -> None:
    """Switch the scheme with the toggle in the header, as a reader does."""
    body = page.locator("body")
    if body.get_attribute("data-md-color-scheme") != scheme:
        page.locator('form:has(input[name="__palette"]) label:visible').click()
    expect(body).to_have_attribute("data-md-color-scheme", scheme)


def inside(inner, outer, slack=0.5) -> bool:
    return (inner[0] >= outer[0] - slack and inner[1] >= outer[1] - slack and inner[2] <= outer[2] + slack
            and inner[3] <= outer[3] + slack)


@pytest.mark.before_python  # the figures are drawn at build time: Python, held back, would start for nothing
@pytest.mark.parametrize("width", WIDTHS)
def test_each_figure_fits_reads_and_follows_the_scheme_toggle(page, site_url, axe_source, width):  # noqa: F811
    page.set_viewport_size({"width": width, "height": 1400})
    problems = []
    for name, path in FIGURES.items():
        if page.url != site_url + path:  # a page holding two figures is loaded once
            page.goto(site_url + path)
        figure = page.locator(f'[data-mha-figure="{name}"]')
        figure.scroll_into_view_if_needed()
        expect(figure.locator("svg")).to_be_visible()
        set_scheme(page, "default")
        g = figure.evaluate(GEOMETRY)
        where = f"{name} at {width} px"
        assert g["page"][0] <= g["page"][1], f"{where}: the page scrolls sideways"
        assert inside(g["svg"], g["figure"]) and inside(g["figure"], g["column"]), (where, g["svg"], g["column"])
        assert g["svg"][2] - g["svg"][0] > 0.8 * min(g["column"][2] - g["column"][0], 600), f"{where}: drawn too small"
        for text, box, size in g["texts"]:
            assert inside(box, g["svg"], slack=1), f"{where}: {text!r} is cut off by the figure's edge"
            assert size >= 11, f"{where}: {text!r} is {size:.1f} px"
        seen = {}
        for scheme in SCHEMES:
            set_scheme(page, scheme)
            figure.scroll_into_view_if_needed()
            seen[scheme] = figure.evaluate(COLOURS)
            problems += [f"{where} ({scheme}): {text!r} in {colour} is {contrast:.2f}:1"
                         for text, colour, contrast in seen[scheme]["texts"] if contrast < 4.5]
            problems += blocking(page, axe_source, f"{where} ({scheme})", f'[data-mha-figure="{name}"]')
        light, dark = seen["default"], seen["slate"]
        problems += [f"{where}: {t[0]!r} keeps its colour {t[1]} in the dark scheme"
                     for t, d in zip(light["texts"], dark["texts"]) if t[1] == d[1]]
        problems += [f"{where}: shape {i} keeps its colours {s} in the dark scheme"
                     for i, (s, d) in enumerate(zip(light["shapes"], dark["shapes"])) if s == d]
    assert not problems, "\n".join(problems)
