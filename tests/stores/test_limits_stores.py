"""The policy's ranking and cost limits on real indexes of the example knowledge base: LanceDB with
an ANN index and pgvector (HNSW). A store whose ranking is permuted (each query's top 10 in
reverse order, so recall is unchanged) is blocked by max_drop and targets against the last
accepted run in the history; every run records what it cost, index bytes included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.embedders import get_embedder
from recallwatch.embedders.base import Embedder
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import load_policy
from recallwatch.history import record_gate_run
from recallwatch.ops.ingest import ingest
from recallwatch.stores.base import Hits, SupportsIndexSize, VectorStore

from .conftest import PostgresServer

pytestmark = pytest.mark.slow

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
POLICY = """\
top_k: 10
noise_ceiling: 0.9
other_failures_allowed: 0.1
targets:
  nDCG@10: 0.6
max_drop:
  nDCG@10: 0.02
  RR: 0.02
max_cost_increase: 100      # generous: timings on a shared machine are not the point here
"""


class Reversed:
    """A real store whose answers come back in a worse order: each query's top 10 reversed
    (the scores stay in rank order). The same chunks, so the same recall; a lower nDCG."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, vectors: np.ndarray, k: int, **kw: Any) -> list[Hits]:
        out = []
        for h in self.inner.search(vectors, k, **kw):
            ids = list(h.ids)
            out.append(Hits(ids[:10][::-1] + ids[10:], h.scores))
        return out


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


def _ingested(store: VectorStore, embedder: Embedder) -> VectorStore:
    for part in ("corpus_v1.jsonl", "fix_v2.jsonl"):
        ingest(KB / part, store, embedder, embedder_spec="use-multilingual")
    return store


def _blocked(store: VectorStore, embedder: Embedder, tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(POLICY, encoding="utf-8")
    golden, policy = load_golden(KB / "golden.yaml"), load_policy(tmp_path / "policy.yaml")
    history = tmp_path / "history.db"
    base = record_gate_run(run_gate(golden, store=store, embedder=embedder, policy=policy,
                                    latency_sample=400), history)  # a p99's worth of calls
    assert base.verdict == "ACCEPT", base.reasons
    assert base.cost is not None and base.cost["queries"] == len(golden.queries)
    assert base.cost["calls"] == 400 and len(base.cost["samples"]["search_ms"]) == 400
    assert isinstance(store, SupportsIndexSize) and base.cost["index_bytes"] > 0
    assert base.cost["search_p99_ms"] >= base.cost["search_p50_ms"] > 0
    lowered = record_gate_run(run_gate(golden, store=Reversed(store), embedder=embedder,
                                       policy=policy), history)  # type: ignore[arg-type]
    assert lowered.aggregate.mean_recall == base.aggregate.mean_recall
    assert lowered.aggregate.mean_ndcg < base.aggregate.mean_ndcg
    assert lowered.verdict == "STOP"
    assert "max_drop" in {r.rule for r in lowered.reasons}
    drop = next(c for c in lowered.checks if c.rule == "max_drop" and c.subject == "nDCG@10")
    assert drop.status == "stop" and drop.figures["baseline_run"] == base.run_id
    costs = lowered.comparison["last_accepted"]["cost"]  # type: ignore[index]
    assert costs["index_bytes"]["old"] == costs["index_bytes"]["new"] > 0


def test_lancedb_with_an_ann_index(tmp_path: Path, embedder: Embedder) -> None:
    from recallwatch.stores import open_store

    store = open_store(f"lancedb://{tmp_path}/kb?table=chunks&index_threshold=100",
                       create=True)
    try:
        _ingested(store, embedder)
        assert store.index_state() is not None  # type: ignore[attr-defined]
        _blocked(store, embedder, tmp_path)
    finally:
        store.close()


@pytest.fixture
def pg_store(postgres_server: PostgresServer, pg_env: None) -> Iterator[VectorStore]:
    pytest.importorskip("psycopg", reason="pip install 'recallwatch[pgvector]'")
    from recallwatch.stores.pgvector import PgVectorStore

    store = PgVectorStore(postgres_server.uri("limits_kb"), create=True)
    try:
        yield store
    finally:
        store.close()


def test_pgvector_hnsw(pg_store: VectorStore, embedder: Embedder, tmp_path: Path) -> None:
    _blocked(_ingested(pg_store, embedder), embedder, tmp_path)
