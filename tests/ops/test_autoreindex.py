"""The operation loop on real LanceDB indexes: the monitor's --reindex-below and an ingestion's
index rebuild both go through the verified reindex, a failing new index is never switched in,
and one automatic reindex per window at most."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import synthetic
from recallwatch.cli import app
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.history import History
from recallwatch.ops.autoreindex import (
    AUTO_REINDEX_META_KEY,
    auto_reindex,
    index_needs_rebuild,
    row_probes,
)
from recallwatch.ops.ingest import REPORTS_META_KEY, ingest
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import recall_vs_exact
from recallwatch.stores.lancedb.index import LanceIndex
from recallwatch.stores.lancedb.store import LanceStore

from .test_monitor import small_store

runner = CliRunner()
T0 = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
# The test index is weak on purpose (IVF_PQ probing 2 lists: recall about 0.45), so its 40 probes
# leave the new-versus-live difference an interval of about ±0.07: tests of the loop's mechanics
# accept any loss, as they accept any recall (floor 0); the comparison itself is tested on its
# own (test_a_reindex_to_a_worse_index_is_refused and below).
LOOSE = 1.0


def _uuids(store: LanceStore) -> tuple[str, ...]:
    state = LanceIndex(store).state()
    assert state is not None
    return state.uuids


def test_monitor_below_the_level_reindexes_once_per_window(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")  # IVF_PQ probing 2 lists: recall under 1
    probes = ProbeSet("p", "1", vectors=data.queries)
    history = History(tmp_path / "h.db")
    old = _uuids(store)
    first = run_monitor(store, probes, floor=0.0, reindex_below=1.0, max_recall_loss=LOOSE,
                        history=history, now=T0)
    assert first.recall < 1.0 and first.reindex is not None
    assert first.reindex["trigger"] == "monitor" and first.reindex["switched"]
    assert f"recall@10 {first.recall:.3f} < 1" in first.reindex["why"]
    assert _uuids(store) != old  # switched: LanceDB serves the new index
    records = history.monitor_runs(kind="reindex")
    assert len(records) == 1 and records[0].status == "switched"
    assert records[0].payload["auto"]["trigger"] == "monitor"
    guard = store.get_meta(AUTO_REINDEX_META_KEY)
    assert guard["at"] == T0.isoformat(timespec="seconds") and guard["outcome"] == "switched"
    # within the window: measured, not rebuilt again
    again = run_monitor(store, probes, floor=0.0, reindex_below=1.0, max_recall_loss=LOOSE,
                        history=history,
                        now=T0 + timedelta(hours=23))
    assert again.reindex is not None and again.reindex["result"] is None
    assert "at most one per 24 hours" in again.reindex["skipped"]
    assert len(history.monitor_runs(kind="reindex")) == 1
    # past it: the loop may act again
    later = run_monitor(store, probes, floor=0.0, reindex_below=1.0, max_recall_loss=LOOSE,
                        history=history,
                        now=T0 + timedelta(hours=25))
    assert later.reindex is not None and later.reindex["result"] is not None
    assert len(history.monitor_runs(kind="reindex")) == 2
    # the loop's records are the monitor's too: the report keeps what it did
    monitor_records = history.monitor_runs(kind="monitor")
    assert monitor_records[-1].payload["reindex"]["switched"] is True


def test_monitor_never_switches_in_an_index_under_the_floor(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    probes = ProbeSet("p", "1", vectors=data.queries)
    old, before = _uuids(store), store.current_version()
    report = run_monitor(store, probes, floor=1.0, reindex_below=1.0, now=T0)
    assert report.reindex is not None and not report.reindex["switched"]
    result = report.reindex["result"]
    assert result["recall_candidate"] < 1.0 and "not switched" in result["reason"]
    assert _uuids(store) == old and store.current_version() == before  # nothing published
    assert report.alarm  # the low recall still alarms: nothing was repaired
    assert store.get_meta(AUTO_REINDEX_META_KEY)["outcome"] == "refused"


def test_monitor_above_the_level_does_nothing(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), floor=0.0,
                         reindex_below=0.0)
    assert report.reindex is None and store.get_meta(AUTO_REINDEX_META_KEY) is None


# -- ingestion --------------------------------------------------------------------------------

DATA = synthetic(2000, 16, topics=1, queries=10, seed=3)  # one blob: IVF lists cut through it


class Lookup(CallableEmbedder):
    """Chunk ``cNNNNN`` → row NNNNN of a clustered collection (IVF has lists to find)."""

    def __init__(self) -> None:
        def fn(texts: Sequence[str]) -> np.ndarray:
            # (the fingerprint's probe sentences are not rows: any fixed vector will do)
            return DATA.base[[int(t[4:]) if t.startswith("row ") else 0 for t in texts]]

        super().__init__(fn, name="lookup", version="1", dimension=16)


def _corpus(path: Path, stop: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"c{i:05d}", "text": f"row {i}"}) + "\n"
                            for i in range(stop)))
    return path


def test_ingestion_rebuild_is_verified_switched_and_recorded(tmp_path: Path) -> None:
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t&index_threshold=300",
                            create=True)
    history = History(tmp_path / "h.db")
    first = ingest(_corpus(tmp_path / "a.jsonl", 300), store, Lookup(), history=history)
    assert store.has_index() and first.index_rebuild is None  # the first build is not a rebuild
    small = ingest(_corpus(tmp_path / "b.jsonl", 340), store, Lookup(), history=history)
    assert small.index_rebuild is None and index_needs_rebuild(store) is None  # 40 of 340
    big = ingest(_corpus(tmp_path / "c.jsonl", 700), store, Lookup(), verify_floor=0.5,
                 history=history)
    rebuild = big.index_rebuild
    assert rebuild is not None and rebuild["trigger"] == "ingest" and rebuild["switched"]
    assert "400 of 700 rows (57%) are outside the index" in rebuild["why"]
    state = LanceIndex(store).state()
    assert state is not None and state.unindexed_rows == 0
    assert big.version == store.current_version()  # the report names the version that serves
    assert "automatic reindex" in big.summary()
    assert store.search(DATA.base[650:651], 1)[0].ids == ["c00650"]
    [record] = history.monitor_runs(kind="reindex")
    assert record.payload["auto"]["trigger"] == "ingest"
    assert record.payload["probes"]["name"] == "stored-rows"


def test_the_first_index_a_write_builds_is_timed_apart_from_the_write(tmp_path: Path) -> None:
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t&index_threshold=300",
                            create=True)
    below = ingest(_corpus(tmp_path / "a.jsonl", 200), store, Lookup(), commit_every=100)
    assert not store.has_index() and below.seconds["index_build"] == 0
    assert "index build" not in below.summary()
    # the commit of rows 200-299 reaches the threshold: that write builds the first index
    first = ingest(_corpus(tmp_path / "b.jsonl", 300), store, Lookup(), commit_every=100)
    assert store.has_index() and first.index_rebuild is None
    s = first.seconds
    assert s["index_build"] > 0 and s["index_build"] == store.index_build_seconds()
    assert s["write"] >= 0 and s["read"] + s["write"] + s["index_build"] + s["index"] <= s["total"]
    assert f"index build {s['index_build']:.2f}s" in first.summary()
    stored = store.get_meta(REPORTS_META_KEY)[-1]
    assert stored["seconds"]["index_build"] == s["index_build"]  # in the JSON report too
    # a later ingestion builds nothing: no build shown
    again = ingest(_corpus(tmp_path / "c.jsonl", 320), store, Lookup())
    assert again.seconds["index_build"] == 0 and "index build" not in again.summary()


def test_ingestion_keeps_the_live_index_when_the_rebuild_fails(tmp_path: Path) -> None:
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t&index_threshold=300"
                            "&index_type=IVF_PQ&nprobes=1", create=True)
    ingest(_corpus(tmp_path / "a.jsonl", 300), store, Lookup())
    old = _uuids(store)
    opened: list[History] = []

    def lazily() -> History:
        opened.append(History(tmp_path / "h.db"))
        return opened[-1]

    # 7 lists probed one at a time: neighbours across a list's border are missed
    report = ingest(_corpus(tmp_path / "b.jsonl", 2000), store, Lookup(), verify_floor=1.0,
                    history=lazily)
    assert report.index_rebuild is not None and not report.index_rebuild["switched"]
    assert report.seconds["index"] > 0 and "index check and rebuild" in report.summary()
    assert _uuids(store) == old  # still the old index, new rows outside it
    assert store.search(DATA.base[1650:1651], 1)[0].ids == ["c01650"]  # scanned exactly
    assert len(opened) == 1  # the history opened because there was something to record
    # the guard: a second big ingestion the same day does not rebuild again
    again = ingest(_corpus(tmp_path / "c.jsonl", 2000), store, Lookup(), verify_floor=0.0)
    assert again.index_rebuild is None  # nothing written: no rebuild considered
    more = _corpus(tmp_path / "d.jsonl", 2000)
    more.write_text(more.read_text().replace('"row 1"', '"row 2"'))  # one changed chunk
    changed = ingest(more, store, Lookup(), verify_floor=0.0)
    assert changed.index_rebuild is not None and changed.index_rebuild["result"] is None
    assert "already attempted" in changed.index_rebuild["skipped"]


def test_ingestion_does_not_build_an_index_that_cannot_reach_the_floor(tmp_path: Path) -> None:
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t&index_threshold=300"
                            "&index_type=IVF_PQ&nprobes=1", create=True)
    ingest(_corpus(tmp_path / "a.jsonl", 1000), store, Lookup())  # all 1000 in the index
    old = _uuids(store)
    report = ingest(_corpus(tmp_path / "b.jsonl", 1400), store, Lookup(), verify_floor=0.99)
    rebuild = report.index_rebuild
    assert rebuild is not None and rebuild["result"] is None and not rebuild["switched"]
    # the live search, rows outside the index found exactly, already misses the floor
    probes = row_probes(store)
    assert probes is not None and probes.vectors is not None
    live = float(recall_vs_exact(store, probes.vectors, 10)[0].mean())
    assert live < 0.99
    assert rebuild["skipped"] == (
        f"not rebuilt: recall@10 of the live search is {live:.3f} with the rows outside the "
        "index searched exactly, under the floor 0.99; a rebuilt index with the same settings "
        "would be refused at that floor. Raise the index's search settings (nprobes, ef, "
        "refine_factor in the store URI) or lower the floor (--floor)")
    assert store.get_meta(AUTO_REINDEX_META_KEY) is None  # nothing attempted: no guard held
    assert _uuids(store) == old
    assert "not rebuilt" in report.summary()


def test_row_probes_are_a_seeded_sample_of_stored_vectors(tmp_path: Path) -> None:
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t", create=True)
    ingest(_corpus(tmp_path / "a.jsonl", 150), store, Lookup())
    probes = row_probes(store, n=20, seed=4)
    assert probes is not None and probes.vectors is not None and len(probes) == 20
    assert probes.hash == row_probes(store, n=20, seed=4).hash  # type: ignore[union-attr]
    rows = {tuple(np.round(v, 6)) for v in DATA.base[:150]}
    assert all(tuple(np.round(v, 6)) in rows for v in probes.vectors)


# -- the CLI ----------------------------------------------------------------------------------


def test_cli_monitor_reindex_below_says_what_it_did(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    np.save(tmp_path / "p.npy", data.queries)
    args = ["ops", "monitor", "--store", store.uri, "--probes", str(tmp_path / "p.npy"), "--floor",
            "0", "--reindex-below", "1", "--max-recall-loss", "1", "--history",
            str(tmp_path / "h.db")]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "automatic reindex (recall@10 " in result.output and ": switched" in result.output
    second = runner.invoke(app, [*args, "--format", "json"])
    loop = json.loads(second.output)["reindex"]
    assert loop["result"] is None and "at most one per 24 hours" in loop["skipped"]
    third = runner.invoke(app, [*args, "--reindex-window-hours", "0", "--format", "json"])
    assert json.loads(third.output)["reindex"]["result"] is not None
    bad = runner.invoke(app, [*args, "--reindex-below", "1.5"])
    assert bad.exit_code == 2 and "--reindex-below" in bad.output
    assert "less than or equal to 1" in bad.output


def test_cli_ingest_opens_the_history_only_to_record_a_rebuild(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus = _corpus(tmp_path / "a.jsonl", 20)
    result = runner.invoke(app, ["ingest", str(corpus), "--store",
                                 f"lancedb://{tmp_path / 'kb'}?table=t", "--embedder",
                                 "use-multilingual"])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / ".recallwatch").exists()


def test_dashboard_timeline_shows_the_loops_events(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from recallwatch.web import create_app
    from tests.report import helpers as H

    store, data = small_store(tmp_path / "s")
    probes = ProbeSet("p", "1", vectors=data.queries)
    db = tmp_path / "h.db"
    with History(db) as history:
        run_monitor(store, probes, floor=0.0, reindex_below=1.0, max_recall_loss=LOOSE,
                    history=history, now=T0)
        run_monitor(store, probes, floor=0.0, reindex_below=1.0, max_recall_loss=LOOSE,
                    history=history,
                    now=T0 + timedelta(hours=1))
    doc = H.parse(TestClient(base_url="http://127.0.0.1", app=create_app(db)).get("/monitor").text)
    rows = [[H.text(c) for c in r.cssselect("td")]
            for r in doc.cssselect("table.monitor-events tbody tr")]
    assert [r[2] for r in rows] == ["skipped", "switched"]  # newest first
    assert rows[0][1].startswith("automatic reindex (recall@10 ")
    assert "at most one per 24 hours" in rows[0][1]
    assert rows[1][1].startswith("reindex automatic (monitor: recall@10 ")
    assert "≥ floor 0, and not worse than the live index's beyond the tolerance (live " in rows[
        1][1] and "tolerance: a loss of at most 1): switched" in rows[1][1]


def test_a_store_without_an_index_to_rebuild_is_skipped_without_holding_the_guard(
    tmp_path: Path,
) -> None:
    store, data = small_store(tmp_path / "s", indexed=False)  # below index_threshold: exact
    probes = ProbeSet("p", "1", vectors=data.queries)
    report = run_monitor(store, probes, floor=0.0, reindex_below=1.0, now=T0)
    assert report.reindex is None  # exact search: recall 1, nothing to trigger
    loop = auto_reindex(store, probes, trigger="monitor", why="test", now=T0)
    assert loop.result is None and loop.skipped is not None
    assert "has no vector index to rebuild" in loop.skipped and "index_threshold" in loop.skipped
    assert store.get_meta(AUTO_REINDEX_META_KEY) is None  # no attempt recorded


@pytest.mark.slow
def test_the_loop_on_the_example_knowledge_base(tmp_path: Path) -> None:
    kb = Path(__file__).resolve().parents[2] / "examples" / "kb"
    indexed = f"lancedb://{tmp_path / 'kb'}?table=indexed&index_threshold=100"
    assert runner.invoke(app, ["ingest", str(kb / "corpus_v1.jsonl"), "--store", indexed,
                               "--no-history"]).exit_code == 0
    probes = tmp_path / "probes.json"
    assert runner.invoke(app, ["ops", "probes", str(probes), "--golden",
                               str(kb / "golden.yaml")]).exit_code == 0
    args = ["ops", "monitor", "--store", indexed, "--probes", str(probes), "--floor", "0.5",
            "--history", str(tmp_path / "h.db"), "--format", "json"]
    first = json.loads(runner.invoke(app, args).stdout)
    if first["recall"] == 1.0:  # the 165-chunk index found every exact neighbour: no trigger
        pytest.skip("the example's index answered exactly on this machine")
    loop = json.loads(runner.invoke(app, [*args, "--reindex-below", "1"]).stdout)["reindex"]
    assert loop["trigger"] == "monitor" and loop["switched"], loop
    assert loop["result"]["recall_candidate"] >= 0.5
    with History(tmp_path / "h.db") as h:
        [record] = h.monitor_runs(kind="reindex")
    assert record.status == "switched" and record.payload["auto"]["trigger"] == "monitor"


def test_an_index_too_small_to_train_is_not_rebuilt_by_ingestion(tmp_path: Path) -> None:
    # IVF_PQ on 200 rows: LanceDB leaves every row out of an index it cannot train, and scans
    store = LanceStore.open(f"lancedb://{tmp_path / 'kb'}?table=t&index_threshold=100"
                            "&index_type=IVF_PQ", create=True)
    report = ingest(_corpus(tmp_path / "a.jsonl", 200), store, Lookup())
    state = LanceIndex(store).state()
    assert state is not None and state.indexed_rows == 0 and state.unindexed_rows == 200
    assert report.index_rebuild is None and index_needs_rebuild(store) is None
