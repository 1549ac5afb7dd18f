"""Builders for history tests: gate results from hand-written rankings (no store), and a tiny
real LanceDB knowledge base for "who buried it" and promote."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.history._backend import Backend, SQLiteBackend, is_postgresql
from recallwatch.stores.base import VectorStore
from tests.acceptance.helpers import ranked

# The noise rule is not under test here; a ceiling of 1 keeps it out of the way.
LENIENT = Policy(noise_ceiling=1.0)


def timed_cost(seed: int = 0, calls: int = 400, *, baseline: str | None = None
               ) -> dict[str, Any]:
    """The cost of a run on a store with ``calls`` injected per-call timings (a log-normal
    around 2 ms), embedding calls, and with ``baseline`` (a run id) the baseline's index timed
    interleaved."""
    from recallwatch.acceptance.cost import measure_cost
    from recallwatch.acceptance.retrieve import Timings

    rng = np.random.default_rng(seed)
    t = Timings(embed=0.05, embedded=20, timed_queries=20,
                search_each=list(0.002 * rng.lognormal(0.0, 0.35, calls)),
                embed_each=list(0.001 * rng.lognormal(0.0, 0.2, 100)))
    if baseline is not None:
        t.baseline_each = list(0.002 * rng.lognormal(0.0, 0.35, calls))
        t.baseline = {"run_id": baseline, "version": "3"}
    cost = measure_cost(t, 4096)
    assert cost is not None
    return cost


def golden_set(n: int = 20, *, domains: Sequence[str] = (), top_k: int = 10,
               version: str = "1", name: str = "kb") -> GoldenSet:
    """Queries q00…, each expecting ``qNN_a`` and ``qNN_b`` (and a domain, cycling)."""
    queries: list[dict[str, Any]] = []
    for i in range(n):
        q: dict[str, Any] = {"id": f"q{i:02d}", "text": f"question {i}",
                             "expected": [f"q{i:02d}_a", f"q{i:02d}_b"]}
        if domains:
            q["domain"] = domains[i % len(domains)]
        queries.append(q)
    return GoldenSet.from_dict({"name": name, "version": version, "top_k": top_k,
                                "queries": queries})


def gate_run(g: GoldenSet, moved: dict[str, dict[str, int]] | None = None, *,
             policy: Policy = LENIENT) -> GateResult:
    """A gate run where the expected chunks sit at ranks 1, 2…, except ``moved``
    (``{query: {chunk: rank}}``)."""
    moved = moved or {}
    results = {}
    for q in g.queries:
        placed = {cid: i for i, cid in enumerate(q.expected, start=1)} | moved.get(q.id, {})
        results[q.id] = ranked(placed, n=30, prefix=f"{q.id}_other")
    return run_gate(g, results=results, policy=policy)


# -- a tiny real knowledge base --------------------------------------------------------------------

DIM = 16
TRAVEL_QUERY = "¿Qué percibos exige un desplazamiento internacional?"
LEAVE_QUERY = "¿Cuántos días de permiso retribuido corresponden?"


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def _axis(*weights: tuple[int, float]) -> np.ndarray:
    v = np.zeros(DIM)
    for i, w in weights:
        v[i] = w
    return _unit(v)


VECTORS: dict[str, np.ndarray] = {
    TRAVEL_QUERY: _axis((0, 1.0)),
    LEAVE_QUERY: _axis((10, 1.0)),
    "Tabla de perfiles y percibos del procedimiento de viajes": _axis((0, 1.0), (1, 0.5)),
    "Artículo 45: permisos retribuidos": _axis((10, 1.0), (11, 0.3)),
    **{f"Nota general {i}": _axis((0, 0.3), (2 + i, 1.0)) for i in range(8)},
    **{f"Nuevo procedimiento de viajes, parte {i}": _axis((0, 1.0), (12 + i, 0.3))
       for i in range(4)},
}


def toy_embed(texts: Sequence[str]) -> np.ndarray:
    """Known texts get their designed vector; any other text a fixed pseudo-random one."""
    rows = []
    for t in texts:
        if t in VECTORS:
            rows.append(VECTORS[t])
        else:
            seed = int.from_bytes(hashlib.sha256(t.encode()).digest()[:4], "little")
            rows.append(_unit(np.random.default_rng(seed).standard_normal(DIM)))
    return np.asarray(rows, dtype=np.float32)


def toy_embedder() -> Any:
    from recallwatch.embedders.function import CallableEmbedder

    return CallableEmbedder(toy_embed, name="toy", version="1", dimension=DIM)


BASE_CORPUS = [
    {"id": "tabla_perfiles", "text": "Tabla de perfiles y percibos del procedimiento de viajes",
     "domain": "viajes", "kind": "table",
     "description": "Perfiles de viajero y percibos exigidos por destino."},
    {"id": "art_45", "text": "Artículo 45: permisos retribuidos", "domain": "rrhh"},
    *({"id": f"nota_{i}", "text": f"Nota general {i}", "domain": "general"} for i in range(8)),
]
TRAVEL_CORPUS = [
    {"id": f"travel_{i:02d}", "text": f"Nuevo procedimiento de viajes, parte {i}",
     "domain": "viajes"} for i in range(4)
]

KB_GOLDEN = {
    "name": "despacho", "version": "3", "top_k": 3,
    "queries": [
        {"id": "q17", "text": TRAVEL_QUERY, "expected": ["tabla_perfiles"], "domain": "viajes",
         "tags": ["table"]},
        {"id": "q05", "text": LEAVE_QUERY, "expected": ["art_45"], "domain": "rrhh"},
    ],
}


def write_jsonl(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records),
                    encoding="utf-8")
    return path


@dataclass
class KB:
    dir: Path
    uri: str
    store: VectorStore
    embedder: Any
    golden: GoldenSet

    def ingest(self, records: list[dict[str, Any]], name: str) -> str:
        from recallwatch.ops.ingest import ingest

        ingest(write_jsonl(self.dir / f"{name}.jsonl", records), self.store, self.embedder)
        return self.store.current_version()

    def ingest_travel(self) -> str:
        """The chapter's Friday evening: the new travel procedure arrives."""
        return self.ingest(TRAVEL_CORPUS, "travel")

    def gate(self) -> GateResult:
        return run_gate(self.golden, store=self.store, embedder=self.embedder, policy=LENIENT)


@pytest.fixture
def kb(tmp_path: Path) -> Iterator[KB]:
    from recallwatch.stores import open_store

    uri = f"lancedb://{tmp_path}/kb?table=chunks"
    store = open_store(uri, create=True)
    base = KB(tmp_path, uri, store, toy_embedder(), GoldenSet.from_dict(KB_GOLDEN))
    base.ingest(BASE_CORPUS, "base")
    try:
        yield base
    finally:
        store.close()


# -- raw access to a history on either backend ---------------------------------------------

@contextmanager
def raw_backend(location: str | Path) -> Iterator[Backend]:
    """A connection to the history at ``location`` that migrates nothing and checks nothing
    (autocommit; ``?`` placeholders on both backends), for building old or broken histories."""
    if is_postgresql(str(location)):
        import psycopg

        from recallwatch.history._pg import PostgresBackend
        from recallwatch.stores._uri import parse_store_uri

        u = parse_store_uri(str(location))
        conn = psycopg.connect(host=u.host, port=u.port, user=u.username,
                               dbname=u.path.lstrip("/"), autocommit=True)
        db: Backend = PostgresBackend(str(location), conn, "public", None)
    else:
        db = SQLiteBackend(str(location), sqlite3.connect(location, isolation_level=None))
    try:
        yield db
    finally:
        db.close()
