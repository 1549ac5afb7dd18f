"""The geometry behind the plots: run labels that never repeat, series that never share a look,
and points named where the names cover no other name and no other point."""

from __future__ import annotations

from itertools import combinations

from recallwatch.report.plots import (
    _CHAR_PX,
    FONT_PX,
    PALETTE,
    Series,
    lines,
    scatter,
    series_classes,
    time_ticks,
)


def test_runs_in_one_minute_get_their_seconds_and_runs_in_one_second_a_number() -> None:
    times = ["2026-11-30T17:10:05+00:00", "2026-11-30T17:10:59+00:00",
             "2026-11-30T17:12:00+00:00", "2026-11-30T17:13:07+00:00",
             "2026-11-30T17:13:07+00:00"]
    assert time_ticks(times) == [(0.0, "11-30 17:10:05"), (1.0, "11-30 17:10:59"),
                                 (2.0, "11-30 17:12"), (3.0, "11-30 17:13:07"),
                                 (4.0, "11-30 17:13:07 #2")]


def test_no_two_series_of_a_chart_look_alike() -> None:
    many = [Series(f"domain {i}", [0, 1], [i, i + 1]) for i in range(30)]
    classes = series_classes(many)
    assert len(set(classes)) == 30
    assert len({c.split()[0] for c in classes[:PALETTE]}) == PALETTE  # twelve colours first
    # a series that names its colour keeps it, and the others avoid it
    named = [Series("agreed", [0], [1], cls="c2"), Series("a", [0], [1]),
             Series("b", [0], [1]), Series("c", [0], [1])]
    assert series_classes(named) == ["c2", "c0", "c1", "c3"]
    chart = lines("t", many[:3], x_ticks=time_ticks(["2026-01-01T00:00:00"] * 2))
    assert [cls for cls, _ in chart.legend] == ["c0", "c1", "c2"]
    assert [t.label for t in chart.x_ticks] == ["01-01 00:00:00", "01-01 00:00:00 #2"]


def _box(d: object) -> tuple[float, float, float, float]:
    x, y, anchor, text = d.lx, d.ly, d.anchor, d.label  # type: ignore[attr-defined]
    w = len(text) * _CHAR_PX
    x0 = x if anchor == "start" else x - w
    return (x0, y - FONT_PX + 2, x0 + w, y + 2)


def test_point_names_cover_no_other_name_and_no_point() -> None:
    # seven variants, five of them at the same quality and close latencies, two on one spot
    names = ["dense-baseline", "bm25-keyword-search", "paragraph-chunks-2000",
             "hybrid-rrf-dense-plus-bm25", "dense-with-reranker-top50", "sentences-200-chars",
             "size-400-overlap-80"]
    x = [43.6, 1.3, 25.6, 15.1, 9.3, 19.3, 19.3]
    y = [100, 100, 100, 100, 100, 85.7, 85.7]
    chart = scatter("t", [Series("variants", x, y, labels=names)], x_label="p99 (ms)")
    dots = chart.dots
    assert all(d.label for d in dots)
    # each point named (a long name cut with "…"; the tooltip holds it whole)
    assert all(n.startswith(d.label.rstrip("…")) for n, d in zip(names, dots, strict=True))
    boxes = [_box(d) for d in dots]
    for a, b in combinations(boxes, 2):
        assert not (a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1)
    for i, box in enumerate(boxes):
        for j, d in enumerate(dots):
            if i != j:
                assert not (box[0] < d.x + 3 and d.x - 3 < box[2] and box[1] < d.y + 3
                            and d.y - 3 < box[3]), (dots[i].label, dots[j].label)
