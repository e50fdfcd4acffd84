"""End to end: the review queue and the overview on a phone (390 px) and a desktop (1440 px).

Checked from the DOM in Chromium: no element reaches past the screen's edges (a table may
scroll inside its own frame, the page may not scroll sideways), chart titles overlap neither
each other nor Streamlit's toolbar of the chart (in the DOM even while hidden), and on a phone
the reviewer's name and the verdict buttons are on the page, the sidebar collapsed, before
the long answer and source text. Screenshots go to pytest's ``tmp_path``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dashboard.figures import SCORE_TITLES
from tests.e2e import test_dashboard_e2e as base

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.model]

# the same set-up as the other end-to-end tests: a demo database served by `groundwatch serve`
# and Debian's Chromium (module fixtures: this module gets its own server)
server = base.server
browser = base.browser
TIMEOUT_MS = base.TIMEOUT_MS

VIEWPORTS = {390: 844, 1440: 900}
TITLES = {"".join(t.split()) for t in [*SCORE_TITLES.values(), "Volume and share flagged"]}
VERDICTS = ("Confirmed", "False alarm", "Unsure", "Undo")

#: What the check reads: elements past the viewport (unless clipped by a scrolling or
#: clipping box of their own widget that lies within the screen), the page's scroll widths,
#: and per chart the boxes of its titles and of its toolbar.
LAYOUT_JS = """
() => {
  const vw = document.documentElement.clientWidth;
  const main = document.querySelector('[data-testid=stMain]');
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
      const r = a.getBoundingClientRect();
      if (getComputedStyle(a).overflowX !== 'visible' && r.left >= -1 && r.right <= vw + 1) {
        return true;
      }
    }
    return false;
  };
  const wide = [];
  for (const e of main.querySelectorAll('*')) {
    const r = e.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    if ((r.right > vw + 1 || r.left < -1) && !clipped(e)) {
      const id = e.getAttribute('data-testid') || e.getAttribute('class') || '';
      wide.push(`${e.tagName.toLowerCase()} ${id} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  const box = (e) => {
    const r = e.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
  };
  const charts = [...main.querySelectorAll('[data-testid=stVegaLiteChart]')].map(p => {
    const element = p.closest('[data-testid=stElementContainer]') || p.parentElement;
    const toolbar = element.querySelector('[data-testid=stElementToolbar]');
    return {
      titles: [...p.querySelectorAll('.role-title-text, .role-title-subtitle')]
        .filter(t => t.textContent.trim())
        .map(t => ({text: t.textContent, box: box(t)})),
      toolbar: toolbar ? box(toolbar) : null,
    };
  });
  const scrollWidths = [document.documentElement, main, main.firstElementChild]
    .map(e => e.scrollWidth);
  return {vw, scrollWidths, wide, charts};
}
"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"] - 0.5
        and b["left"] < a["right"] - 0.5
        and a["top"] < b["bottom"] - 0.5
        and b["top"] < a["bottom"] - 0.5
    )


def _new_page(browser: Any, width: int) -> tuple[Any, Any]:
    ctx = browser.new_context(viewport={"width": width, "height": VIEWPORTS[width]})
    pg = ctx.new_page()
    pg.set_default_timeout(TIMEOUT_MS)
    return ctx, pg


def _settle(page: Any) -> None:
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')")


def _check_fits(page: Any, width: int) -> dict[str, Any]:
    layout: dict[str, Any] = page.evaluate(LAYOUT_JS)
    assert layout["vw"] == width
    assert layout["wide"] == [], f"wider than {width} px: {layout['wide'][:10]}"
    assert max(layout["scrollWidths"]) <= width, layout["scrollWidths"]
    return layout


def _screenshot(page: Any, path: Path) -> None:
    """The first screen, then the whole page (a viewport as tall as the page's content:
    Streamlit scrolls inside its main block, which a full-page screenshot does not follow)."""
    page.screenshot(path=str(path.with_name(path.stem + "_screen.png")))
    size = page.viewport_size
    height = page.evaluate(
        "() => document.querySelector('[data-testid=stMain]').firstElementChild.scrollHeight"
    )
    page.set_viewport_size({"width": size["width"], "height": min(int(height) + 100, 8000)})
    page.wait_for_timeout(300)
    page.screenshot(path=str(path))
    page.set_viewport_size(size)


@pytest.mark.parametrize("width", list(VIEWPORTS))
def test_overview_charts_fit_and_their_titles_stand_clear(
    server: str, browser: Any, tmp_path: Path, width: int
) -> None:
    ctx, page = _new_page(browser, width)
    try:
        page.goto(f"{server}/overview")
        page.get_by_role("heading", name="Overview").first.wait_for()
        page.wait_for_function(  # both charts drawn, with their data
            "() => [...document.querySelectorAll('[data-testid=stVegaLiteChart]')]"
            ".filter(c => c.querySelector('.mark-line path')).length >= 2"
        )
        _settle(page)
        layout = _check_fits(page, width)
        charts = layout["charts"]
        assert len(charts) == 2
        seen: set[str] = set()
        for chart in charts:
            assert chart["toolbar"] is not None
            titles = [t for t in chart["titles"] if "".join(t["text"].split()) in TITLES]
            assert titles, chart["titles"]
            seen |= {"".join(t["text"].split()) for t in titles}
            for i, a in enumerate(titles):
                assert a["box"]["right"] <= width + 1, a
                assert not _overlap(a["box"], chart["toolbar"]), (a, chart["toolbar"])
                for b in titles[i + 1 :]:
                    assert not _overlap(a["box"], b["box"]), (a, b)
        assert seen == TITLES
        for i in range(2):
            page.locator("[data-testid=stVegaLiteChart]").nth(i).screenshot(
                path=str(tmp_path / f"overview_{width}_chart{i}.png")
            )
        _screenshot(page, tmp_path / f"overview_{width}.png")
    finally:
        ctx.close()


@pytest.mark.parametrize("width", list(VIEWPORTS))
def test_review_queue_fits_and_its_verdicts_are_in_reach(
    server: str, browser: Any, tmp_path: Path, width: int
) -> None:
    ctx, page = _new_page(browser, width)
    try:
        page.goto(f"{server}/review")
        main = page.get_by_test_id("stMain")
        main.get_by_text("Item 1 of").first.wait_for()
        for label in VERDICTS:  # Streamlit also keeps a hidden copy of each button
            main.locator("button:visible", has_text=label).first.wait_for()
        _settle(page)
        _check_fits(page, width)
        if width == 390:  # the sidebar is collapsed: the name is asked on the page
            sidebar = page.get_by_test_id("stSidebar").bounding_box()
            assert sidebar is None or sidebar["width"] == 0 or sidebar["x"] + sidebar["width"] <= 1
            name = main.get_by_role("textbox", name="Your name, stored with every verdict")
            name.fill("Dr. Phone")
            name.press("Enter")
            main.locator("button:enabled:visible", has_text="Confirmed").first.wait_for()
            _settle(page)
        answer = main.get_by_text("The statement inside its answer").first.bounding_box()
        assert answer is not None
        for label in VERDICTS:
            button = main.locator("button:visible", has_text=label).first
            assert button.is_visible(), label
            box = button.bounding_box()
            assert box is not None
            assert box["x"] >= 0, (label, box)
            assert box["x"] + box["width"] <= width + 1, (label, box)
            assert box["y"] < answer["y"], f"{label} below the answer"  # before the long text
        enabled = main.locator("button:enabled:visible", has_text="Confirmed").count()
        assert enabled == (1 if width == 390 else 0)  # a name given on the phone only
        _check_fits(page, width)
        _screenshot(page, tmp_path / f"review_{width}.png")
    finally:
        ctx.close()
