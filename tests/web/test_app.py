"""Dashboard pages rendered in process (Starlette TestClient over ASGI), read with CSS
selectors, checked against the history they show."""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from recallwatch.acceptance.model import GateResult
from recallwatch.errors import HistoryError
from recallwatch.history import History
from recallwatch.ops.budget import BudgetPolicy, error_budget
from recallwatch.report.html import to_html
from recallwatch.web import create_app
from tests.report import helpers as H

Site = tuple[Path, Path, list[GateResult]]


@pytest.fixture(scope="module")
def client(site: Site) -> TestClient:
    db, bench, _ = site
    return TestClient(base_url="http://127.0.0.1", app=create_app(db, bench=bench))


def get(client: TestClient, url: str, status: int = 200) -> Any:
    r = client.get(url)
    assert r.status_code == status, (url, r.status_code, r.text[-500:])
    assert r.headers["content-type"].startswith("text/html")
    H.assert_inert(r.text)
    return H.parse(r.text)


def test_security_headers(client: TestClient) -> None:
    r = client.get("/")
    assert "script-src 'sha256-" in r.headers["content-security-policy"]
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"


def test_runs_list_newest_first(client: TestClient, site: Site) -> None:
    runs = site[2]
    doc = get(client, "/")
    rows = doc.cssselect("#runs-table tbody tr")
    assert [H.text(r.cssselect("a.run-link")[0]) for r in rows] == \
        [r.run_id for r in reversed(runs)]
    assert [H.text(r.cssselect(".badge")[0]) for r in rows] == \
        [r.verdict for r in reversed(runs)]
    assert rows[0].cssselect("a.run-link")[0].get("href") == f"/runs/{quote(runs[-1].run_id)}"


def test_runs_list_filters_by_dataset(client: TestClient) -> None:
    doc = get(client, "/?dataset=" + quote("no such dataset"))
    assert doc.cssselect(".empty") and not doc.cssselect("#runs-table")


def test_run_page_is_the_report_content(client: TestClient, site: Site) -> None:
    run = site[2][-1]
    page = get(client, f"/runs/{run.run_id}")
    report = H.parse(to_html(run))
    for selector in ("#verdict", "#query-table", ".compare", "figure.chart", "details.query"):
        ours = [H.text(e) for e in page.cssselect(selector)]
        theirs = [H.text(e) for e in report.cssselect(selector)]
        # the dashboard adds a permalink per query, nothing else
        assert [t.replace(" · permalink", "") for t in ours] == theirs, selector
    assert len(page.cssselect("details.query a.permalink")) == len(run.queries)


def test_run_by_reference_and_unknown_run(client: TestClient, site: Site) -> None:
    runs = site[2]
    doc = get(client, "/runs/accepted")
    assert H.text(doc.cssselect("code.run-id")[0]) == runs[1].run_id  # the last ACCEPT
    doc = get(client, "/runs/nope", status=404)
    assert "no run 'nope'" in H.text(doc.cssselect(".error-message")[0])
    # a 50 kB id: not found, not an unreadable history (SQLite refuses so long a pattern)
    for ref in ("a" * 50_000, "%_" * 25_000):
        doc = get(client, f"/runs/{ref}", status=404)
        assert "50,000 characters" in H.text(doc.cssselect(".error-message")[0])
        doc = get(client, f"/runs/{ref}/queries/q1", status=404)


def test_query_page_drill_down(client: TestClient, site: Site) -> None:
    run = site[2][-1]
    failing = run.failing()[0]
    doc = get(client, f"/runs/{run.run_id}/queries/{quote(failing.id, safe='')}")
    d = doc.cssselect("details.query")
    assert len(d) == 1 and d[0].get("open") is not None
    assert H.text(d[0].cssselect("code.qid")[0]) == " ".join(failing.id.split())
    assert len(d[0].cssselect("table.topk tr.noise")) == failing.noise
    assert [H.text(b) for b in d[0].cssselect(".diag b")] == \
        [x.title for x in failing.diagnosis]
    # what changed since the previous run: the pushed-out chunk's rank
    prev = run.comparison["previous"]  # type: ignore[index]
    if failing.id in prev["rank_changes"]:
        assert "rank" in H.text(d[0])
    get(client, f"/runs/{run.run_id}/queries/{quote('not a query')}", status=404)


def test_every_permalink_resolves(client: TestClient, site: Site) -> None:
    run = site[2][-1]
    page = get(client, f"/runs/{run.run_id}")
    links = [a.get("href") for a in page.cssselect("a.permalink")]
    for href, q in zip(links, run.queries):
        doc = get(client, href)
        assert H.text(doc.cssselect("h1 code")[0]) == " ".join(q.id.split())


def test_trends_show_the_decline(client: TestClient, site: Site) -> None:
    runs = site[2]
    doc = get(client, "/trends")
    titles = [H.text(f.cssselect("figcaption")[0]) for f in doc.cssselect("figure.chart")]
    assert titles[:2] == ["Mean quality", "Mean recall@K"]
    assert "Mean recall by domain" in titles
    quality = doc.cssselect("figure.chart")[0]
    values = [float(re.search(r": ([0-9.]+)$", t.text).group(1))  # type: ignore[union-attr]
              for t in quality.cssselect("circle title")]
    assert values == pytest.approx([round(r.aggregate.mean_quality, 3) for r in runs])
    series = {H.text(r.cssselect("td")[0]): r for r in doc.cssselect("table.trend-series tr")
              if r.cssselect("td")}
    assert H.text(series["mean_quality"].cssselect("td")[-1]) == "down"
    assert doc.cssselect("ul .badge.warn")  # a pattern is named
    # a domain that falls 100 → 50 without both tests agreeing is not called "flat"
    undecided = [H.text(r.cssselect("td")[-1]) for name, r in series.items()
                 if name.endswith("mean_quality") and H.text(r.cssselect("td")[3]) == "50.000"]
    assert "no significant trend" in undecided
    assert "flat" not in H.text(doc.cssselect("table.trend-series")[0])


def test_trends_last_bounds(client: TestClient) -> None:
    doc = get(client, "/trends?last=3")
    assert "need at least 5 runs" in H.text(doc)
    get(client, "/trends?last=abc")


def test_monitor_indicators_and_records(client: TestClient) -> None:
    doc = get(client, "/monitor")
    # six records, each on its own (hostile) store: one section each, newest first, nothing mixed
    sections = doc.cssselect("section.store")
    assert len(sections) == 6
    newest = sections[0]
    cards = {H.text(c.cssselect(".k")[0]).split(" · ")[0]: H.text(c.cssselect(".v")[0])
             for c in newest.cssselect(".indicators .card")}
    # the latest drift record (i = 5): recall 0.97 - 0.1, p99 14.5 ms, age 5 days; units shown
    assert cards == {"quality": "87.0%", "speed": "14.5 ms", "resources": "—", "coverage": "—",
                     "index health": "5 d 0 h", "user signals": "—", "cost": "—",
                     "answers": "—", "task quality": "—", "error budget": "80%"}
    store = H.hostile(5, "t")
    assert newest.get("data-store") == f"lancedb://kb?table={store}"
    for card in newest.cssselect(".indicators .card"):
        assert H.text(card.cssselect(".store")[0]) == f"store: lancedb://kb?table={store}"
    assert len(doc.cssselect("table.monitor-records tbody tr")) == 6
    # one record per store: every figure is a single value, shown as a value and never charted
    assert not newest.cssselect("figure.chart")
    steady = {H.text(d.cssselect("dt")[0]): H.text(d.cssselect("dd")[0])
              for d in newest.cssselect("dl.steady div")}
    assert steady["latency.p99_ms"] == "14.5 ms" and steady["latency.p50_ms"] == "7 ms"


def test_error_budget_card_shows_consumed_and_burn_rate_explained(client: TestClient) -> None:
    card = get(client, "/monitor").cssselect("section.store")[0].cssselect(".card.budget")[0]
    # the latest record: 2 of its 6 runs missed the target 0.9; 25 % of 10 runs (2.5) may, so
    # 2 / 2.5 = 80 % consumed; 2 bad in 6 runs against 25 % allowed burns at (2/6) / 0.25 = 1.33
    assert H.text(card.cssselect(".v.consumed")[0]) == "80%"
    assert H.text(card.cssselect(".v.burn-rate")[0]) == "1.33×"
    assert H.text(card.cssselect(".explain-consumed")[0]) == (
        "The share of the tolerated shortfall used up: up to 25% of the last 10 runs (2.5 runs) "
        "may have a recall against exact search under 0.9, and 2 have; at 100% the budget is "
        "spent and the monitor alarms.")
    assert H.text(card.cssselect(".explain-burn-rate")[0]) == (
        "How fast the budget is being used compared with the allowed pace: 2 bad runs in 6 is "
        "1.33 times the 25% allowed; at 1 the budget lasts exactly the window, above 1 it runs "
        "out early.")
    assert "0.9" not in H.text(card.cssselect(".v")[0])  # not the policy's target
    assert not card.cssselect(".badge")  # not spent


def test_a_spent_budget_from_the_monitor_is_read_whole(tmp_path: Path) -> None:
    # what `recallwatch ops monitor --budget-target 0.75` records: the policy comes first
    policy = BudgetPolicy(target=0.75, slo=0.9, window_runs=30)
    status = error_budget([(datetime(2026, 1, d), r) for d, r in
                           ((1, 0.7), (2, 0.8), (3, 0.6), (4, 0.7))], policy)
    db = tmp_path / "h.db"
    with History(db) as h:
        h.record_monitor_run("monitor", {"recall": 0.7, "budget": status.to_dict()},
                             status="alarm")
        h.record_monitor_run("load", {"qps": 900.0})  # newer, no budget
    client = TestClient(base_url="http://127.0.0.1", app=create_app(db))
    card = get(client, "/monitor").cssselect(".card.budget")[0]
    assert H.text(card.cssselect(".v.consumed")[0]) == "100%"  # 3 bad of 3 allowed
    assert H.text(card.cssselect(".v.burn-rate")[0]) == "7.50×"  # (3/4) / 0.1
    assert H.text(card.cssselect(".badge")[0]) == "SPENT"
    assert "under 0.75, and 3 have" in H.text(card.cssselect(".explain-consumed")[0])


def test_bench_frontier_and_skipped_files(client: TestClient, site: Site) -> None:
    doc = get(client, "/bench")
    assert len(doc.cssselect("figure.chart svg")) == 1
    frontier = doc.cssselect("table.frontier tbody tr")
    sweep = H.sweep()
    assert len(frontier) == len(sweep["answers"]["frontier"])
    fastest = [[H.text(c) for c in r.cssselect("td")]
               for r in doc.cssselect("table.fastest tbody tr")]
    # R >= 0.9: the faster hnsw point (0.90 at 50k QPS) beats ivf nprobe=4 (0.95 at 10k)
    assert fastest[0][:3] == ["0.9", "hnsw <script>", "M=16 ef=16"]
    assert fastest[0][4] == "50,000"
    skipped = H.text(doc.cssselect("ul.small")[-1])
    assert "notes.json: not a sweep result" in skipped and "broken.json: unreadable" in skipped


def test_empty_states(tmp_path: Path) -> None:
    History(tmp_path / "h.db").close()
    client = TestClient(base_url="http://127.0.0.1", app=create_app(tmp_path / "h.db"))
    for url in ("/", "/trends", "/monitor", "/funnel", "/bench"):
        assert get(client, url).cssselect(".empty"), url


def test_dashboard_never_writes(site: Site) -> None:
    db, bench, _ = site

    def snapshot() -> dict[str, str]:
        return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(db.parent.glob(db.name + "*"))}

    with History(db) as h:  # checkpoint the WAL so the main file holds everything
        h._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = snapshot()
    client = TestClient(base_url="http://127.0.0.1", app=create_app(db, bench=bench))
    for url in ("/", "/runs/latest", "/trends", "/monitor", "/funnel", "/bench"):
        assert client.get(url).status_code == 200
    assert snapshot()[db.name] == before[db.name]
    with History(db, read_only=True) as h, pytest.raises(HistoryError, match="readonly"):
        h.record_monitor_run("x", {})


def test_missing_or_foreign_history_refused(tmp_path: Path) -> None:
    with pytest.raises(HistoryError, match="no run history at"):
        create_app(tmp_path / "missing.db")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(HistoryError, match="cannot open the run history"):
        create_app(tmp_path / "junk.db")


def test_indicators_match_whole_words(tmp_path: Path) -> None:
    db = tmp_path / "h.db"
    with History(db) as h:
        h.record_monitor_run("load", {"memory_usage_mb": 512, "qps@8": 900.0, "coverage": 0.97})
    doc = get(TestClient(base_url="http://127.0.0.1", app=create_app(db)), "/monitor")
    cards = {H.text(c.cssselect(".k")[0]).split(" · ")[0]: H.text(c.cssselect(".v")[0])
             for c in doc.cssselect(".indicators .card")}
    assert cards["index health"] == "—"  # "usage" is not "age"
    assert cards["speed"] == "900 queries/s" and cards["coverage"] == "97.0%"
    assert cards["resources"] == "512 MB"
    assert H.text(doc.cssselect("section.store h2")[0]).startswith("records that name no store")


def test_history_needing_a_migration_is_refused_not_migrated(tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "old.db"
    History(db).close()
    conn = sqlite3.connect(db)  # make it look one migration behind
    with conn:
        conn.execute("DELETE FROM schema_migrations WHERE version = "
                     "(SELECT MAX(version) FROM schema_migrations)")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(HistoryError, match="open it once with a writing command"):
        create_app(db)
    assert db.read_bytes() == before


def test_a_hostile_bench_file_is_skipped_not_a_crash(tmp_path: Path) -> None:
    # Sweep results are read by the structured loader: a file nested 100,000 deep (once a
    # RecursionError and an error page) or not UTF-8 is listed as skipped, with where and why.
    from recallwatch.web._views import bench_view

    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (tmp_path / "latin.json").write_bytes(b'{"k": "\xe9"}')
    skipped = dict(bench_view(tmp_path)["skipped"])
    assert skipped[str(tmp_path / "deep.json")].endswith("deep.json:1: invalid JSON (nested "
                                                         "deeper than 20 levels)")
    assert "latin.json:1: expected UTF-8 text" in skipped[str(tmp_path / "latin.json")]
