"""The trends page in a real headless Chromium, on runs recorded seconds apart over twelve
domains: every x label names one run (no two alike: runs in one minute get their seconds), every
series of a chart has its own look (twelve colours, then dashed lines), and the page passes the
layout checks of every dashboard page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recallwatch.formats.golden import GoldenSet
from recallwatch.web import create_app
from tests.browser import CHROMIUM, served
from tests.report import helpers as H
from tests.web.test_browser import Watch, browser
from tests.web.test_pages_layout import check_layout

__all__ = ["browser"]  # the fixture

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]

DOMAINS = 14  # more than the twelve colours


@pytest.fixture(scope="module")
def trends_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    db = tmp_path_factory.mktemp("trends") / "history.db"
    golden = GoldenSet.from_dict({"name": "modules", "version": "1", "top_k": 10, "queries": [
        {"id": f"q{i}", "text": f"question {i}", "expected": [f"a{i}", f"b{i}"],
         "domain": f"module{i}"} for i in range(DOMAINS)]})
    H.history(db, [0, 3, 6, 9], golden)  # recorded within a few seconds of each other
    with served(create_app(db)) as url:
        yield url + "/trends"


def test_every_run_has_its_own_x_label_and_every_series_its_own_look(
        browser: Any, trends_url: str, tmp_path: Path) -> None:
    watch = Watch(browser)
    try:
        page = watch.page
        page.goto(trends_url)
        figures = page.locator("figure.chart")
        assert figures.count() == 6
        for i in range(figures.count()):
            fig = figures.nth(i)
            ticks = fig.locator("svg > g > text.tick[text-anchor=middle]").all_text_contents()
            assert ticks and len(set(ticks)) == len(ticks), ticks
            paths = fig.locator("svg path").evaluate_all("ps => ps.map(p => p.className.baseVal)")
            assert len(set(paths)) == len(paths), paths
            strokes = fig.locator("svg path").evaluate_all(
                "ps => ps.map(p => [getComputedStyle(p).stroke,"
                " getComputedStyle(p).strokeDasharray].join(' '))")
            assert len(set(strokes)) == len(strokes), strokes
        by_domain = figures.filter(has_text="Mean quality by domain")
        swatches = by_domain.locator(".legend i").evaluate_all(
            "is => is.map(i => getComputedStyle(i).backgroundColor)")
        assert len(swatches) == DOMAINS and len(set(swatches[:12])) == 12
        check_layout(page, tmp_path / "trends.png")
        watch.assert_clean()
    finally:
        watch.close()
