"""The LanceDB table under a LanceStore, at the table level: its schema, chunks as Arrow rows,
the SQL predicates that address its columns (ids, documents, the shared filter), and its
versions and tags."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from recallwatch.errors import StoreError, UsageError
from recallwatch.stores.arrow import vector_column, vectors_of
from recallwatch.stores.base import Chunk, Filter, IndexVersion
from recallwatch.stores.checks import normalise_filter
from recallwatch.stores.rows import CHUNK_FIELDS, Row, chunk_from_row, row_from_chunk

if TYPE_CHECKING:
    from recallwatch.stores.lancedb.read import ReadTable

__all__ = [
    "IN_BATCH",
    "batches",
    "chunks_where",
    "column_pairs",
    "fetch_vectors",
    "rows",
    "schema",
    "set_tag",
    "sql_list",
    "tagged_version",
    "to_arrow",
    "vector_shards",
    "version_list",
    "version_number",
    "where",
]

IN_BATCH = 2000  # ids per `id IN (...)` clause: keeps each SQL statement small


def schema(dim: int) -> pa.Schema:
    text = pa.string()
    return pa.schema([
        pa.field("id", text, nullable=False), pa.field("text", text, nullable=False),
        ("content", text), ("doc_id", text), ("domain", text), ("label", text),
        ("facets", text),
        ("valid_from", pa.date32()), ("valid_to", pa.date32()),
        ("kind", text), ("description", text), ("content_hash", text),
        pa.field("vector", pa.list_(pa.float32(), dim)),
    ])


def to_arrow(chunks: Sequence[Chunk], vectors: np.ndarray) -> pa.Table:
    """The chunks and their vectors as one Arrow table of :func:`schema`."""
    from recallwatch.records import content_hash

    rows = [row_from_chunk(c) for c in chunks]
    for row, c in zip(rows, chunks, strict=True):
        # A chunk written without a hash gets one here, so ids_since still sees its changes.
        row["content_hash"] = c.content_hash or content_hash(c)
    table_schema = schema(vectors.shape[1])
    arrays = [pa.array([r[name] for r in rows], type=pa.string()).cast(
        table_schema.field(name).type) for name in CHUNK_FIELDS]
    arrays.append(vector_column(vectors))
    return pa.Table.from_arrays(arrays, schema=table_schema)


def batches(items: list[str], size: int = IN_BATCH) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def _sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def sql_list(values: Sequence[str]) -> str:
    return ", ".join(_sql_str(v) for v in values)


def where(filter: Filter | None) -> str | None:
    """The shared filter (equality / IN on metadata columns) as a LanceDB SQL predicate, pushed
    down before the vector search (prefilter), so a filtered top-k is still k results."""
    norm = normalise_filter(filter)
    if not norm:
        return None
    return " AND ".join(f"{key} IN ({sql_list(values)})" for key, values in norm.items())


def rows(tbl: ReadTable, predicate: str | None) -> Iterator[Row]:
    """The rows (every column but the vector) that match ``predicate``."""
    columns = [f.name for f in tbl.schema if f.name != "vector"]
    yield from tbl.to_lance().to_table(columns=columns, filter=predicate).to_pylist()


def chunks_where(tbl: ReadTable, column: str, values: Sequence[str] | None) -> list[Chunk]:
    """The chunks whose ``column`` is one of ``values`` (all of them when None), by id."""
    if values is None:
        return sorted((chunk_from_row(r) for r in rows(tbl, None)), key=lambda c: c.id)
    found = {r["id"]: chunk_from_row(r) for batch in batches(list(dict.fromkeys(values)))
             for r in rows(tbl, f"{column} IN ({sql_list(batch)})")}
    return [found[i] for i in sorted(found)]


def column_pairs(tbl: ReadTable, value: str) -> dict[str, Any]:
    """id -> ``value`` column of every row: one narrow scan."""
    t = tbl.to_lance().to_table(columns=["id", value])
    return dict(zip(t.column("id").to_pylist(), t.column(value).to_pylist(), strict=True))


def vector_shards(tbl: ReadTable, rows: int) -> Iterator[tuple[list[str], np.ndarray]]:
    """(ids, vectors) shards of at most ``rows`` rows: one scan, in storage order."""
    scanner = tbl.to_lance().scanner(columns=["id", "vector"], batch_size=rows,
                                     strict_batch_size=True, scan_in_order=True)
    for batch in scanner.to_batches():
        if batch.num_rows:
            yield batch.column(0).to_pylist(), vectors_of(batch.column(1))


def fetch_vectors(tbl: ReadTable, ids: list[str]) -> dict[str, np.ndarray]:
    """id -> stored vector of the ``ids`` present."""
    out: dict[str, np.ndarray] = {}
    for batch in batches(ids):
        t = tbl.to_lance().to_table(columns=["id", "vector"], filter=f"id IN ({sql_list(batch)})")
        out.update(zip(t.column("id").to_pylist(), vectors_of(t.column("vector")), strict=True))
    return out


# -- versions and tags ------------------------------------------------------------------------
def version_list(tbl: ReadTable, production_tag: str) -> list[IndexVersion]:
    """Every version of the table, with its row count and tags; production is the tagged one."""
    tags: dict[int, list[str]] = {}
    for name, info in tbl.tags.list().items():
        tags.setdefault(int(info["version"]), []).append(name)
    out = []
    for v in tbl.list_versions():
        number = int(v["version"])
        names = sorted(tags.get(number, []))
        meta = {"rows": int(v["metadata"].get("total_rows", 0)), "tags": names}
        out.append(IndexVersion(str(number), _utc(v["timestamp"]), production_tag in names, meta))
    return out


def version_number(uri: str, version: str, versions: Callable[[], list[IndexVersion]], *,
                   allow_zero: bool = False) -> int:
    """``version`` as a table version number, refused unless ``versions()`` lists it (or it is
    0, the empty table before the first write, when ``allow_zero``)."""
    try:
        number = int(version)
    except (TypeError, ValueError):
        raise UsageError(f"a LanceDB version is a number, found {version!r}") from None
    if allow_zero and number == 0:
        return 0
    known = {int(v.version) for v in versions()}
    if number not in known:
        listing = ", ".join(str(v) for v in sorted(known)[-10:]) or "none"
        raise StoreError(f"{uri} has no version {number} (latest versions: {listing})")
    return number


def set_tag(tags: Any, name: str, version: int) -> None:
    """Point tag ``name`` at ``version`` (LanceDB's or pylance's tags; cleanup keeps what a tag
    names)."""
    if name in tags.list():
        tags.update(name, version)
    else:
        tags.create(name, version)


def tagged_version(tbl: ReadTable, name: str) -> str | None:
    info = tbl.tags.list().get(name)
    return None if info is None else str(info["version"])


def _utc(value: Any) -> dt.datetime | None:
    if not isinstance(value, dt.datetime):
        return None
    # LanceDB reports naive local time; make it explicit so runs compare across machines.
    return value.astimezone(dt.UTC) if value.tzinfo is None else value
