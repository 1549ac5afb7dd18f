"""The monitor's ground truth on Ray: the store's rows scanned in shards, each shard scored by a
Ray task, the shards' top-k merged. It must be the single-process truth byte for byte (the
store's own exact search: ids, scores, ties by id), and so the monitor's report must not depend
on the engine.
One local Ray (2 CPUs) serves the module; pgvector (a real PostgreSQL) is in the slow suite."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.bench.datasets import synthetic
from recallwatch.cli import app
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.recall import recall_vs_exact, store_exact
from recallwatch.stores import open_store
from recallwatch.stores.base import Chunk, SupportsVectorScan, VectorStore
from recallwatch.stores.lancedb.store import LanceStore
from tests.pg import PostgresServer

runner = CliRunner(env={"COLUMNS": "200"})
NOW = datetime(2026, 12, 1, 8, 0, tzinfo=UTC)
N = 2000


def indexed_store(path: Path, base: np.ndarray, *, seed: int = 5) -> LanceStore:
    """An IVF_PQ store searched with 2 lists and a small refine (the live index misses some
    neighbours), its rows written in a shuffled order: the scan's order is not the ids'."""
    store = LanceStore.open(f"lancedb://{path}?table=t&index_type=IVF_PQ&nprobes=2"
                            f"&refine_factor=2&index_threshold={len(base) // 2}", create=True)
    order = np.random.default_rng(seed).permutation(len(base))
    store.upsert([Chunk(id=f"c{i:05d}", text="") for i in order], base[order])
    return store


def scanned(store: VectorStore, rows: int) -> tuple[list[str], np.ndarray]:
    """Every (id, vector) row the scan gives, in id order."""
    assert isinstance(store, SupportsVectorScan)
    parts = list(store.scan_vectors(rows))
    assert all(len(ids) <= rows for ids, _ in parts)
    ids = [i for part, _ in parts for i in part]
    vectors = np.concatenate([v for _, v in parts])
    order = sorted(range(len(ids)), key=ids.__getitem__)
    return [ids[i] for i in order], vectors[order]


def same_truth(store: VectorStore, queries: np.ndarray, k: int, shard_rows: int, *,
               same_arithmetic: bool = True) -> None:
    """The Ray shard truth is the store's own exact search: the same ids, and, for a store whose
    cosine is the LanceDB adapter's arithmetic (``same_arithmetic``), the same scores byte for
    byte. pgvector computes its cosine in PostgreSQL: its scores differ in their last bits."""
    from recallwatch.scale.ray_exact_knn import store_truth

    names, _ = scanned(store, shard_rows)
    assert len(names) == store.count() and len(set(names)) == len(names)
    one = store.search(queries, k, exact=True)
    many = store_truth(store, queries, k, shard_rows=shard_rows, workers=2)
    assert many.ids == [h.ids for h in one]
    depth = min(k, len(names))
    theirs = np.stack([h.scores for h in one])
    if same_arithmetic:
        assert many.scores[:, :depth].tobytes() == theirs.tobytes()
    else:
        np.testing.assert_allclose(many.scores[:, :depth], theirs, rtol=0, atol=1e-6)


def report_without_timings(report: dict[str, Any]) -> dict[str, Any]:
    out = dict(report)
    for key in ("latency_ms", "latency", "created_at", "monitor_id"):
        out.pop(key)
    return out


@pytest.fixture
def lance(tmp_path: Path) -> Iterator[tuple[LanceStore, np.ndarray]]:
    data = synthetic(N, 16, topics=8, queries=40, seed=1)
    store = indexed_store(tmp_path / "s", data.base)
    try:
        yield store, data.queries
    finally:
        store.close()


def test_shard_truth_is_the_single_process_truth_ties_included(
        local_ray: ModuleType, tmp_path: Path) -> None:
    rng = np.random.default_rng(11)
    # small integers: many exactly equal cosines, so ties fall across shards and inside them
    ties = rng.integers(-2, 3, size=(900, 8)).astype(np.float32)
    ties[ties.sum(axis=1) == 0, 0] = 1  # no zero row (a zero vector has no direction)
    store = indexed_store(tmp_path / "ties", ties)
    try:
        queries = rng.integers(-2, 3, size=(25, 8)).astype(np.float32)
        queries[np.abs(queries).sum(axis=1) == 0, 0] = 1
        for k in (1, 10, 40):
            same_truth(store, queries, k, shard_rows=128)  # 8 shards, the last short
    finally:
        store.close()


def test_shard_truth_is_the_stores_exact_search(
        local_ray: ModuleType, lance: tuple[LanceStore, np.ndarray]) -> None:
    from recallwatch.scale.ray_exact_knn import RayExactSearch, scan_rows

    store, queries = lance
    same_truth(store, queries, 10, shard_rows=300)  # 7 shards
    on_ray = RayExactSearch(shard_rows=300, workers=2)
    assert on_ray(store, queries, 10) == store_exact(store, queries, 10)
    # k past the rows: every row, in the store's order, as the store clamps k
    deep = on_ray(store, queries[:3], N + 5)
    assert deep == store_exact(store, queries[:3], N + 5)
    assert all(len(row) == N for row in deep)
    # the fallback for adapters without a scan (ids, then their vectors) gives the same rows
    ids, vectors = scanned(store, 300)
    fallback = list(scan_rows(_NoScan(store), 300))
    assert [i for part, _ in fallback for i in part] == ids
    assert np.concatenate([v for _, v in fallback]).tobytes() == vectors.tobytes()
    # and the recall per probe is the same, probe by probe
    local, _, _ = recall_vs_exact(store, queries, 10)
    ray, _, _ = recall_vs_exact(store, queries, 10, exact=on_ray)
    assert local.tobytes() == ray.tobytes() and local.mean() < 1.0


class _NoScan:
    """A store seen through the VectorStore protocol and SupportsVectors only."""

    def __init__(self, store: LanceStore) -> None:
        self._store = store
        self.uri = store.uri

    def chunks(self) -> list[Chunk]:
        return self._store.chunks()

    def vectors(self, ids: list[str]) -> np.ndarray:
        return self._store.vectors(ids)


def test_monitor_on_ray_reports_what_the_local_monitor_reports(
        local_ray: ModuleType, lance: tuple[LanceStore, np.ndarray], tmp_path: Path) -> None:
    from recallwatch.scale.ray_exact_knn import RayExactSearch

    store, queries = lance
    probes = ProbeSet("p", "1", vectors=queries)
    one = run_monitor(store, probes, k=10, floor=0.99, now=NOW)
    many = run_monitor(store, probes, k=10, floor=0.99, now=NOW,
                       exact=RayExactSearch(shard_rows=300, workers=2))
    assert one.recall < 0.99 and one.alarm  # the index misses neighbours: a real alarm
    assert report_without_timings(many.to_dict()) == report_without_timings(one.to_dict())

    # through the CLI: the same JSON whichever engine computed the truth, the same exit code
    np.save(tmp_path / "probes.npy", queries)
    args = ["ops", "monitor", "--store", store.uri, "--probes", str(tmp_path / "probes.npy"),
            "--floor", "0.99", "--no-history", "--format", "json"]
    a = runner.invoke(app, args)
    b = runner.invoke(app, [*args, "--engine", "ray", "--workers", "2"])
    assert a.exit_code == b.exit_code == 1, b.output
    ra, rb = json.loads(a.stdout), json.loads(b.stdout)
    assert ra["recall"] == one.recall and ra["alarms"] == list(one.alarms)
    for d in (ra, rb):  # measured from the clock at each run, like the latencies
        assert d.pop("index_age_seconds") >= 0
    assert report_without_timings(ra) == report_without_timings(rb)


def test_reindex_on_ray_verifies_as_the_local_reindex(
        local_ray: ModuleType, lance: tuple[LanceStore, np.ndarray], tmp_path: Path) -> None:
    store, queries = lance
    store.close()
    shutil.copytree(tmp_path / "s", tmp_path / "copy")
    np.save(tmp_path / "probes.npy", queries)
    out = {}
    for name, extra in (("s", []), ("copy", ["--engine", "ray", "--workers", "2"])):
        uri = f"lancedb://{tmp_path / name}?table=t&nprobes=2&refine_factor=2"
        r = runner.invoke(app, ["ops", "reindex", "--store", uri, "--probes",
                                str(tmp_path / "probes.npy"), "--floor", "0.0",
                                "--max-recall-loss", "1", "--no-history", "--format", "json",
                                *extra])
        assert r.exit_code == 0, r.output
        out[name] = json.loads(r.stdout)
    # the new index is trained anew (its recall may differ from build to build); the live
    # index's recall is measured the same way by both engines
    assert out["s"]["recall_before"] == out["copy"]["recall_before"] < 1.0
    assert out["s"]["switched"] and out["copy"]["switched"]


def test_without_ray_monitor_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        lance: tuple[LanceStore, np.ndarray]) -> None:
    import sys

    store, queries = lance
    np.save(tmp_path / "probes.npy", queries)
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed: import ray fails
    for command in ("monitor", "reindex"):
        r = runner.invoke(app, ["ops", command, "--store", store.uri, "--probes",
                                str(tmp_path / "probes.npy"), "--no-history", "--engine", "ray"])
        assert r.exit_code == 2, r.output
        assert "pip install 'recallwatch[ray]'" in r.stderr and "Traceback" not in r.output
    r = runner.invoke(app, ["ops", "monitor", "--store", store.uri, "--probes",
                            str(tmp_path / "probes.npy"), "--no-history", "--workers", "2"])
    assert r.exit_code == 2
    assert r.stderr.strip() == "Error: --address and --workers only apply with --engine ray"


# -- pgvector: a real PostgreSQL ----------------------------------------------------------------

_tables = itertools.count()


@pytest.mark.slow  # starts a PostgreSQL server
def test_monitor_on_ray_over_pgvector(local_ray: ModuleType, postgres_server: PostgresServer,
                                      pg_env: None) -> None:
    from recallwatch.scale.ray_exact_knn import RayExactSearch
    from tests.ops.test_reindex_versioned import clustered

    # IVFFlat probing 1 list of 50: the live index misses neighbours, so recall is under 1
    uri = postgres_server.uri(f"raymon{next(_tables)}", "index=ivfflat&lists=50&probes=1")
    store = open_store(uri, create=True)
    try:
        chunks, vectors, queries = clustered()
        order = np.random.default_rng(2).permutation(len(chunks))
        store.upsert([chunks[i] for i in order], vectors[order])
        same_truth(store, queries, 10, shard_rows=300, same_arithmetic=False)
        probes = ProbeSet("p", "1", vectors=queries)
        one = run_monitor(store, probes, k=10, floor=0.99, now=NOW)
        many = run_monitor(store, probes, k=10, floor=0.99, now=NOW,
                           exact=RayExactSearch(shard_rows=300, workers=2))
        assert one.recall < 1.0
        assert report_without_timings(many.to_dict()) == report_without_timings(one.to_dict())
    finally:
        store.close()
