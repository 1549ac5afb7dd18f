"""ANN index files with a Parquet sidecar: ``faiss://DIR`` and ``hnswlib://DIR``.

Each version is two files in DIR: ``index__v<N>.parquet`` (the sidecar: every chunk field, the
ingested version and the raw vector, row i = index label i) and ``index__v<N>.g<G>.faiss`` /
``.hnsw`` (the HNSW graph over the normalised vectors, generation G). The sidecar is the source of
truth, replaced atomically on every write; the graph file of its generation is written after it,
and rebuilt from the sidecar if missing (a writer killed between the two loses nothing).
Pointers and metadata live in ``store.meta.json`` (one atomic file replace per change).

Query parameters: ``m``, ``ef_construction``, ``ef`` (search breadth, widened to k). Limits:
appends extend the graph in place, but an update or a delete rebuilds it (neither library deletes
from HNSW cleanly); ``exact=True`` ranks the sidecar vectors with numpy; one writing process.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from recallwatch._files import atomic_path
from recallwatch.errors import NotInstalledError, StoreError, UsageError
from recallwatch.stores._meta import MetaFile
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.arrow import vector_column, vectors_of
from recallwatch.stores.checks import NormFilter, chunk_matches
from recallwatch.stores.failures import missing_location
from recallwatch.stores.rows import CHUNK_FIELDS, Row
from recallwatch.stores.versioned import VersionedStore
from recallwatch.vectors import cosine_scores, normalise, top_k

__all__ = ["IndexFileStore"]

Engine = Literal["faiss", "hnswlib"]


class _Graph:
    """The two libraries behind one small interface: build, add, search, save, load."""

    def __init__(self, engine: Engine, dim: int, m: int, ef_construction: int) -> None:
        self.engine, self.dim, self.m, self.efc = engine, dim, m, ef_construction
        self._faiss: Any = None
        self._hnswlib: Any = None
        try:
            if engine == "faiss":
                import faiss

                self._faiss = faiss
                self.index: Any = faiss.IndexHNSWFlat(dim, m, faiss.METRIC_INNER_PRODUCT)
                self.index.hnsw.efConstruction = ef_construction
            else:
                import hnswlib

                self._hnswlib = hnswlib
                self.index = hnswlib.Index(space="ip", dim=dim)
                self.index.init_index(max_elements=1024, M=m, ef_construction=ef_construction)
        except ImportError as exc:
            raise NotInstalledError(f"the {engine} index-file adapter ({exc.name})",
                                    "bench") from exc

    def add(self, vectors: np.ndarray, start: int) -> None:
        if not len(vectors):
            return
        if self.engine == "faiss":
            self.index.add(normalise(vectors))
            return
        need = start + len(vectors)
        if need > self.index.get_max_elements():
            self.index.resize_index(max(need, 2 * self.index.get_max_elements()))
        self.index.add_items(normalise(vectors), np.arange(start, need))

    def search(self, q: np.ndarray, k: int, ef: int, allowed: np.ndarray | None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Labels (-1 = none) and inner products of the unit query, shape (len(q), k)."""
        q = normalise(q)
        if self.engine == "faiss":
            sel = None if allowed is None else self._faiss.IDSelectorBatch(allowed.astype("int64"))
            params = self._faiss.SearchParametersHNSW(efSearch=max(ef, k), sel=sel)
            scores, labels = self.index.search(q, k, params=params)
            return labels, scores
        self.index.set_ef(max(ef, k))
        keep = None if allowed is None else set(allowed.tolist())
        only = None if keep is None else keep.__contains__
        try:
            labels, dists = self.index.knn_query(q, k=k, filter=only)
        except RuntimeError:
            labels, dists = self._search_each(q, k, only)
        return labels.astype(np.int64), 1.0 - dists

    def _search_each(self, q: np.ndarray, k: int, only: Any) -> tuple[np.ndarray, np.ndarray]:
        """hnswlib refuses a batch when its graph reaches fewer than k points for one query (a
        weak graph, or a filter that leaves few): search query by query, each for as many as the
        graph reaches, and pad with label -1 (none) as faiss does, so a weak index measures as
        the recall it gives instead of an error."""
        labels = np.full((len(q), k), -1, dtype=np.int64)
        dists = np.full((len(q), k), np.inf, dtype=np.float32)
        for row, vector in enumerate(q):
            for take in range(k, 0, -1):
                try:
                    found, far = self.index.knn_query(vector[None, :], k=take, filter=only)
                except RuntimeError:
                    continue
                labels[row, :take], dists[row, :take] = found[0], far[0]
                break
        return labels, dists

    def save(self, path: Path) -> None:
        with atomic_path(path) as tmp:
            if self.engine == "faiss":
                self._faiss.write_index(self.index, str(tmp))
            else:
                self.index.save_index(str(tmp))

    def load(self, path: Path, count: int) -> None:
        if self.engine == "faiss":
            self.index = self._faiss.read_index(str(path))
        else:
            # into a fresh Index: loading into the initialised one prints a warning on stderr
            self.index = self._hnswlib.Index(space="ip", dim=self.dim)
            self.index.load_index(str(path), max_elements=max(count, 1024))


@dataclass
class _Version:
    rows: list[Row]
    vectors: np.ndarray
    graph: _Graph
    generation: int
    where: dict[str, int] = field(default_factory=dict)


_META_FILE = "store.meta.json"  # pointers and metadata: written with the first version


def _is_index_store(path: Path) -> bool:
    return (path / _META_FILE).is_file()


class IndexFileStore(VersionedStore):
    native_exact = False

    def __init__(self, uri: str, *, create: bool = False) -> None:
        parsed = parse_store_uri(uri)
        shown = redact(uri)
        if parsed.scheme not in ("faiss", "hnswlib"):
            raise UsageError(f"store URI {shown!r}: expected faiss://DIR or hnswlib://DIR")
        if not parsed.path:
            raise UsageError(f"store URI {shown!r}: missing directory")
        self.engine: Engine = "faiss" if parsed.scheme == "faiss" else "hnswlib"
        params = {}
        for name, default in (("m", 16), ("ef_construction", 64), ("ef", 64)):
            raw = parsed.param(name, str(default)) or ""
            if not raw.isdigit() or int(raw) < 1:
                raise UsageError(f"store URI {shown!r}: {name} must be a positive integer, "
                                 f"found {raw!r}")
            params[name] = int(raw)
        self.m, self.ef_construction, self.ef = params["m"], params["ef_construction"], params["ef"]
        self.dir = Path(parsed.path)
        if not create and not _is_index_store(self.dir):
            raise missing_location(shown, f"{self.engine} index", self.dir, _is_index_store)
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{shown}: cannot create {self.dir}: {exc.strerror}") from None
        self._metafile = MetaFile(self.dir / _META_FILE)
        self._cache: dict[str, _Version] = {}
        self._lock = threading.RLock()
        super().__init__(shown, "index")

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> IndexFileStore:
        return cls(uri, create=create)

    # ---- files -------------------------------------------------------------------------------
    def _suffix(self) -> str:
        return "faiss" if self.engine == "faiss" else "hnsw"

    def _graph_path(self, table: str, generation: int) -> Path:
        return self.dir / f"{table}.g{generation}.{self._suffix()}"

    def _new_graph(self) -> _Graph:
        return _Graph(self.engine, int(self._state["dim"]), self.m, self.ef_construction)

    def _load(self, table: str) -> _Version:
        with self._lock:
            if table in self._cache:
                return self._cache[table]
            path = self.dir / f"{table}.parquet"
            try:
                data = pq.read_table(path)
            except (OSError, pa.ArrowInvalid) as exc:
                raise StoreError(f"{self._uri}: cannot read sidecar {path}: {exc}") from None
            generation = int((data.schema.metadata or {}).get(b"generation", b"0"))
            vectors = vectors_of(data.column("vector"), int(self._state["dim"]))
            rows = data.drop_columns(["vector"]).to_pylist()
            graph = self._new_graph()
            graph_path = self._graph_path(table, generation)
            if graph_path.exists():
                graph.load(graph_path, len(rows))
            else:  # killed between the sidecar and the graph: rebuild from the sidecar
                graph.add(vectors, 0)
                graph.save(graph_path)
            version = _Version(rows, vectors, graph, generation)
            version.where = {r["id"]: i for i, r in enumerate(rows)}
            self._cache[table] = version
            return version

    def _save(self, table: str, version: _Version, rebuilt: bool) -> None:
        if rebuilt:
            version.graph = self._new_graph()
            version.graph.add(version.vectors, 0)
        version.generation += 1
        version.where = {r["id"]: i for i, r in enumerate(version.rows)}
        columns: dict[str, Any] = {
            f: pa.array([r.get(f) for r in version.rows], type=pa.string())
            for f in CHUNK_FIELDS}
        columns["ingested_version"] = pa.array(
            [int(r["ingested_version"]) for r in version.rows], type=pa.int64())
        columns["vector"] = vector_column(
            version.vectors.reshape(len(version.rows), int(self._state["dim"])))
        table_data = pa.table(columns).replace_schema_metadata(
            {"generation": str(version.generation)})
        path = self.dir / f"{table}.parquet"
        with atomic_path(path) as tmp:  # the sidecar is the commit point
            pq.write_table(table_data, tmp)
        version.graph.save(self._graph_path(table, version.generation))
        for old in self.dir.glob(f"{table}.g*.{self._suffix()}"):
            if old.name != self._graph_path(table, version.generation).name:
                old.unlink(missing_ok=True)

    # ---- engine primitives -------------------------------------------------------------------
    def _create_table(self, table: str, dim: int) -> None:
        with self._lock:
            self._state["dim"] = dim
            version = _Version([], np.zeros((0, dim), dtype=np.float32), self._new_graph(), -1)
            self._cache[table] = version
            self._save(table, version, rebuilt=False)

    def _drop_table(self, table: str) -> None:
        with self._lock:
            self._cache.pop(table, None)
            for path in self.dir.glob(f"{table}.*"):
                path.unlink(missing_ok=True)

    def _copy_table(self, src: str, dst: str, dim: int) -> None:
        with self._lock:
            old = self._load(src)
            copy = _Version([dict(r) for r in old.rows], old.vectors.copy(), old.graph, -1)
            self._cache[dst] = copy
            self._save(dst, copy, rebuilt=True)

    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        with self._lock:
            version = self._load(table)
            fresh = [i for i, r in enumerate(rows) if r["id"] not in version.where]
            replaced = [i for i, r in enumerate(rows) if r["id"] in version.where]
            for i in replaced:
                at = version.where[rows[i]["id"]]
                version.rows[at] = rows[i]
                version.vectors[at] = vectors[i]
            start = len(version.rows)
            version.rows.extend(rows[i] for i in fresh)
            version.vectors = np.concatenate([version.vectors, vectors[fresh]])
            if not replaced:
                version.graph.add(vectors[fresh], start)
            self._save(table, version, rebuilt=bool(replaced))

    def _remove(self, table: str, ids: Sequence[str]) -> None:
        with self._lock:
            version = self._load(table)
            gone = {i for i in ids if i in version.where}
            if not gone:
                return
            keep = [i for i, r in enumerate(version.rows) if r["id"] not in gone]
            version.rows = [version.rows[i] for i in keep]
            version.vectors = version.vectors[keep]
            self._save(table, version, rebuilt=True)

    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        with self._lock:
            version = self._load(table)
            allowed = None if filter is None else np.asarray(
                [i for i, r in enumerate(version.rows) if chunk_matches(r, filter)], dtype=np.int64)
            size = len(version.rows) if allowed is None else len(allowed)
            if size == 0:
                return [([], []) for _ in vectors]
            if exact:
                pos = np.arange(len(version.rows)) if allowed is None else allowed
                ids = [version.rows[i]["id"] for i in pos]
                scores = cosine_scores(vectors, version.vectors[pos])
                return [(found, best.tolist())
                        for found, best in (top_k(ids, s, k) for s in scores)]
            labels, scores = version.graph.search(vectors, min(k, size), self.ef, allowed)
            return [
                ([version.rows[int(i)]["id"] for i in row if i >= 0],
                 [float(s) for i, s in zip(row, srow, strict=True) if i >= 0])
                for row, srow in zip(labels, scores, strict=True)
            ]

    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        with self._lock:
            version = self._load(table)
            pos = [version.where[i] for i in dict.fromkeys(ids) if i in version.where]
            return [version.rows[i] for i in pos], version.vectors[pos]

    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        with self._lock:
            version = self._load(table)
            wanted = None if doc_ids is None else set(doc_ids)
            pos = [i for i, r in enumerate(version.rows)
                   if wanted is None or r.get("doc_id") in wanted]
            return [version.rows[i] for i in pos], version.vectors[pos]

    def _count(self, table: str) -> int:
        return len(self._load(table).rows)

    def _meta_get(self, key: str) -> Any:
        return self._metafile.get(key)

    def _meta_set(self, key: str, value: Any) -> None:
        self._metafile.set(key, value)

    def _meta_lock(self) -> contextlib.AbstractContextManager[Any]:
        return self._metafile.locked()
