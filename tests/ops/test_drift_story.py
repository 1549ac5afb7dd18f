"""The chapter's drift story on a real LanceDB IVF-PQ index.

An index is trained on old topics; new topics arrive and are folded into it with its old centroids
and codebook (what LanceDB's optimize() does) → the monitor alarms and the drift signal moves;
reindex (verified on a detached version, switched in one commit) restores recall while threads
keep querying (zero errors, zero empty or partial answers); rollback puts the old index back.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.bench.datasets import topic_collection
from recallwatch.history import History
from recallwatch.ops.budget import BudgetPolicy
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.reindex import reindex, rollback
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.index import LanceIndex
from recallwatch.stores.lancedb.store import LanceStore

DIM, OLD, WAVE, K = 64, 8000, 1500, 10
# IVF-PQ as LanceStore builds it (31 lists, 4 sub-vectors at this size), 8 lists probed, the
# default refine factor of 10: on the old topics its recall vs exact is ~0.8.
FLOOR = 0.75


@dataclass
class Drifted:
    uri: str
    path: Path
    old_probes: np.ndarray
    new_probes: np.ndarray


def chunks(prefix: str, n: int) -> list[Chunk]:
    return [Chunk(id=f"{prefix}{i:05d}", text=f"{prefix} {i}") for i in range(n)]


def uri_of(path: Path) -> str:
    return f"lancedb://{path}?table=kb&index_type=IVF_PQ&nprobes=8&index_threshold={OLD}"


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> Drifted:
    path = tmp_path_factory.mktemp("drift")
    rng = np.random.default_rng(18)
    old_centres = rng.standard_normal((20, DIM)) * 3
    store = LanceStore.open(uri_of(path), create=True)
    store.upsert(chunks("old", OLD), topic_collection(old_centres, OLD, rng))  # builds the index
    assert store.has_index()
    return Drifted(uri_of(path), path, topic_collection(old_centres, 100, rng),
                   np.empty((0, DIM), np.float32))


def add_new_topics(d: Drifted, rng: np.random.Generator) -> None:
    """Two waves of new, diffuse topics, each folded into the index trained on the old ones."""
    store = LanceStore.open(d.uri)
    probes = []
    for wave in range(2):
        centres = rng.standard_normal((10, DIM))  # a new kind of content: other directions
        store.upsert(chunks(f"new{wave}_", WAVE), topic_collection(centres, WAVE, rng))
        LanceIndex(store).fold_new_rows()
        probes.append(topic_collection(centres, 50, rng))
    d.new_probes = np.vstack(probes)


def hammer(uri: str, queries: np.ndarray, stop: threading.Event, minimum: int,
           out: dict[str, list[Any]]) -> None:
    """Query until told to stop and at least ``minimum`` queries ran; record every failure."""
    store = LanceStore.open(uri)
    rng = np.random.default_rng(threading.get_ident() % 2**32)
    done = 0
    while not stop.is_set() or done < minimum:
        q = queries[rng.integers(len(queries))]
        start = time.monotonic()
        try:
            hits = store.search(q[None, :], K)[0]
        except Exception as exc:  # the assertion is that this never happens
            out["errors"].append(repr(exc))
        else:
            if len(hits.ids) != K or len(set(hits.ids)) != K:
                out["partial"].append(len(hits.ids))
        done += 1
        out["spans"].append((start, time.monotonic()))


@pytest.mark.slow
def test_monitor_alarms_on_drift_and_reindex_restores_recall(drifted: Drifted,
                                                             tmp_path: Path) -> None:
    history = History(tmp_path / "h.db")
    budget = BudgetPolicy(target=FLOOR, slo=0.5, window_runs=4)
    store = LanceStore.open(drifted.uri)

    healthy = run_monitor(store, ProbeSet("old", "1", vectors=drifted.old_probes), k=K,
                          floor=FLOOR, budget=budget, history=history)
    assert healthy.recall >= FLOOR, healthy.recall
    assert not healthy.alarm
    assert healthy.drift is None  # nothing written since the index was trained

    add_new_topics(drifted, np.random.default_rng(5))
    mixed = np.vstack([drifted.old_probes, drifted.new_probes])
    probes = ProbeSet("mixed", "1", vectors=mixed)
    alarm = run_monitor(store, probes, k=K, floor=FLOOR, budget=budget, history=history)
    assert alarm.alarm and alarm.recall < FLOOR, alarm.recall
    assert "under the floor" in alarm.alarms[0]
    assert alarm.drift is not None and alarm.drift.new_rows == 2 * WAVE
    # the new rows sit far from the trained distribution; the trained rows are the 5 % baseline
    assert alarm.drift.share_far > 5 * alarm.drift.baseline_share_far
    assert alarm.drift.mean_cosine_distance > 0.1
    assert alarm.latency_ms["p99"] >= alarm.latency_ms["p50"] > 0

    # reindex while four threads keep querying
    out: dict[str, list[Any]] = {"errors": [], "partial": [], "spans": []}
    stop = threading.Event()
    threads = [threading.Thread(target=hammer, args=(drifted.uri, mixed, stop, 500, out))
               for _ in range(4)]
    for t in threads:
        t.start()
    before_uuids = LanceIndex(store).state().uuids  # type: ignore[union-attr]
    while len(out["spans"]) < 40:  # every thread is up and querying the old index
        time.sleep(0.01)
    began = time.monotonic()
    result = reindex(store, probes, k=K, floor=FLOOR, history=history)
    ended = time.monotonic()
    stop.set()
    for t in threads:
        t.join()
    assert result.switched, result.reason
    assert result.recall_candidate >= FLOOR > result.recall_before
    assert LanceIndex(store).state().uuids != before_uuids  # type: ignore[union-attr]
    spans = out["spans"]
    assert len(spans) >= 2000
    assert out["errors"] == [] and out["partial"] == []
    # queries ran against the old index, all through the build and switch, and on the new one
    assert any(end < began for _, end in spans) and any(start > ended for start, _ in spans)
    assert sum(1 for start, end in spans if start < ended and end > began) > 100

    restored = run_monitor(store, probes, k=K, floor=FLOOR, budget=budget, history=history)
    assert restored.recall >= FLOOR and not any("under the floor" in a for a in restored.alarms)
    assert restored.drift is None  # the new index was trained on every row
    assert restored.index is not None and restored.index["kind"] == "reindex"
    assert restored.index_age_seconds is not None and restored.index_age_seconds < 600
    kinds = [r.kind for r in history.monitor_runs()]
    assert kinds.count("monitor") == 3 and kinds.count("reindex") == 1

    # rollback puts the drifted index back: recall falls again, and there is no second rollback
    rollback(store, history=history)
    assert LanceIndex(store).state().uuids == before_uuids  # type: ignore[union-attr]
    back = run_monitor(store, probes, k=K, floor=FLOOR)
    assert back.recall == pytest.approx(alarm.recall, abs=0.02)
    with pytest.raises(Exception, match="no previous index"):
        rollback(store)


@pytest.mark.slow
def test_reindex_that_misses_the_floor_does_not_switch(drifted: Drifted) -> None:
    store = LanceStore.open(drifted.uri)
    before = LanceIndex(store).state()
    version = store.current_version()
    probes = ProbeSet("old", "1", vectors=drifted.old_probes)
    result = reindex(store, probes, k=K, floor=1.0)  # PQ + refine 10 never reaches exact recall
    assert not result.switched and "not switched" in result.reason
    assert result.recall_candidate < 1.0
    assert LanceIndex(store).state() == before
    assert store.current_version() == version  # nothing was published
