"""Without a browser: every plot of the report carries its size, a unit on each axis title and
its reference lines' labels in the legend (never as text on the plot); tick labels are spaced so
they cannot collide; the drill-down's evidence is named in words and its summary does not repeat
the chunk id."""

from __future__ import annotations

import re
from itertools import pairwise
from typing import Any

import pytest

from recallwatch.acceptance.model import GateResult
from recallwatch.report.html import evidence_label, summary_after_id, to_html
from recallwatch.report.plots import FONT_PX, bars, fit
from tests.report import helpers as H

UNIT = re.compile(r"\(.*\S.*\)")


@pytest.fixture(scope="module")
def stop() -> GateResult:
    result = H.gate_run(H.golden_set(), depth=4)
    assert result.verdict == "STOP"
    return result


@pytest.fixture(scope="module")
def doc(stop: GateResult) -> Any:
    return H.parse(to_html(stop))


def test_every_plot_has_its_size_units_and_legend(doc: Any, stop: GateResult) -> None:
    figures = doc.cssselect("figure.chart")
    assert len(figures) == 3
    for f in figures:
        svg = f.cssselect("svg.plot")[0]
        box = svg.get("viewbox") or svg.get("viewBox")  # (the HTML parser lowercases it)
        assert svg.get("width") == box.split()[2]  # drawn at its own size
        x_title = H.text(f.cssselect(".x-title")[0])
        assert UNIT.search(x_title), x_title
        ys = f.cssselect(".y-title")
        ticks = [H.text(t) for t in f.cssselect("text.tick[text-anchor=end]")]
        if all(re.fullmatch(r"[-0-9.,]+", t) for t in ticks):  # a numeric y axis
            assert ys and UNIT.search(H.text(ys[0]))
        assert not f.cssselect("svg .rule-label")  # no label drawn on the plot
    floor = float(stop.policy.get("recall_floor", 0.9))
    keys = [H.text(k) for k in doc.cssselect("figure.chart .legend .rule-key")]
    k = max(q.top_k for q in stop.queries)
    assert keys == [f"recall floor {floor:g}", f"K = {k}"]


def test_tick_labels_are_spaced_apart() -> None:
    labels = [f"label number {i}" for i in range(30)]
    chart = bars("t", labels, [("good", [1.0] * 30)], x_label="x (count)", y_label="y (count)")
    shown = sorted(t.pos for t in chart.x_ticks)
    widest = max(len(t.label) for t in chart.x_ticks) * FONT_PX * 0.6
    assert 1 < len(shown) < 30
    assert min(b - a for a, b in pairwise(shown)) > widest


def test_fit_cuts_a_long_label() -> None:
    assert fit("short", 200) == "short"
    cut = fit("x" * 100, 100)
    assert cut.endswith("…") and len(cut) < 20


def test_evidence_names_and_summaries(stop: GateResult) -> None:
    assert evidence_label("kth_score") == "score of the K-th result"
    assert evidence_label("gap_to_kth") == "gap to the K-th result"
    assert evidence_label("outranked_by") == "outranked by"
    assert evidence_label("some_new_field") == "some new field"
    diagnosed = [d for q in stop.failing() for d in q.diagnosis if d.chunk_id]
    assert diagnosed
    for d in diagnosed:
        rest = summary_after_id(d.summary, d.chunk_id or "")
        assert d.chunk_id not in rest and rest[0].isupper()
    assert summary_after_id("c7 (at rank 12): table whose …", "c7") == "At rank 12: table whose …"
    assert summary_after_id("nothing to cut", "c7") == "nothing to cut"


def test_drill_down_has_no_internal_names_or_leading_commas(doc: Any) -> None:
    for d in doc.cssselect("details.query"):
        text = d.text_content()
        for internal in ("kth_score", "gap_to_kth", "outranked_by"):
            assert internal not in text
        for dd in d.cssselect("dl.kv dd"):  # a list is one item a line, never comma-joined
            assert not (dd.text or "").lstrip().startswith(",")
