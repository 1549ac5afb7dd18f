"""The monitor page, one section per store: cards that name their store and carry units, the
gate's task quality per store, drift over time with its alarm threshold, each store's own
timeline, and steady settings shown as values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recallwatch.history import History
from recallwatch.web import create_app
from recallwatch.web._monitor import NO_STORE
from tests.report import helpers as H
from tests.web import monitor_site as S

UNIT = r"(ms|%|B|KiB|MiB|GiB|rows|queries/s|MB|clicks/search| s| min| h| d|/ 100|×)$"


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    db = tmp_path_factory.mktemp("monitor") / "h.db"
    S.build(db)
    r = TestClient(base_url="http://127.0.0.1", app=create_app(db)).get("/monitor")
    assert r.status_code == 200, r.text
    return db, H.parse(r.text)


def section(doc: Any, name: str) -> Any:
    (s,) = [s for s in doc.cssselect("section.store") if s.get("data-store") == name]
    return s


def test_one_section_per_store_and_every_card_names_it(page: tuple[Path, Any]) -> None:
    _, doc = page
    assert [s.get("data-store") for s in doc.cssselect("section.store")] == [
        S.STORES[1], S.STORES[0], NO_STORE]  # the store with the newest record first
    for s in doc.cssselect("section.store"):
        cards = s.cssselect(".cards.indicators > .card")
        assert len(cards) == 10  # eight groups, task quality, error budget: an even grid
        named = "none recorded" if s.get("data-store") == NO_STORE else s.get("data-store")
        for card in cards:
            assert H.text(card.cssselect(".store")[0]) == f"store: {named}"
    # one record of a kind: its cards draw no single-dot trend
    alone = section(doc, NO_STORE).cssselect(".card[data-group=speed]")[0]
    assert not alone.cssselect("svg") and "no trend yet" in H.text(alone)


def test_every_figure_on_a_card_carries_its_unit(page: tuple[Path, Any]) -> None:
    import re

    _, doc = page
    values = [H.text(v) for v in doc.cssselect(".card .v")]
    shown = [v for v in values if v != "—"]
    assert len(shown) >= 15
    assert [v for v in shown if not re.search(UNIT, v)] == []
    first = section(doc, S.STORES[0])
    cards = {c.get("data-group"): H.text(c.cssselect(".v")[0])
             for c in first.cssselect(".card")}
    last = S.monitor_payload(S.DAYS - 1, 0, live=True)
    assert cards["quality"] == f"{last['recall']:.1%}"
    assert cards["speed"] == "350 ms"  # real traffic's p99 wins over the probes'
    assert cards["index health"] == "5 d 0 h"
    limits = [H.text(x) for x in first.cssselect(".card .limit")]
    assert "min 95.0%" in limits  # the recall floor, as a share like the value


def test_task_quality_card_is_the_gates_latest_on_each_store(page: tuple[Path, Any]) -> None:
    db, doc = page
    with History(db) as h:
        runs = {s: h.latest_on_store(s) for s in S.STORES}
    for store, run in runs.items():
        assert run is not None
        (card,) = section(doc, store).cssselect(".card.quality")
        assert H.text(card.cssselect(".v")[0]) == f"{run.mean_quality:.1f} / 100"
        assert H.text(card.cssselect(".badge.verdict")[0]) == run.verdict
        assert card.cssselect("a")[0].get("href").endswith(run.run_id)
    assert len({run.run_id for run in runs.values() if run is not None}) == 2
    (none,) = section(doc, NO_STORE).cssselect(".card.quality")
    assert none.cssselect(".missing")


def test_drift_over_time_per_store_with_the_alarm_threshold(page: tuple[Path, Any]) -> None:
    _, doc = page
    for store in S.STORES:
        figures = section(doc, store).cssselect(".charts.drift figure")
        assert [H.text(f.cssselect("figcaption")[0]) for f in figures] == [
            "Data drift: two-sample test p-value (MMD², permutations)",
            "Data drift: mean-embedding cosine distance, new rows vs trained rows"]
        p_chart = figures[0]
        # one point per monitor run of this store, never the other store's
        tips = [H.text(t) for t in p_chart.cssselect("circle title")]
        want = [f"p-value: 2026-11-{10 + d:02d}T0{S.STORES.index(store)}:00:00+00:00: "
                f"p = {S.drift(d, S.STORES.index(store))['test']['p_value']:.4f}"
                for d in range(S.DAYS)]
        assert tips == want
        assert H.text(p_chart.cssselect(".legend .rule-key")[0]) == "alarm under p = 0.01"
    assert not section(doc, NO_STORE).cssselect(".charts.drift")


def test_timeline_and_live_traffic_stay_with_their_store(page: tuple[Path, Any]) -> None:
    _, doc = page
    second = section(doc, S.STORES[1])
    assert [H.text(r.cssselect("td")[1]) for r in second.cssselect("table.monitor-events tr")
            if r.cssselect("td")] == ["promote → version 3"]
    assert not section(doc, S.STORES[0]).cssselect("table.monitor-events")
    assert section(doc, S.STORES[0]).cssselect(".charts.live figure")
    assert not second.cssselect(".charts.live")


def test_steady_settings_are_values_not_single_dot_charts(page: tuple[Path, Any]) -> None:
    _, doc = page
    first = section(doc, S.STORES[0])
    steady = {H.text(d.cssselect("dt")[0]): H.text(d.cssselect("dd")[0])
              for d in first.cssselect("dl.steady div")}
    assert steady["thresholds.max_latency_p99_ms"] == "50 ms"
    assert steady["k"] == "10" and steady["resources.dimensions"] == "16 dimensions"
    assert steady["thresholds.min_coverage"] == "50.0%" and steady["floor"] == "95.0%"
    captions = [H.text(c) for c in first.cssselect("figcaption")]
    assert not [c for c in captions if c.startswith(("k ", "floor", "thresholds."))]
    assert "latency_ms.p99 (ms)" in captions
    # a record kind with a single record: nothing charted, everything a value
    alone = section(doc, NO_STORE)
    assert not alone.cssselect("figure.chart")
    assert {H.text(d.cssselect("dd")[0]) for d in alone.cssselect("dl.steady div")} == {
        "900 queries/s", "512 MB"}


def test_drift_chart_from_real_monitor_runs(tmp_path: Path) -> None:
    """Two real monitor runs on a LanceDB index — rows like the trained ones, then rows shifted
    away — drawn as the store's p-value line, one point per run, under the policy's threshold."""
    from datetime import UTC, datetime

    import numpy as np

    from recallwatch.ops.monitor import run_monitor
    from recallwatch.ops.probes import ProbeSet
    from recallwatch.stores.base import Chunk
    from recallwatch.web._monitor import drift_charts
    from tests.ops.test_monitor import small_store

    store, data = small_store(tmp_path / "s")
    probes = ProbeSet("p", "1", vectors=data.queries)
    rng = np.random.default_rng(0)
    batches = [data.base[:150] + 0.001 * rng.normal(size=(150, 16)),
               data.base[150:450] + 1.0 + 0.5 * rng.normal(size=(300, 16))]
    reports = []
    with History(tmp_path / "h.db") as h:
        for day, batch in enumerate(batches):
            start = 10_000 * (day + 1)
            store.upsert([Chunk(id=f"n{start + i}", text="") for i in range(len(batch))],
                         batch.astype(np.float32))
            reports.append(run_monitor(store, probes, floor=0.0, drift_alarm_p=0.01, history=h,
                                       now=datetime(2026, 11, 10 + day, tzinfo=UTC)))
        records = h.monitor_runs()
    p_values = [r.drift.test.p_value for r in reports if r.drift and r.drift.test]
    assert len(p_values) == 2 and p_values[1] < 0.01 <= p_values[0]
    assert reports[1].alarm and not reports[0].alarm
    p_chart, distance = drift_charts(records)
    assert [d.tip for d in p_chart.dots] == [
        f"p-value: 2026-11-{10 + i}T00:00:00+00:00: p = {p:.4f}" for i, p in enumerate(p_values)]
    assert [r.label for r in p_chart.rules] == ["alarm under p = 0.01"]
    assert [d.tip.rsplit(": ", 1)[1] for d in distance.dots] == [
        f"{r.drift.mean_cosine_distance:.4f}" for r in reports if r.drift]
