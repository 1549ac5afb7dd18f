"""The monitor and the reindex on a small real LanceDB index: coverage against a calibrated
threshold, the error budget through the history, the webhook against a real local server, and
a reindex / rollback round trip (the thousands-of-queries version is in test_drift_story)."""

from __future__ import annotations

import http.server
import json
import shutil
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import Dataset, synthetic
from recallwatch.cli import app
from recallwatch.embedders.base import FINGERPRINT_META_KEY, Fingerprint
from recallwatch.errors import EmbedderMismatchError, StoreError, UsageError
from recallwatch.history import History
from recallwatch.ops.budget import BudgetPolicy
from recallwatch.ops.calibrate import ThresholdCalibration, store_threshold
from recallwatch.ops.index_health import index_build, index_problem
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import recall_vs_exact
from recallwatch.ops.reindex import reindex, rollback
from recallwatch.ops.webhook import post_webhook
from recallwatch.stores.base import Chunk, IndexState
from recallwatch.stores.lancedb.index import LanceIndex
from recallwatch.stores.lancedb.store import LanceStore

FP = Fingerprint("toy", "1", 16, "a" * 64)


def small_store(path: Path, *, indexed: bool = True, index_type: str = "IVF_PQ", n: int = 2000
                ) -> tuple[LanceStore, Dataset]:
    data = synthetic(n, 16, topics=8, queries=40, seed=1)
    threshold = n // 2 if indexed else 10**6
    tuning = "&nprobes=2&refine_factor=2" if index_type == "IVF_PQ" else ""
    store = LanceStore.open(f"lancedb://{path}?table=t&index_type={index_type}{tuning}"
                            f"&index_threshold={threshold}", create=True)
    store.upsert([Chunk(id=f"c{i:04d}", text="") for i in range(n)], data.base)
    store.set_meta(FINGERPRINT_META_KEY, FP.to_dict())
    return store, data


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    received: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "type": self.headers["Content-Type"],
                             "json": json.loads(body)})
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:  # keep test output clean
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/hook?token=s3cret", received
    httpd.shutdown()
    httpd.server_close()


def test_exact_store_has_recall_one_and_no_index(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False)
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), k=10, floor=0.99)
    assert report.recall == 1.0 and not report.alarm
    assert report.index is None and report.drift is None
    assert any("no ANN index" in n for n in report.notes)


def test_coverage_uses_the_threshold_of_the_stores_embedder(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False)  # the live search is exact here
    stored = np.asarray(data.base[:10], dtype=np.float32)  # top score 1.0: their own chunk
    probes = ProbeSet("p", "1", vectors=np.vstack([stored, -stored]))
    cal = ThresholdCalibration(0.999, "precision", 0.95, 1.0, 1.0, True, 1, 1, (),
                               FP.to_dict())
    store_threshold(store, cal)
    report = run_monitor(store, probes, k=5, floor=0.0)
    assert report.threshold == pytest.approx(0.999)
    assert report.coverage == pytest.approx(0.5)
    assert not report.alarms  # no minimum asked
    # half the probes answered: an alarm under a minimum of 60 %, none at 50 %
    under = run_monitor(store, probes, k=5, floor=0.0, min_coverage=0.6)
    assert list(under.alarms) == [
        "coverage 50.0% is under the minimum 60%: the no-result threshold 0.9990 leaves most "
        "probes without an answer (calibrate it again: recallwatch calibrate-threshold)"]
    assert not run_monitor(store, probes, k=5, floor=0.0, min_coverage=0.5).alarms
    other = Fingerprint("other", "1", 16, "b" * 64)
    store.set_meta(FINGERPRINT_META_KEY, other.to_dict())
    with pytest.raises(EmbedderMismatchError, match="not portable across embedders"):
        run_monitor(store, probes, k=5, floor=0.0)


def test_recall_is_id_overlap_with_exact_search(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    recalls, seconds, counts = recall_vs_exact(store, data.queries, 10)
    live = store.search(data.queries, 10)
    exact = store.search(data.queries, 10, exact=True)
    direct = [len(set(a.ids) & set(e.ids)) / 10 for a, e in zip(live, exact, strict=True)]
    assert recalls == pytest.approx(direct)
    assert (seconds > 0).all() and counts == [10] * len(data.queries)


def test_the_recall_alarm_states_its_interval_and_repeats_exactly(tmp_path: Path) -> None:
    """The same probes on the same index measure the same recall: the floor's alarm has no
    run-to-run noise to fire on; its interval says what 40 probes tell of all queries."""
    store, data = small_store(tmp_path / "s")
    probes = ProbeSet("p", "1", vectors=data.queries)
    first, again = (run_monitor(store, probes, k=10, floor=0.99) for _ in range(2))
    assert first.recall == again.recall < 0.99 and first.recall_ci == again.recall_ci
    assert first.recall_ci is not None
    low, high = first.recall_ci
    assert low <= first.recall <= high
    (alarm,) = [a for a in first.alarms if a.startswith("recall@10")]
    assert alarm == (f"recall@10 vs exact search is {first.recall:.3f}, under the floor 0.99 "
                     f"(95 % interval {low:.3f}–{high:.3f} over 40 probes: what the probes say "
                     "of all queries; the same probes on the same index measure the same "
                     "recall)")
    assert first.to_dict()["recall_ci"] == [low, high]


def test_recall_in_one_call_is_the_recall_of_one_call_per_probe(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    # rows written after the index was built: the live search scans them exactly, per call
    store.upsert([Chunk(id=f"d{i:04d}", text="") for i in range(300)], data.base[:300] + 0.01)
    state = store.index_state()
    assert state is not None and state.unindexed_rows == 300
    one_by_one, _, counts = recall_vs_exact(store, data.queries, 10)
    batched, seconds, batched_counts = recall_vs_exact(store, data.queries, 10, batched=True)
    assert batched.tolist() == one_by_one.tolist() and batched_counts == counts
    assert batched.mean() < 1.0  # nprobes 2: there is something to miss
    assert len(set(seconds.tolist())) == 1 and seconds[0] > 0  # one call: each gets the mean


def test_budget_is_computed_over_this_stores_history(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    history = History(tmp_path / "h.db")
    history.record_monitor_run("monitor", {"recall": 0.1}, store_uri="lancedb://elsewhere")
    probes = ProbeSet("p", "1", vectors=data.queries)
    policy = BudgetPolicy(target=1.0, slo=0.5, window_runs=4)
    first = run_monitor(store, probes, floor=0.0, budget=policy, history=history)
    assert first.recall < 1.0  # nprobes 2, refine 2: the live index misses some neighbours
    assert first.budget is not None and (first.budget.runs, first.budget.bad) == (1, 1)
    assert not first.budget.spent  # 1 bad of 2 allowed
    second = run_monitor(store, probes, floor=0.0, budget=policy, history=history)
    assert second.budget is not None and second.budget.bad == 2 and second.budget.spent
    assert second.alarm and "SPENT" in second.alarms[0]
    rows = [r for r in history.monitor_runs(kind="monitor") if r.store_uri == store.uri]
    assert [r.status for r in rows] == ["alarm", "ok"]
    assert rows[0].payload["budget"]["consumed"] == pytest.approx(1.0)


def test_webhook_posts_json_to_a_local_server(server: tuple[str, list[dict[str, Any]]]) -> None:
    url, received = server
    assert post_webhook(url, {"alarm": True, "recall": 0.5}) == 204
    assert received == [{"path": "/hook?token=s3cret", "type": "application/json",
                         "json": {"alarm": True, "recall": 0.5}}]
    with pytest.raises(UsageError, match="http:// or https://"):
        post_webhook("ftp://x", {})
    with pytest.raises(UsageError) as err:
        post_webhook("http://127.0.0.1:9/hook?token=s3cret", {}, timeout=2)
    assert "s3cret" not in str(err.value)


@pytest.mark.parametrize(("index_type", "n"), [("IVF_PQ", 2000), ("IVF_HNSW_SQ", 2000),
                                              ("IVF_PQ", 200)])  # under 256 rows: one list
def test_reindex_switches_and_rollback_restores(tmp_path: Path, index_type: str, n: int) -> None:
    store, data = small_store(tmp_path / "s", index_type=index_type, n=n)
    probes = ProbeSet("p", "1", vectors=data.queries)
    lx = LanceIndex(store)
    old = lx.state()
    assert old is not None and old.trained_at is not None
    before = [h.ids for h in store.search(data.queries, 10)]
    # any recall, any loss against the live index: this test is about the switch and rollback
    result = reindex(store, probes, k=10, floor=0.0, max_recall_loss=1.0)
    assert result.switched and int(result.version) > int(result.built_on_version)
    new = lx.state()
    assert new is not None and new.uuids != old.uuids
    assert new.unindexed_rows == old.unindexed_rows  # (LanceDB indexes no row of a tiny IVF_PQ)
    # the switched index answers what the verified candidate answered
    assert recall_vs_exact(store, data.queries, 10)[0].mean() == pytest.approx(
        result.recall_candidate)
    done = rollback(store)
    # LanceDB itself lists exactly the old index again, and searching through it answers as
    # before (an index it ignored would list nothing and scan every row)
    listed = LanceStore.open(store.uri)._engine().list_indices()
    assert [i.index_uuid for i in listed] == list(old.uuids)
    assert [h.ids for h in store.search(data.queries, 10)] == before
    restored = lx.state()
    assert restored is not None and restored.uuids == old.uuids
    assert restored.trained_at == old.trained_at  # its age is its own, not the rollback's
    assert index_problem(store) is None and done["version"] == store.current_version()
    report = run_monitor(store, probes, k=10, floor=0.0)
    assert report.alarms == () and report.index is not None
    assert report.index["built_at"] == old.trained_at.isoformat()
    with pytest.raises(StoreError, match="no previous index"):
        rollback(store)


def _as_before_the_fix(store: LanceStore, previous: IndexState) -> None:
    """The rollback commit recallwatch made before it kept the index details: the old index's
    segments re-added without them, replacing the live index."""
    import lance
    from lance.bitmap import Bitmap
    from lance.dataset import Index

    lx = LanceIndex(store)
    ds, live = lx.dataset(), lx.state()
    assert live is not None

    def bare(state: IndexState) -> list[Index]:
        return [Index(uuid=s["uuid"], name=state.name, fields=s["fields"],
                      dataset_version=s["dataset_version"], fragment_ids=Bitmap(s["fragment_ids"]),
                      index_version=s["index_version"]) for s in state.segments]

    op = lance.LanceOperation.CreateIndex(new_indices=bare(previous), removed_indices=bare(live))
    lance.LanceDataset.commit(ds, op, read_version=ds.version)


def test_monitor_alarms_on_an_index_lancedb_ignores_and_reindex_repairs_it(
    tmp_path: Path,
) -> None:
    store, data = small_store(tmp_path / "s", n=200)
    probes = ProbeSet("p", "1", vectors=data.queries)
    previous = LanceIndex(store).state()
    assert previous is not None
    assert reindex(store, probes, k=10, floor=0.0).switched
    _as_before_the_fix(store, previous)
    assert store._table().list_indices() == []  # type: ignore[union-attr]
    report = run_monitor(store, probes, k=10, floor=0.0)  # recall alone looks perfect
    assert report.recall == 1.0 and report.index is None
    assert report.alarms == ("the vector index 'vector_idx' is unusable: LanceDB does not list "
                             "it (it cannot read its entry), so every search scans all rows; "
                             "`recallwatch ops reindex` builds a new one",)
    np.save(tmp_path / "p.npy", data.queries)
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                                   str(tmp_path / "p.npy"), "--floor", "0", "--no-history"])
    assert out.exit_code == 1, out.output
    assert "\nALARM: the vector index 'vector_idx' is unusable: LanceDB does not list it" in \
        out.stdout
    assert reindex(store, probes, k=10, floor=0.0).switched
    assert len(store._table().list_indices()) == 1  # type: ignore[union-attr]
    assert run_monitor(store, probes, k=10, floor=0.0).alarms == ()


def test_monitor_alarms_when_the_live_index_cannot_answer(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    for files in (tmp_path / "s" / "t.lance" / "_indices").iterdir():
        shutil.rmtree(files)
    np.save(tmp_path / "p.npy", data.queries)
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                                   str(tmp_path / "p.npy"), "--floor", "0", "--no-history"])
    assert out.exit_code == 1, out.output
    alarms = [line for line in out.stdout.splitlines() if line.startswith("ALARM: ")]
    assert alarms[0].startswith("ALARM: the vector index cannot be read: its files are damaged "
                                "or missing (Failed to get index statistics for index vector_idx")
    assert alarms[1].startswith(f"ALARM: the live search fails (40 of 40 probes): {store.uri}: "
                                "search failed: lance error: ")
    assert "index.idx" in alarms[1] and ".rs:" not in out.stdout and "Traceback" not in out.output


@pytest.mark.parametrize("compaction", ["fold", "optimize"])
def test_index_age_is_the_time_it_was_trained(tmp_path: Path, compaction: str) -> None:
    store, data = small_store(tmp_path / "s")
    lx = LanceIndex(store)
    trained = lx.state()
    assert trained is not None and trained.trained_at is not None
    store.upsert([Chunk(id=f"new{i}", text="") for i in range(40)], data.queries)
    if compaction == "fold":  # what recallwatch's drift story runs: LanceDB's optimize_indices
        lx.fold_new_rows()
    else:  # LanceDB's own optimize: compaction and index folding
        store._engine().optimize()
    folded = lx.state()
    assert folded is not None and folded.uuids != trained.uuids  # the segments were rewritten
    assert folded.created_at is not None and folded.created_at > trained.trained_at
    assert folded.trained_version == trained.trained_version
    build = index_build(store)
    assert build is not None and build["built_at"] == trained.trained_at.isoformat()
    report = run_monitor(store, ProbeSet("p", "1", vectors=data.queries), floor=0.0,
                         now=trained.trained_at + timedelta(hours=2))
    assert report.index_age_seconds == 7200.0


def test_rows_written_between_build_and_switch_stay_searchable(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s")
    lx = LanceIndex(store)
    built_on, staged, candidate = lx.stage()
    candidate.close()
    late = np.asarray(-data.base[:5], dtype=np.float32)  # new rows, far from everything else
    store.upsert([Chunk(id=f"late{i}", text="") for i in range(5)], late)
    assert int(store.current_version()) > built_on
    lx.publish(staged)
    state = lx.state()
    assert state is not None and state.unindexed_rows == 5  # not in the new index: scanned exactly
    assert store.count() == 2005
    hits = store.search(late, 1)
    assert [h.ids[0] for h in hits] == [f"late{i}" for i in range(5)]


def test_reindex_needs_an_index_and_a_lance_store(tmp_path: Path) -> None:
    store, data = small_store(tmp_path / "s", indexed=False)
    with pytest.raises(UsageError, match=r"no vector index to rebuild: its 2,000 rows are below "
                       r"index_threshold \(1,000,000\), so every search is exact"):
        reindex(store, ProbeSet("p", "1", vectors=data.queries))
