"""PostgreSQL + pgvector: ``postgresql://USER@HOST:PORT/DB?table=NAME``.

Query parameters: ``index=hnsw|ivfflat|none`` (default hnsw), ``m``, ``ef_construction``,
``ef_search`` (HNSW), ``lists``, ``probes`` (IVFFlat), ``iterative_scan=on|off`` (default on;
off filters the index's candidates afterwards, pgvector's behaviour before 0.8),
``password_env=VAR`` (see _credentials).

Exactness: psycopg prepares a statement server-side after ``prepare_threshold`` executions and then
reuses its plan, so a ``SET enable_indexscan = off`` issued later would not change it. Exact
queries therefore order by an expression no index can serve, ``(embedding <=> q) + 0``, and are
sent unprepared: whatever the session settings or plan cache, PostgreSQL must scan every row.
Filtered ANN queries use pgvector's iterative scans so a selective filter still returns k rows.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import numpy as np

from recallwatch.errors import NotInstalledError, StoreError, UsageError
from recallwatch.stores._credentials import resolve_secret
from recallwatch.stores._uri import parse_store_uri, redact
from recallwatch.stores.acl import visible_sql
from recallwatch.stores.base import (
    Filter,
    Hits,
    SupportsAclFilter,
    SupportsFilteredSearch,
    SupportsIndexSize,
    SupportsQuantizedSearch,
    SupportsVectorScan,
)
from recallwatch.stores.checks import NormFilter, check_name, normalise_filter
from recallwatch.stores.failures import engine_message, missing_table
from recallwatch.stores.rows import CHUNK_FIELDS, Row
from recallwatch.stores.versioned import VersionedStore, store_names

try:
    import psycopg
    from pgvector.psycopg import register_vector
    from psycopg import sql
    from psycopg.types.json import Jsonb
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise NotInstalledError(f"the PostgreSQL adapter ({exc.name})", "pgvector") from exc

__all__ = ["PgVectorStore"]

IndexKind = Literal["hnsw", "ivfflat", "none"]

_COLUMNS = (*CHUNK_FIELDS, "ingested_version")
_ACL = "\x00acl"  # the key of the acl filter in a normalised filter (no column has this name)
_SELECT = sql.SQL(", ").join(sql.Identifier(c) for c in _COLUMNS)
# A write of at least this many rows drops the ANN index (rebuilt in bulk when next needed).
_BULK_ROWS = 1000
_MAX_EF_SEARCH = 1000  # the largest hnsw.ef_search pgvector accepts


def _int_param(uri: Any, name: str, default: int) -> int:
    raw = uri.param(name)
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"store URI {redact(uri.raw)!r}: {name} must be a positive integer, "
                         f"found {raw!r}")
    return int(raw)


class PgVectorStore(VersionedStore, SupportsVectorScan, SupportsAclFilter, SupportsIndexSize,
                    SupportsQuantizedSearch, SupportsFilteredSearch):
    scheme = "postgresql"
    _engine_errors = (psycopg.Error,)

    def __init__(self, uri: str, *, create: bool = False) -> None:
        parsed = parse_store_uri(uri)
        shown = redact(uri)
        name = check_name(parsed.param("table"), what="table", uri=shown)
        index = parsed.param("index", "hnsw")
        if index not in ("hnsw", "ivfflat", "none"):
            raise UsageError(f"store URI {shown!r}: index must be hnsw, ivfflat or none, "
                             f"found {index!r}")
        self.index: IndexKind = index  # type: ignore[assignment]
        self.m = _int_param(parsed, "m", 16)
        self.ef_construction = _int_param(parsed, "ef_construction", 64)
        self.ef_search = _int_param(parsed, "ef_search", 40)
        self.lists = _int_param(parsed, "lists", 100)
        self.probes = _int_param(parsed, "probes", 10)
        iterative = parsed.param("iterative_scan", "on")
        if iterative not in ("on", "off"):
            raise UsageError(f"store URI {shown!r}: iterative_scan must be on or off, "
                             f"found {iterative!r}")
        self._iterative_wanted = iterative == "on"
        secret = resolve_secret(parsed)
        # One connection serves every thread; transactions must not interleave on it.
        self._lock = threading.RLock()
        dbname = parsed.path.lstrip("/") or None
        present: list[str] | None = None
        try:
            self._conn = psycopg.connect(
                host=parsed.host or None, port=parsed.port, user=parsed.username, dbname=dbname,
                password=secret.value if secret else None, autocommit=True,
                application_name="recallwatch", connect_timeout=10,
            )
            if not create:
                present = self._missing(name)
            if present is None:
                self._open(name, create)
        except psycopg.Error as exc:
            if hasattr(self, "_conn"):
                self._conn.close()
            # libpq never echoes the password, but scrub it anyway: this text reaches logs.
            message = " ".join(str(exc).split())  # libpq's hint lines: one line for the user
            if secret and secret.value:
                message = message.replace(secret.value, "***")
            raise StoreError(f"{shown}: cannot connect to PostgreSQL: {message}") from None
        if present is not None:
            self._conn.close()
            raise missing_table(shown, "table", name, present)
        super().__init__(shown, name)

    def _missing(self, name: str) -> list[str] | None:
        """None when store ``name`` exists here, else the stores that do (read, never created)."""
        found = self._conn.execute("SELECT to_regclass(%s)", [f'"{name}__meta"']).fetchone()
        if found is not None and found[0] is not None:
            return None
        tables = self._conn.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p')"
            " AND pg_table_is_visible(oid)").fetchall()
        return store_names(str(t[0]) for t in tables)

    def _open(self, name: str, create: bool) -> None:
        if create:
            self._conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(self._conn)
        found = self._conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
        # Iterative index scans arrived in pgvector 0.8; older servers reject the setting.
        version = tuple(int(p) for p in str(found[0] if found else "0").split(".")[:2])
        self.iterative_scan = version >= (0, 8) and self._iterative_wanted
        if create:
            self._conn.execute(
                sql.SQL("CREATE TABLE IF NOT EXISTS {} (key text PRIMARY KEY, value jsonb)")
                .format(sql.Identifier(f"{name}__meta"))
            )

    @classmethod
    def open(cls, uri: str, *, create: bool = False) -> PgVectorStore:
        return cls(uri, create=create)

    def filter_strategy(self) -> str:
        if self.index == "none":
            return "exact: no ANN index, PostgreSQL scans the rows that pass the WHERE clause"
        if self.iterative_scan:
            return (f"iterative index scan: the {self.index.upper()} index is walked until k rows "
                    "pass the WHERE clause (pgvector hnsw.iterative_scan / "
                    "ivfflat.iterative_scan), so a selective filter still returns k rows")
        return (f"post-filter: the {self.index.upper()} index returns its candidates "
                f"(hnsw.ef_search = {self.ef_search} or k if larger, ivfflat.probes = "
                f"{self.probes}) and the "
                "WHERE clause then drops those that fail it, so a selective filter can return "
                "fewer than k rows")

    # ---- helpers -------------------------------------------------------------------------------
    def search_visible(self, vectors: np.ndarray, k: int, groups: Sequence[str], *,
                       filter: Filter | None = None, exact: bool = False) -> list[Hits]:
        return self._search(vectors, k, {**(normalise_filter(filter) or {}),
                                          _ACL: tuple(groups)}, exact)

    @staticmethod
    def _where(filter: NormFilter | None) -> tuple[sql.Composable, list[Any]]:
        if not filter:
            return sql.SQL(""), []
        # facets holds the facets' JSON text as a JSON string: #>> '{}' gives the text back
        parts = [sql.SQL(visible_sql("(facets #>> '{}')", v).replace("%", "%%"))
                 if k == _ACL else
                 sql.SQL("{} = ANY(%s)").format(sql.Identifier(k)) for k, v in filter.items()]
        params = [list(v) for k, v in filter.items() if k != _ACL]
        return sql.SQL(" WHERE ") + sql.SQL(" AND ").join(parts), params

    def _rows(self, query: sql.Composed, params: Sequence[Any]) -> tuple[list[Row], np.ndarray]:
        records = self._sql(query, params)
        rows = [dict(zip(_COLUMNS, r[:-1], strict=True)) for r in records]
        if not records:
            return rows, np.zeros((0, self._state["dim"] or 0), dtype=np.float32)
        return rows, np.stack([r[-1].to_numpy() for r in records]).astype(np.float32)

    def _sql(self, query: sql.Composed | sql.SQL | str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            cur = self._conn.execute(query, params)
            return cur.fetchall() if cur.description else []

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock, self._conn.transaction():
            yield

    def _atomic(self) -> contextlib.AbstractContextManager[None]:
        return self._tx()

    @contextlib.contextmanager
    def _meta_lock(self) -> Iterator[None]:
        # A transaction holding an advisory lock named after the store: every process and
        # connection updating this store's metadata waits for it (released at COMMIT).
        with self._tx():
            self._sql("SELECT pg_advisory_xact_lock(hashtext(%s))",
                      [f"recallwatch {self.name}__meta"])
            yield

    def _build_index_now(self) -> None:
        self.build_index()

    # ---- engine primitives -------------------------------------------------------------------
    def _create_table(self, table: str, dim: int) -> None:
        self._sql(sql.SQL(
            "CREATE TABLE IF NOT EXISTS {} (id text PRIMARY KEY, text text NOT NULL, content text,"
            " doc_id text, domain text, label text, facets jsonb, valid_from date, valid_to date,"
            " kind text, description text, content_hash text, ingested_version integer NOT NULL,"
            " embedding vector({}) NOT NULL)"
        ).format(sql.Identifier(table), sql.Literal(dim)))
        self._sql(sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (doc_id)").format(
            sql.Identifier(f"{table}_doc"), sql.Identifier(table)))
        # The ANN index is built later, in bulk (see _ensure_index).

    def _ensure_index(self, table: str) -> None:
        """Build the ANN index if it is missing: before the first ANN query and before a version
        becomes production. Inserting into HNSW row by row cost ~10 ms a row (384-d, measured),
        so large writes drop the index and it is rebuilt here in one bulk pass (for IVFFlat, this
        also trains the centroids on the data actually present)."""
        if self.index != "none" and not self._has_ann_index(table):
            self.build_index(table)

    def build_index(self, table: str | None = None) -> None:
        """(Re)build the ANN index of a version now (a reindex: IVFFlat centroids retrained)."""
        table = table or self._table()
        name = sql.Identifier(f"{table}_ann")
        if self.index == "none":
            return
        with self._tx():
            self._sql(sql.SQL("DROP INDEX IF EXISTS {}").format(name))
            if self.index == "hnsw":
                self._sql(sql.SQL(
                    "CREATE INDEX {} ON {} USING hnsw (embedding vector_cosine_ops)"
                    " WITH (m = {}, ef_construction = {})"
                ).format(name, sql.Identifier(table), sql.Literal(self.m),
                         sql.Literal(self.ef_construction)))
            else:
                self._sql(sql.SQL(
                    "CREATE INDEX {} ON {} USING ivfflat (embedding vector_cosine_ops)"
                    " WITH (lists = {})"
                ).format(name, sql.Identifier(table), sql.Literal(self.lists)))

    def index_bytes(self) -> int:
        """pg_relation_size of the version's ANN index (0 before it is built or with none)."""
        table = self._table()
        if not self._has_ann_index(table):
            return 0
        rows = self._sql("SELECT pg_relation_size(to_regclass(%s))", [f'"{table}_ann"'])
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def _has_ann_index(self, table: str) -> bool:
        rows = self._sql("SELECT to_regclass(%s)", [f'"{table}_ann"'])
        return bool(rows) and rows[0][0] is not None

    def _drop_table(self, table: str) -> None:
        self._sql(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))

    def _copy_table(self, src: str, dst: str, dim: int) -> None:
        with self._tx():
            self._create_table(dst, dim)
            self._sql(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(
                sql.Identifier(dst), sql.Identifier(src)))

    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        cols = [*_COLUMNS, "embedding"]
        query = sql.SQL(
            "INSERT INTO {t} ({cols}) VALUES ({vals}) ON CONFLICT (id) DO UPDATE SET {sets}"
        ).format(
            t=sql.Identifier(table),
            cols=sql.SQL(", ").join(sql.Identifier(c) for c in cols),
            vals=sql.SQL(", ").join(sql.Placeholder() for _ in cols),
            sets=sql.SQL(", ").join(
                sql.SQL("{c} = EXCLUDED.{c}").format(c=sql.Identifier(c)) for c in cols[1:]),
        )
        params = [
            [*(Jsonb(r[c]) if c == "facets" else r[c] for c in _COLUMNS), v]
            for r, v in zip(rows, vectors, strict=True)
        ]
        with self._tx(), self._conn.cursor() as cur:
            if len(rows) >= _BULK_ROWS:
                cur.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(
                    sql.Identifier(f"{table}_ann")))
            cur.executemany(query, params)

    def _remove(self, table: str, ids: Sequence[str]) -> None:
        self._sql(sql.SQL("DELETE FROM {} WHERE id = ANY(%s)").format(
            sql.Identifier(table)), [list(ids)])

    def exact_sql(self, table: str, filter: NormFilter | None, k: int) -> sql.Composed:
        """The exact top-k query (public so a test can EXPLAIN it)."""
        where, _ = self._where(filter)
        return sql.SQL(
            "SELECT id, 1 - (embedding <=> %s) FROM {}{} ORDER BY (embedding <=> %s) + 0, id"
            " LIMIT {}"
        ).format(sql.Identifier(table), where, sql.Literal(k))

    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        where, params = self._where(filter)
        if exact:
            query = self.exact_sql(table, filter, k)
        else:
            query = sql.SQL(
                "SELECT id, 1 - (embedding <=> %s) FROM {}{} ORDER BY embedding <=> %s LIMIT {}"
            ).format(sql.Identifier(table), where, sql.Literal(k))
        out = []
        if not exact:
            self._ensure_index(table)
        with self._tx(), self._conn.cursor() as cur:
            if not exact:
                # HNSW returns at most ef_search rows: widen it when the caller asks deeper, up to
                # pgvector's ceiling (beyond it the iterative scan continues the search).
                cur.execute("SELECT set_config('hnsw.ef_search', %s, true),"
                            " set_config('ivfflat.probes', %s, true)",
                            [str(min(max(self.ef_search, k), _MAX_EF_SEARCH)), str(self.probes)])
                if self.iterative_scan:
                    cur.execute("SELECT set_config('hnsw.iterative_scan', 'strict_order', true),"
                                " set_config('ivfflat.iterative_scan', 'relaxed_order', true)")
            for q in vectors:
                cur.execute(query, [q, *params, q], prepare=False if exact else None)
                found = cur.fetchall()
                out.append(([str(r[0]) for r in found], [float(r[1]) for r in found]))
        return out

    def quantized_representations(self) -> dict[str, tuple[str, float]]:
        return {"halfvec": ("pgvector halfvec", 2.0),
                "bit": ("pgvector bit (sign, Hamming)", 1 / 8)}

    def quantized_search(self, vectors: np.ndarray, k: int,
                         representation: str) -> list[list[str]]:
        """Exact top-k ids of each query with the vectors cast to one of pgvector's compact
        types, computed by PostgreSQL itself over the current version, read-only (no index, no
        write): ``halfvec`` (float16, cosine) or ``bit`` (the sign of each component, Hamming
        distance; ties by id). What switching the column to that type would give."""
        if representation not in self.quantized_representations():
            raise UsageError(f"pgvector compact types are halfvec and bit, not {representation!r}")
        arr = self._check_vectors(vectors, None, "query vectors")
        self._reload_state()
        table, d = self._table(), int(self._state["dim"] or arr.shape[1])
        if representation == "halfvec":
            order = sql.SQL("embedding::halfvec({d}) <=> %s::vector::halfvec({d})")
        else:
            order = sql.SQL("binary_quantize(embedding)::bit({d}) <~> "
                            "binary_quantize(%s::vector)::bit({d})")
        query = sql.SQL("SELECT id FROM {} ORDER BY {}, id LIMIT {}").format(
            sql.Identifier(table), order.format(d=sql.Literal(d)), sql.Literal(k))
        out = []
        try:
            with self._tx(), self._conn.cursor() as cur:
                for q in arr:
                    cur.execute(query, [q], prepare=False)
                    out.append([str(r[0]) for r in cur.fetchall()])
        except psycopg.Error as exc:
            raise StoreError(f"{self.uri}: quantized_search failed: {engine_message(exc)}"
                             ) from exc
        return out

    def scan_vectors(self, rows: int) -> Iterator[tuple[list[str], np.ndarray]]:
        """Shards of at most ``rows`` (id, vector) rows of the current version, read through a
        server-side cursor in one transaction (one snapshot; PostgreSQL, not this process, holds
        the rest), ordered by id."""
        if rows < 1:
            raise UsageError(f"rows must be at least 1, found {rows}")
        self._reload_state()
        if not self._has_table():
            return
        # COLLATE "C": the bytes' order, the same whatever the database's locale
        query = sql.SQL('SELECT id, embedding FROM {} ORDER BY id COLLATE "C"').format(
            sql.Identifier(self._table()))
        try:
            with self._tx(), self._conn.cursor(name="recallwatch_scan") as cur:
                cur.itersize = rows
                cur.execute(query)
                while found := cur.fetchmany(rows):
                    yield ([str(r[0]) for r in found],
                           np.stack([r[1].to_numpy() for r in found]).astype(np.float32))
        except psycopg.Error as exc:  # a generator is not covered by @guarded
            raise StoreError(f"{self.uri}: scan_vectors failed: {engine_message(exc)}"
                             ) from exc

    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        return self._rows(sql.SQL("SELECT {}, embedding FROM {} WHERE id = ANY(%s)").format(
            _SELECT, sql.Identifier(table)), [list(ids)])

    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        if doc_ids is None:
            return self._rows(sql.SQL("SELECT {}, embedding FROM {} ORDER BY id").format(
                _SELECT, sql.Identifier(table)), [])
        return self._rows(sql.SQL(
            "SELECT {}, embedding FROM {} WHERE doc_id = ANY(%s) ORDER BY id").format(
            _SELECT, sql.Identifier(table)), [list(doc_ids)])

    def _narrow_scan(self, table: str, columns: Sequence[str]) -> list[Row]:
        names = [c for c in columns if c in _COLUMNS]
        found = self._sql(sql.SQL("SELECT {} FROM {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in names), sql.Identifier(table)))
        return [dict(zip(names, r, strict=True)) for r in found]

    def _count(self, table: str) -> int:
        rows = self._sql(sql.SQL("SELECT count(*) FROM {}").format(
            sql.Identifier(table)))
        return int(rows[0][0])

    def _meta_get(self, key: str) -> Any:
        rows = self._sql(sql.SQL("SELECT value FROM {} WHERE key = %s").format(
            sql.Identifier(f"{self.name}__meta")), [key])
        return rows[0][0] if rows else None

    def _meta_set(self, key: str, value: Any) -> None:
        self._sql(sql.SQL(
            "INSERT INTO {} (key, value) VALUES (%s, %s)"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
        ).format(sql.Identifier(f"{self.name}__meta")), [key, Jsonb(value)])

    def _switch_production(self, table: str) -> None:
        # Runs inside the same transaction as the pointer write: readers of the view see the old
        # version or the new one, never a mix, and never a version without its ANN index.
        self._ensure_index(table)
        self._sql(sql.SQL("CREATE OR REPLACE VIEW {} AS SELECT * FROM {}").format(
            sql.Identifier(self.name), sql.Identifier(table)))

    def _close(self) -> None:
        self._conn.close()
