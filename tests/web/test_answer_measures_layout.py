"""The run list, the trends and the monitor page with answer measures, in a real headless
Chromium: the extra columns, the answers chart and the answers card pass the layout checks of
every dashboard page (no text over text, units on the axes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recallwatch.web import create_app
from tests.browser import CHROMIUM, served
from tests.web.test_answer_measures import history
from tests.web.test_browser import Watch, browser
from tests.web.test_pages_layout import check_layout

__all__ = ["browser", "history"]  # the fixtures

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason=f"{CHROMIUM} is not installed (run `make browser`)"),
]


def test_the_pages_with_answer_measures_are_laid_out_cleanly(
        browser: Any, history: Path, tmp_path: Path) -> None:
    watch = Watch(browser)
    try:
        with served(create_app(history)) as url:
            for name, path in (("runs", "/"), ("trends", "/trends"), ("monitor", "/monitor")):
                watch.page.goto(url + path)
                measured = check_layout(watch.page, tmp_path / f"{name}.png")
                if name == "trends":
                    assert any(f["title"].startswith("Answers:") for f in measured["figures"])
        watch.assert_clean()
    finally:
        watch.close()
