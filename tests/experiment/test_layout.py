"""The experiment's report at 1280 px in a real headless Chromium, with seven variants named as
people name them: the table fits the page (its last column, dominated by, on screen), each
variant's name on at most two lines, every point of the quality-against-cost plot named, and no
name drawn over another name or over a point (the layout checks every dashboard page passes)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser import needs_chromium, opened
from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan
from tests.web.test_pages_layout import check_layout

pytestmark = [
    pytest.mark.browser,
    needs_chromium,
]

# keyword search only: seven variants without a model to embed with
NAMES = ["bm25-keyword-baseline", "sentences-200-chars", "sentences-400-chars",
         "size-400-overlap-80", "size-800-overlap-160", "paragraph-chunks-2000",
         "paragraph-chunks-800-with-overlap"]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("layout")
    small_kb(folder)
    write_plan(folder, f"{{name: {NAMES[0]}, retrieval: bm25}}", [
        f"{{name: {NAMES[1]}, chunking: {{method: sentences, size: 200}}}}",
        f"{{name: {NAMES[2]}, chunking: {{method: sentences, size: 400}}}}",
        f"{{name: {NAMES[3]}, chunking: {{method: size, size: 400, overlap: 80}}}}",
        f"{{name: {NAMES[4]}, chunking: {{method: size, size: 800, overlap: 160}}}}",
        f"{{name: {NAMES[5]}, chunking: {{method: paragraph, size: 2000}}}}",
        f"{{name: {NAMES[6]}, chunking: {{method: size, size: 800, overlap: 100}}}}"])
    code, _, stderr = cli("experiment", str(folder / "plan.yaml"), "--out-dir", str(folder / "out"))
    assert code == 0, stderr
    return folder / "out" / "report.html"


@pytest.fixture(scope="module")
def page(report: Path) -> Iterator[Any]:
    with opened(report.as_uri()) as pg:
        yield pg


def test_the_table_fits_1280_px_with_its_last_column_on_screen(page: Any) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    table = page.locator("table.experiment")
    assert page.evaluate("(t) => t.scrollWidth <= t.parentElement.clientWidth",
                         table.element_handle())
    last = table.locator("thead th").last
    assert last.inner_text().replace("\n", " ") == "dominated by"
    box = last.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280


def test_each_name_holds_on_at_most_two_lines(page: Any) -> None:
    cells = page.locator("table.experiment tbody td:first-child")
    assert cells.count() == len(NAMES)
    line = page.evaluate("(c) => parseFloat(getComputedStyle(c).lineHeight)",
                         cells.first.element_handle())
    for i in range(cells.count()):
        # the name's own lines (its row may be taller: another column can wrap further)
        height = page.evaluate("(c) => { const r = document.createRange(); "
                               "r.selectNodeContents(c); return r.getBoundingClientRect().height }",
                               cells.nth(i).element_handle())
        assert height <= 2 * line + 2, cells.nth(i).inner_text()
    assert {c.split(" (")[0] for c in cells.all_inner_texts()} == set(NAMES)


def test_every_point_is_named_and_nothing_is_drawn_over_anything(page: Any,
                                                                 tmp_path: Path) -> None:
    labels = page.locator("figure.chart svg text.dot-label").all_text_contents()
    assert len(labels) == page.locator("figure.chart svg circle").count() == len(NAMES)
    assert all(any(n.startswith(lab.rstrip("…")) for n in NAMES) for lab in labels)
    check_layout(page, tmp_path / "experiment.png")
