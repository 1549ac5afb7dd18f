"""Every page the dashboard and the HTML report show, laid out in a real headless Chromium
(Debian's ``chromium``): no text drawn over other text or over a bar, every figure's axes
titled with their unit, no text under 11 px, and a query's drill-down in plain words. A
screenshot of each page goes to the test's temporary directory."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from recallwatch.report.html import to_html
from tests.web.test_browser import CHROMIUM, Site, Watch, base_url, browser

__all__ = ["base_url", "browser"]  # the fixtures

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]

MIN_FONT_PX = 11

# Measures the page as drawn: the boxes of every visible piece of text (a text node's lines, an
# SVG <text>), the bars and points of the plots, and each text's font size on screen.
LAYOUT_JS = r"""
() => {
  const boxes = [], small = [], marks = [];
  const skip = new Set(["SCRIPT", "STYLE", "TITLE", "OPTION", "SELECT", "TEXTAREA"]);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  let id = 0;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const el = node.parentElement;
    if (!el || skip.has(el.tagName.toUpperCase()) || !node.textContent.trim()) continue;
    if (el.closest("title, script, style")) continue;
    const style = getComputedStyle(el);
    if (style.visibility === "hidden" || style.display === "none") continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const rects = [...range.getClientRects()].filter(r => r.width > 0.5 && r.height > 0.5);
    if (!rects.length) continue;
    const svg = el.closest("svg");
    const scale = svg ? svg.getScreenCTM().a : 1;
    const px = parseFloat(style.fontSize) * scale;
    const text = node.textContent.trim().slice(0, 60);
    if (px < 11) small.push([text, px]);
    id += 1;
    for (const r of rects) boxes.push({id, text, svg: !!svg,
      x1: r.left, y1: r.top, x2: r.right, y2: r.bottom});
  }
  for (const m of document.querySelectorAll("svg.plot rect, svg.plot circle")) {
    const r = m.getBoundingClientRect();
    if (r.width > 0 && r.height > 0) marks.push({x1: r.left, y1: r.top, x2: r.right, y2: r.bottom,
      svg: [...document.querySelectorAll("svg.plot")].indexOf(m.closest("svg"))});
  }
  const svgTexts = [...document.querySelectorAll("svg.plot text")].map(t => {
    const r = t.getBoundingClientRect();
    return {text: t.textContent, x1: r.left, y1: r.top, x2: r.right, y2: r.bottom,
            svg: [...document.querySelectorAll("svg.plot")].indexOf(t.closest("svg"))};
  });
  const figures = [...document.querySelectorAll("figure.chart")].filter(f => f.querySelector("svg"))
    .map(f => ({title: f.querySelector("figcaption").textContent,
      x: (f.querySelector(".x-title") || {}).textContent || "",
      y: (f.querySelector(".y-title") || {}).textContent || "",
      yTicks: [...f.querySelectorAll("svg > g > text.tick[text-anchor=end]")]
        .map(t => t.textContent)}));
  return {boxes, small, marks, svgTexts, figures};
}
"""
TOLERANCE = 1.5  # pixels two boxes may share (anti-aliasing, touching lines)


def _meet(a: dict[str, float], b: dict[str, float]) -> bool:
    return (min(a["x2"], b["x2"]) - max(a["x1"], b["x1"]) > TOLERANCE
            and min(a["y2"], b["y2"]) - max(a["y1"], b["y1"]) > TOLERANCE)


def overlaps(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pairs of different texts whose boxes intersect (a sweep over boxes sorted by top)."""
    out = []
    boxes = sorted(boxes, key=lambda b: b["y1"])
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if b["y1"] >= a["y2"] - TOLERANCE:
                break
            if a["id"] != b["id"] and _meet(a, b):
                out.append((a["text"], b["text"]))
    return out


UNIT = re.compile(r"\(.*\S.*\)")


def check_layout(page: Any, shot: Path) -> dict[str, Any]:
    """Assert the page's layout is clean; save its screenshot; return what was measured."""
    page.screenshot(path=str(shot), full_page=True, timeout=90_000)
    assert shot.stat().st_size > 5_000
    m = page.evaluate(LAYOUT_JS)
    assert m["boxes"], "no text measured"
    assert overlaps(m["boxes"]) == [], f"text drawn over text on {shot.name}"
    assert m["small"] == [], f"text under {MIN_FONT_PX} px on {shot.name}"
    # no label of a plot over a bar or a point of the same plot
    covered = [t["text"] for t in m["svgTexts"] for k in m["marks"]
               if k["svg"] == t["svg"] and _meet(t, k)]
    assert covered == [], f"plot text over a bar or point on {shot.name}"
    for f in m["figures"]:
        assert UNIT.search(f["x"]), f"no unit on the x axis of {f['title']!r}: {f['x']!r}"
        if f["yTicks"] and all(re.fullmatch(r"[-+0-9.,kMG]+", t) for t in f["yTicks"]):
            assert UNIT.search(f["y"]), f"no unit on the y axis of {f['title']!r}: {f['y']!r}"
    return m


@pytest.fixture
def watch(browser: Any) -> Any:
    w = Watch(browser)
    yield w
    w.close()


def test_dashboard_pages_are_laid_out_cleanly(watch: Watch, base_url: str, site: Site,
                                              tmp_path: Path) -> None:
    latest = site[2][-1]
    failing = latest.failing()[0]
    pages = {
        "runs": "/",
        "runs-paged": "/?size=2&page=2",
        "run": f"/runs/{quote(latest.run_id, safe='')}",
        "query": f"/runs/{quote(latest.run_id, safe='')}/queries/{quote(failing.id, safe='')}",
        "trends": "/trends",
        "funnel": "/funnel",
        "bench": "/bench",
    }
    figures = 0
    for name, url in pages.items():
        watch.page.goto(base_url + url)
        if name == "run":  # every drill-down open, as a reader would read them
            watch.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        figures += len(check_layout(watch.page, tmp_path / f"{name}.png")["figures"])
    assert figures >= 3 + 3 + 1 + 1  # the run's, the trends', the funnel's and the frontier
    watch.assert_clean()


def test_report_file_is_laid_out_cleanly(watch: Watch, site: Site, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(to_html(site[2][-1]), encoding="utf-8")
    watch.page.goto(path.as_uri())
    watch.page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
    assert len(check_layout(watch.page, tmp_path / "report.png")["figures"]) == 3
    watch.assert_clean()


def test_drill_down_reads_as_plain_words(watch: Watch, base_url: str, site: Site) -> None:
    """The drill-down names what it shows in words, never starts a line with a comma, and
    prints a diagnosed chunk's id once before its text."""
    latest = site[2][-1]
    failing = next(q for q in latest.failing() if any(d.chunk_id for d in q.diagnosis))
    watch.page.goto(f"{base_url}/runs/{quote(latest.run_id, safe='')}/queries/"
                    f"{quote(failing.id, safe='')}")
    body = watch.page.locator("details.query").inner_text()
    lines = [ln.strip() for ln in body.splitlines() if ln.strip()]
    assert not [ln for ln in lines if ln.startswith(",")]
    for internal in ("kth_score", "gap_to_kth", "outranked_by", "below_threshold"):
        assert internal not in body
    assert "gap to the K-th result" in body and "outranked by" in body
    diags = watch.page.locator(".diag")
    for i, d in enumerate(failing.diagnosis):
        if d.chunk_id is None:
            continue
        head = diags.nth(i)
        assert head.locator("b").first.inner_text() == d.title
        shown = head.locator(":scope > code.chunk-id").inner_text()
        assert shown == d.chunk_id
        summary = head.locator(".diag-summary").inner_text()
        assert d.chunk_id not in summary  # printed once, before its text
        # the rest of the summary, "(at rank 12): …" read as "At rank 12: …"
        rest = d.summary.removeprefix(d.chunk_id).strip()
        assert summary.lower() == rest.replace("(", "", 1).replace("):", ":", 1).lower()
    watch.assert_clean()


def test_judging_page_shows_ids_as_written(watch: Watch, tmp_path: Path) -> None:
    """Ids are case-sensitive: the judging page shows the query's and the chunk's exactly as
    the queue writes them (its headings are in capitals; the ids in them are not)."""
    from recallwatch.formats.judging import QueueItem, write_queue
    from recallwatch.web.judge import create_judge_app
    from tests.browser import served

    queue = tmp_path / "queue.jsonl"
    write_queue(queue, [QueueItem("Q-json.Decode", "How do I parse JSON?",
                                  "chunk json.JSONDecoder", "Simple JSON decoder.", {}, {})])
    token = "Tok3n-for.the~judging_0123"
    app = create_judge_app(queue, tmp_path / "j.jsonl", judge="ana", token=token)
    with served(app) as url:
        watch.page.goto(f"{url}/?token={token}")
        watch.page.wait_for_selector('body[data-ready="1"]', state="attached")
        assert watch.page.inner_text("#chunk-id") == "chunk json.JSONDecoder"
        assert watch.page.inner_text("#query-id") == "Q-json.Decode"
        assert watch.page.inner_text("section h2").startswith("QUERY ")  # the heading's capitals
    watch.assert_clean()
