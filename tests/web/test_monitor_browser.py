"""The monitor page in a real headless Chromium (as tests/web/test_browser.py): on a history of
two stores with drift, real traffic, a promotion and gate runs, no two pieces of text overlap,
every figure on a card carries its unit, and no text is drawn smaller than 11 px."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from recallwatch.web import create_app
from tests.browser import ARGS, CHROMIUM, served
from tests.web import monitor_site as S
from tests.web.test_browser import ARTIFACTS
from tests.web.test_monitor_page import UNIT

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]

# Every piece of text on the page, in CSS pixels as drawn: HTML text nodes (one box per line
# of text) and SVG <text> (its font size scaled by how much the SVG is scaled).
_TEXT_BOXES = """() => {
  const out = [];
  const walker = document.createTreeWalker(document.querySelector('.monitor-page'),
                                           NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || el.closest('svg, style, script, title')) continue;
    const style = getComputedStyle(el);
    if (style.visibility === 'hidden' || style.display === 'none') continue;
    const range = document.createRange();
    range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      out.push({text: n.textContent.trim().slice(0, 40), size: parseFloat(style.fontSize),
                x: r.left, y: r.top, w: r.width, h: r.height, where: 'html'});
    }
  }
  for (const t of document.querySelectorAll('.monitor-page svg text')) {
    if (!t.textContent.trim()) continue;
    const svg = t.ownerSVGElement;
    const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
    const r = t.getBoundingClientRect();
    out.push({text: t.textContent.trim().slice(0, 40),
              size: parseFloat(getComputedStyle(t).fontSize) * scale,
              x: r.left, y: r.top, w: r.width, h: r.height, where: 'svg'});
  }
  return out;
}"""


def _overlaps(boxes: list[dict[str, Any]], slack: float = 1.0) -> list[tuple[str, str]]:
    """Pairs of text boxes whose areas intersect by more than ``slack`` px each way (lines of
    one paragraph touch; they do not cross)."""
    found = []
    ordered = sorted(boxes, key=lambda b: b["y"])
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            if b["y"] >= a["y"] + a["h"] - slack:
                break
            dx = min(a["x"] + a["w"], b["x"] + b["w"]) - max(a["x"], b["x"])
            dy = min(a["y"] + a["h"], b["y"] + b["h"]) - max(a["y"], b["y"])
            if dx > slack and dy > slack:
                found.append((a["text"], b["text"]))
    return found


@pytest.fixture(scope="module")
def base_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("monitor-browser") / "h.db"
    S.build(db)
    with served(create_app(db)) as url:
        yield url


@pytest.fixture(scope="module")
def page(base_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.goto(base_url + "/monitor")
        pg.wait_for_selector("section.store")
        ARTIFACTS.mkdir(exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "dashboard-monitor.png"), full_page=True)
        yield pg
        assert errors == []
        browser.close()


def test_no_text_overlaps_any_other(page: Any) -> None:
    boxes = page.evaluate(_TEXT_BOXES)
    assert len(boxes) > 200 and any(b["where"] == "svg" for b in boxes)
    assert _overlaps(boxes) == []
    assert (ARTIFACTS / "dashboard-monitor.png").stat().st_size > 20_000


def test_no_text_under_11_px(page: Any) -> None:
    small = [(b["text"], round(b["size"], 1)) for b in page.evaluate(_TEXT_BOXES)
             if b["size"] < 11.0]
    assert small == []


def test_every_card_figure_has_a_unit_and_the_grid_is_even(page: Any) -> None:
    values = [v.strip() for v in page.locator(".card .v").all_inner_texts()]
    assert [v for v in values if v != "—" and not re.search(UNIT, v)] == []
    for store in page.locator("section.store").all():
        cards = store.locator(".cards.indicators > .card")
        boxes = [cards.nth(i).bounding_box() for i in range(cards.count())]
        assert len({round(b["width"]) for b in boxes}) == 1  # one column width
        rows: dict[int, set[int]] = {}
        for b in boxes:
            rows.setdefault(round(b["y"]), set()).add(round(b["height"]))
        assert all(len(heights) == 1 for heights in rows.values())  # one height per row


def test_chart_axes_name_their_unit(page: Any) -> None:
    captions = page.locator(".monitor-page figcaption").all_inner_texts()
    assert captions and all(re.search(r"\(.+\)|p-value|distance", c) for c in captions)


def test_the_overlap_check_sees_an_overlap(page: Any) -> None:
    """The check has teeth: a label planted over a card's value is found, then removed."""
    page.evaluate("""() => {
      const v = document.querySelector('.monitor-page .card .v');
      const r = v.getBoundingClientRect();
      const s = document.createElement('span');
      s.id = 'planted'; s.textContent = 'planted label';
      s.style.cssText = `position:absolute; left:${r.left + window.scrollX}px;
                         top:${r.top + window.scrollY}px; font-size:14px`;
      document.querySelector('.monitor-page').appendChild(s);
    }""")
    try:
        found = _overlaps(page.evaluate(_TEXT_BOXES))
        assert found and all("planted label" in pair for pair in found)
    finally:
        page.evaluate("() => document.getElementById('planted').remove()")
