"""The experiment's report in a real headless Chromium: the frontier plot drawn (one point per
variant, the frontier joined), the table shown, a hostile variant name shown as text and never run,
and nothing blocked or failing in the page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import needs_chromium, opened
from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan

HOSTILE = '<img src=x onerror="window.ran=1">'

pytestmark = [
    pytest.mark.browser,
    needs_chromium,
]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("report")
    small_kb(folder)
    write_plan(folder, "{name: bm25, retrieval: bm25}", [
        "{name: sentences, chunking: {method: sentences, size: 200}}",
        "{name: size, chunking: {method: size, size: 400, overlap: 80}}",
        f"{{name: '{HOSTILE}', chunking: {{method: paragraph, size: 2000}}}}"])
    code, _, stderr = cli("experiment", str(folder / "plan.yaml"), "--out-dir", str(folder / "out"))
    assert code == 0, stderr
    return folder / "out" / "report.html"


@pytest.fixture(scope="module")
def page(report: Path) -> Iterator[Any]:
    with opened(report.as_uri()) as pg:
        yield pg


def test_the_frontier_plot_is_drawn(page: Any) -> None:
    svg = page.locator("figure.chart svg.plot")
    assert svg.count() == 1 and svg.is_visible()
    assert page.locator("figure.chart svg circle").count() == 4  # one point per variant
    on_frontier = sum("on the front" in t
                      for t in page.locator("ul.frontier li").all_inner_texts())
    assert on_frontier >= 1
    # the frontier's points are joined by one line when there are two or more
    assert page.locator("figure.chart svg path").count() == (1 if on_frontier > 1 else 0)
    box = svg.bounding_box()
    assert box is not None and box["width"] > 300 and box["height"] > 100
    tips = page.locator("figure.chart svg circle title").all_text_contents()
    # which variants are on the frontier depends on the latencies measured: only the shape is
    # checked, and every variant has its point
    names = ["bm25", "sentences", "size", HOSTILE]
    assert sorted(t.split(": ")[1].removesuffix(" (winner)") for t in tips) == sorted(names)
    assert all(t.startswith(("on the front: ", "dominated: ")) for t in tips)
    assert page.errors == []


def test_the_table_and_a_hostile_name(page: Any) -> None:
    rows = page.locator("table.experiment tbody tr")
    assert rows.count() == 4
    assert page.locator("table.experiment tr.winner").count() == 1
    assert HOSTILE in page.locator("table.experiment").inner_text()
    assert page.evaluate("window.ran") is None
    assert page.locator("table.experiment img").count() == 0
