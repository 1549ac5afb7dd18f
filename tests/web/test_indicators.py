"""The monitor page's indicator groups (trend and status against the recorded threshold, live
signals from `monitor --log`) and the offline-to-online funnel page."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from lxml import html
from starlette.testclient import TestClient

from recallwatch.acceptance.cost import format_cost
from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.policy_limits import Limits
from recallwatch.history import History, record_gate_run
from recallwatch.ops.live_signals import LivePolicy, check_live
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.promote import promote
from recallwatch.web import create_app
from recallwatch.web._indicators import GROUPS
from tests.history.helpers import KB, LENIENT, gate_run, golden_set, kb
from tests.ops.test_monitor import small_store
from tests.report import helpers as H

__all__ = ["kb"]  # the fixture


def get(client: TestClient, url: str) -> Any:
    r = client.get(url)
    assert r.status_code == 200, r.text
    return html.fromstring(r.text)


def live(ctr: float, p99: float) -> dict[str, Any]:
    """A live section as `monitor --log` records it."""
    return check_live({"window": {"start": None, "end": None}, "impressions": 5000,
                       "no_result_rate": 0.02, "ctr": ctr, "abandonment": 0.4,
                       "latency_ms": {"p50": 30.0, "p95": 60.0, "p99": p99},
                       "latency_count": 5000}, LivePolicy(min_ctr=0.2)).to_dict()


def test_one_card_per_group_with_trend_and_status(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History(db) as h:
        for i, (recall, ctr) in enumerate(((0.99, 0.35), (0.97, 0.3), (0.93, 0.1))):
            h.record_monitor_run("monitor", {
                "recall": recall, "floor": 0.95, "latency_ms": {"p99": 3.0},
                "index_age_seconds": 3600.0 * i, "threshold": 0.41,
                "live": live(ctr, 100.0 + 1000 * i)},
                status="ok", created_at=f"2026-11-0{i + 1}T10:00:00+00:00")
    doc = get(TestClient(base_url="http://127.0.0.1", app=create_app(db)), "/monitor")
    cards = {c.get("data-group"): c for c in doc.cssselect(".indicators .card.indicator")}
    assert list(cards) == [g.name for g in GROUPS]

    def status(group: str) -> str:
        return H.text(cards[group].cssselect(".status")[0])

    # the latest record: recall 0.93 under the floor 0.95; real-traffic p99 2100 ms over the
    # default 2000; CTR 0.1 under the minimum 0.2 it was held to
    assert H.text(cards["quality"].cssselect(".v")[0]) == "93.0%" and status("quality") == "breach"
    assert H.text(cards["speed"].cssselect(".v")[0]) == "2100 ms" and status("speed") == "breach"
    assert "latency p99, real traffic" in H.text(cards["speed"])
    assert H.text(cards["user signals"].cssselect(".v")[0]) == "0.1 clicks/search"
    assert status("user signals") == "breach"
    assert "min 0.2 clicks/search" in H.text(cards["user signals"])
    assert status("index health") == "no threshold recorded"
    # the calibrated no-result threshold (a setting) is not taken for coverage: the live
    # no-result rate is
    assert H.text(cards["coverage"].cssselect(".v")[0]) == "2.0%" and status("coverage") == "ok"
    for group in ("resources", "cost"):
        assert cards[group].cssselect(".missing")
    # the trend: one sparkline per recorded group, its last point the latest value
    spark = cards["quality"].cssselect("svg.spark")[0]
    assert len(spark.cssselect("path")) == 1 and len(spark.cssselect("line.rule")) == 1
    assert H.text(spark.cssselect("circle title")[0]) == "2026-11-03T10:00:00+00:00: 93.0%"
    points = spark.cssselect("path")[0].get("d").removeprefix("M").split()
    assert len(points) == 3
    ys = [float(p.split(",")[1]) for p in points]
    assert ys[0] < ys[1] < ys[2]  # recall falls: the line goes down (SVG y grows downwards)
    # the live signals over time, one chart per kind of figure, the threshold drawn
    figures = doc.cssselect(".charts.live figure")
    assert [H.text(f.cssselect("figcaption")[0]) for f in figures] == [
        "Real traffic: no-result rate and abandonment (share of searches)",
        "Real traffic: click-through rate (clicked results per search)",
        "Real traffic: latency (ms)"]
    latency = figures[2]
    assert len(latency.cssselect("path")) == 3  # p50, p95, p99, three runs each
    assert H.text(latency.cssselect(".legend .rule-key")[0]) == "max_latency_p99_ms 2000"
    tips = [H.text(t) for t in latency.cssselect("circle title")]
    assert "p99: 2026-11-03T10:00:00+00:00: 2100" in tips


def test_funnel_page(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    g = golden_set(4)
    before = record_gate_run(gate_run(g, {"q00": {"q00_b": 15}}), db)
    after = record_gate_run(gate_run(g), db)
    with History(db) as h:
        for delta, verdict, agreement, reading in (
                (0.01, "better", "agreed", "offline gain confirmed online"),
                (-0.002, "no difference", "disagreed", "offline gain not seen <b>online</b>")):
            h.record_online_readout({
                "change_run": after.run_id, "promote_id": None, "offline_metric": "ndcg",
                "offline_baseline": before.run_id, "offline_delta": 0.05, "online_metric": "ctr",
                "online_delta": delta, "online_ci_low": delta - 0.01,
                "online_ci_high": delta + 0.01, "online_verdict": verdict,
                "agreement": agreement, "payload": {"reading": reading}})
    doc = get(TestClient(base_url="http://127.0.0.1", app=create_app(db)), "/funnel")
    rows = doc.cssselect("table.funnel tbody tr")
    assert [r.get("class") for r in rows] == ["disagreed", "agreed"]  # newest first
    assert H.text(rows[0].cssselect("td")[-1]) == "offline gain not seen <b>online</b>"
    assert rows[0].cssselect("a")[0].get("href") == f"/runs/{after.run_id}"
    # the offline side is the gate's headline: verdict and mean quality, the change against the
    # baseline; the metric the readout compared underneath
    offline = rows[0].cssselect("td.offline")[0]
    change = after.aggregate.mean_quality - before.aggregate.mean_quality
    assert change > 0
    assert H.text(offline.cssselect(".badge")[0]) == after.verdict == "ACCEPT"
    assert H.text(offline).startswith(
        f"ACCEPT mean quality {after.aggregate.mean_quality:.1f} "
        f"({change:+.1f} vs {before.aggregate.mean_quality:.1f})")
    assert H.text(offline.cssselect("div")[0]) == f"baseline {before.run_id} · nDCG@K, 0–1 +0.0500"
    assert "ndcg" not in H.text(offline)
    counts = {H.text(c.cssselect(".k")[0]): H.text(c.cssselect(".v")[0])
              for c in doc.cssselect(".funnel-counts .card")}
    assert counts == {"agreed": "1", "disagreed": "1", "undecided": "0"}
    assert len(doc.cssselect("figure.chart svg circle")) == 2


def cards_of(doc: Any) -> dict[str, Any]:
    return {c.get("data-group"): c for c in doc.cssselect(".indicators .card.indicator")}


def test_resources_card_from_a_monitor_run(tmp_path: Path) -> None:
    """`recallwatch ops monitor` records what the store holds: the card shows the ANN index's bytes
    as the engine measures them, with the rows and the bytes of their float32 vectors."""
    store, data = small_store(tmp_path / "s", n=1200)  # 16 dimensions, an IVF_PQ index
    db = tmp_path / "h.db"
    with History(db) as h:
        report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), floor=0.0,
                             history=h)
    assert report.resources == {"rows": 1200, "dimensions": 16, "vector_bytes": 1200 * 16 * 4,
                                "index_bytes": store.index_bytes()}
    assert store.index_bytes() > 0
    client = TestClient(base_url="http://127.0.0.1", app=create_app(db))
    card = cards_of(get(client, "/monitor"))["resources"]
    assert not card.cssselect(".missing")
    assert H.text(card.cssselect(".v")[0]) == format_cost("index_bytes", store.index_bytes())
    assert "ANN index size" in H.text(card) and "resources.index_bytes" in H.text(card)
    details = [H.text(d) for d in card.cssselect(".detail")]
    assert details == ["store size: 1,200 rows", "stored vectors (float32): 75.0 KiB"]  # 76,800 B
    assert H.text(card.cssselect(".status")[0]) == "no threshold recorded"


def test_cost_card_reads_the_latest_gate_run_on_a_store(kb: KB, tmp_path: Path) -> None:
    """The cost card shows the newest gate run's cost (not only monitor records) and the outcome
    of the policy's caps that run recorded; a later run from a results file (no timings) does
    not hide it."""
    db = tmp_path / "h.db"

    def gate(cap_ms: float) -> Any:
        policy = replace(LENIENT, limits=Limits(max_latency_p99_ms=cap_ms))
        return record_gate_run(run_gate(kb.golden, store=kb.store, embedder=kb.embedder,
                                        policy=policy), db)

    def cost_card() -> Any:
        client = TestClient(base_url="http://127.0.0.1", app=create_app(db))
        return cards_of(get(client, "/monitor"))["cost"]

    roomy = gate(60_000.0)  # a minute: no search of ten rows takes that long
    assert roomy.cost is not None and roomy.verdict == "ACCEPT"
    card = cost_card()
    assert H.text(card.cssselect(".v")[0]) == f"{roomy.cost['search_p99_ms']:.4g} ms"
    assert H.text(card.cssselect(".status")[0]) == "ok"
    assert H.text(card.cssselect(".limit")[0]) == "max_latency_p99_ms 60000"
    assert card.cssselect("a")[0].get("href") == f"/runs/{roomy.run_id}"
    tight = gate(0.001)  # a microsecond: every real search takes longer
    assert tight.cost is not None and tight.verdict == "STOP"
    record_gate_run(gate_run(golden_set(4)), db)  # a results file: no cost
    card = cost_card()
    assert H.text(card.cssselect(".v")[0]) == f"{tight.cost['search_p99_ms']:.4g} ms"
    assert H.text(card.cssselect(".status")[0]) == "breach"
    assert card.cssselect("a")[0].get("href") == f"/runs/{tight.run_id}"
    details = dict(H.text(d).split(": ", 1) for d in card.cssselect(".detail"))
    assert details == {
        "query embedding, per query": f"{tight.cost['embed_ms_per_query']:.4g} ms",
        "index bytes": format_cost("index_bytes", tight.cost["index_bytes"])}
    spark = card.cssselect("svg.spark")[0]
    assert len(spark.cssselect("path")[0].get("d").removeprefix("M").split()) == 2


def test_funnel_page_lists_changes_awaiting_a_readout(kb: KB, tmp_path: Path) -> None:
    """Accepted gate runs with a baseline and promotions without an online readout are listed as
    "awaiting readout", with the command that attaches one; a first run (no baseline, so no
    offline delta), a stopped run (it does not ship) and a run already read out are not."""
    db = tmp_path / "h.db"
    g = golden_set(4)
    first = record_gate_run(gate_run(g), db)
    waiting = record_gate_run(gate_run(g, {"q00": {"q00_b": 3}}), db)
    stopped = record_gate_run(gate_run(g, {q.id: {q.expected[0]: 40, q.expected[1]: 41}
                                           for q in g.queries}), db)
    read_out = record_gate_run(gate_run(g), db)
    assert (first.verdict, waiting.verdict, stopped.verdict, read_out.verdict) == (
        "ACCEPT", "ACCEPT", "STOP", "ACCEPT")
    shipped = record_gate_run(kb.gate(), db)  # the knowledge base's store, then promoted
    with History(db) as h:
        decision = promote(h, kb.store)
        promote_id = h.monitor_runs(kind="promote")[0].id
        h.record_online_readout({
            "change_run": read_out.run_id, "promote_id": None, "offline_metric": "ndcg",
            "offline_baseline": stopped.run_id, "offline_delta": 0.1, "online_metric": "ctr",
            "online_delta": 0.01, "online_ci_low": 0.0, "online_ci_high": 0.02,
            "online_verdict": "better", "agreement": "agreed", "payload": {}})
    assert decision.promoted and decision.accepted_run == shipped.run_id
    doc = get(TestClient(base_url="http://127.0.0.1", app=create_app(db)), "/funnel")
    rows = doc.cssselect("table.awaiting tbody tr")
    changes = [r.cssselect("a")[0].get("href") for r in rows]
    assert changes == [f"/runs/{shipped.run_id}", f"/runs/{waiting.run_id}"]  # newest first
    assert all(H.text(r.cssselect(".badge.warn")[0]) == "awaiting readout" for r in rows)
    assert f"promote:{promote_id}" in H.text(rows[0])
    assert H.text(rows[0].cssselect("code")[-1]).endswith(f"--change promote:{promote_id}")
    # the waiting run's offline delta: its nDCG against the first run's, the baseline it had
    with History(db) as h:
        expected = h.summary(waiting.run_id).mean_ndcg - h.summary(first.run_id).mean_ndcg
    assert expected < 0
    offline = rows[1].cssselect("td.offline")[0]
    quality = waiting.aggregate.mean_quality
    change = quality - first.aggregate.mean_quality
    assert H.text(offline.cssselect(".badge")[0]) == "ACCEPT"
    assert H.text(offline).startswith(
        f"ACCEPT mean quality {quality:.1f} ({change:+.1f} vs "
        f"{first.aggregate.mean_quality:.1f})")
    assert H.text(offline.cssselect("div")[0]) == (
        f"baseline {first.run_id} · nDCG@K, 0–1 {expected:+.4f}")
    # the readout already attached is still listed as read out
    assert [r.get("class") for r in doc.cssselect("table.funnel tbody tr")] == ["agreed"]


def test_cost_card_shows_the_median_of_a_run_without_a_p99() -> None:
    """A gate run that timed too few calls for a p99 states none; the card shows its median."""
    from recallwatch.history import MonitorRun
    from recallwatch.web._indicators import indicator_cards

    cost = {"queries": 13, "calls": 13, "search_p50_ms": 2.5, "search_p99_ms": None,
            "search_p99_missing": "not enough calls for a p99: 13 of 368 needed",
            "embed_ms_per_query": 3.0, "index_bytes": 0}
    run = MonitorRun(id=1, kind="gate", created_at="2026-12-06T00:00:00",
                     store_uri="lancedb://kb", index_version="2", status="ACCEPT",
                     payload={"run_id": "r1", "cost": cost, "policy": {}})
    (card,) = [c for c in indicator_cards([], [run]) if c["group"] == "cost"]
    assert (card["title"], card["shown"]) == ("search latency p50 of the gate run", "2.5 ms")


def test_the_probes_speed_card_states_no_p99_from_too_few_calls(tmp_path: Path) -> None:
    """A monitor run whose probes timed too few calls for a p99 interval states none: the card
    shows their median, named as such; a run that timed enough shows its p99."""
    from recallwatch.web._indicators import indicator_cards

    db = tmp_path / "h.db"
    few = {"calls": 40, "p50_ms": 4.0, "p50_ci_ms": [3.8, 4.3], "p99_ms": None,
           "p99_missing": "not enough calls for a p99: 40 of 368 needed"}
    with History(db) as h:
        h.record_monitor_run("monitor", {"recall": 0.99, "floor": 0.95,
                                         "latency_ms": {"p50": 4.0, "p99": 9.5},
                                         "latency": few}, status="ok")
        records = h.monitor_runs()
    (speed,) = [c for c in indicator_cards(records) if c["group"] == "speed"]
    assert (speed["title"], speed["value"]) == (
        "latency p50 of the probes (too few calls for a p99)", 4.0)
    enough = {**few, "calls": 368, "p99_ms": 9.5, "p99_ci_ms": [8.0, 12.5], "p99_missing": None}
    with History(db) as h:
        h.record_monitor_run("monitor", {"recall": 0.99, "floor": 0.95,
                                         "latency_ms": {"p50": 4.0, "p99": 9.5},
                                         "latency": enough,
                                         "thresholds": {"max_latency_p99_ms": 20.0}},
                             status="ok")
        records = h.monitor_runs()
    (speed,) = [c for c in indicator_cards(records) if c["group"] == "speed"]
    assert (speed["title"], speed["value"], speed["status"]) == (
        "latency p99 of the probes", 9.5, "ok")
    # over the cap, but its interval reaches below it: the monitor did not alarm, nor does the
    # card; a p99 whose whole interval is over the cap is a breach
    for status, shown in (("within noise", ("ok", "max 9 ms, within noise")),
                          ("over", ("breach", "max 9 ms"))):
        with History(db) as h:
            h.record_monitor_run("monitor", {
                "recall": 0.99, "floor": 0.95, "latency_ms": {"p50": 4.0, "p99": 9.5},
                "latency": {**enough, "cap_ms": 9.0, "status": status},
                "thresholds": {"max_latency_p99_ms": 9.0}}, status="ok")
            records = h.monitor_runs()
        (speed,) = [c for c in indicator_cards(records) if c["group"] == "speed"]
        assert (speed["status"], speed["limit_text"]) == shown
