"""What every non-embedded adapter shares: versions, validation, filters, rows, scores.

Engines other than LanceDB have no table versions, so :class:`VersionedStore` builds them once for
all adapters:

* a version ``N`` is a physical table/collection ``<name>__v<N>``;
* reads and writes go to the *current* version; ``promote(N)`` points *production* at it and
  **seals** it: the next write first copies it to ``__v<N+1>`` and makes that current, so a
  version that was accepted and served is never modified in place;
* the switch of production is one atomic operation of the engine (a view replaced in a transaction
  for PostgreSQL, an alias for Qdrant and Milvus, one atomic file rename for index files), and the
  bare ``<name>`` is what an application queries to always read production;
* every row carries ``ingested_version``; ``ids_since(v)`` lists rows whose version is newer.
  Re-upserting a chunk with an unchanged ``content_hash`` keeps its version (idempotent ingest).

An adapter implements only the engine primitives (``_create_table``, ``_write``, ``_query``…).
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import functools
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, ClassVar, Concatenate, ParamSpec, Protocol, TypeAlias, TypeVar

import numpy as np

from recallwatch._registry import suggest
from recallwatch.errors import InputError, RecallwatchError, StoreError, UsageError
from recallwatch.records import FILTER_FIELDS
from recallwatch.stores.base import Chunk, Filter, Hits, IndexVersion

__all__ = [
    "FILTER_FIELDS",
    "NormFilter",
    "Row",
    "VersionedStore",
    "check_k",
    "check_name",
    "check_vectors",
    "chunk_from_row",
    "chunk_matches",
    "clamp_k",
    "cosine_scores",
    "engine_message",
    "guarded",
    "missing_location",
    "missing_table",
    "normalise_filter",
    "row_from_chunk",
    "store_names",
    "top_k",
]

# A row is what an engine stores beside the vector: the chunk's fields flattened to scalars.
Row: TypeAlias = dict[str, Any]
# A validated filter: column -> allowed values (one value = equality, several = IN).
NormFilter: TypeAlias = dict[str, tuple[str, ...]]

_STATE_KEY = "__recallwatch_versions__"
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,47}$")
_PHYSICAL_RE = re.compile(r"^(.+)__(?:v\d+|meta)$")


def check_name(name: str | None, *, what: str, uri: str) -> str:
    """A table/collection name usable verbatim in every engine (and in ``<name>__v<N>``)."""
    if not name:
        raise UsageError(f"store URI {uri!r}: missing {what} name")
    if not _NAME_RE.match(name) or "__" in name:
        raise UsageError(
            f"store URI {uri!r}: {what} name {name!r} is invalid: expected letters, digits and "
            "single underscores, starting with a letter or '_', at most 48 characters"
        )
    return name


def normalise_filter(filter: Filter | None) -> NormFilter | None:
    """Validate a user filter: known columns only, string values, at least one value each."""
    if not filter:
        return None
    out: NormFilter = {}
    for key, value in filter.items():
        if key not in FILTER_FIELDS:
            raise UsageError(
                f"cannot filter on {key!r}: filterable fields are {', '.join(FILTER_FIELDS)}"
            )
        values = (value,) if isinstance(value, str) else tuple(value)
        if not values or not all(isinstance(v, str) for v in values):
            raise UsageError(
                f"filter on {key!r}: expected a string or a non-empty list of strings, "
                f"found {value!r}"
            )
        out[key] = values
    return out


def chunk_matches(row: Mapping[str, Any], filter: NormFilter | None) -> bool:
    """The filter evaluated in Python, for engines (and exports) that cannot push it down."""
    return filter is None or all(row.get(k) in values for k, values in filter.items())


def row_from_chunk(chunk: Chunk, version: int) -> Row:
    return {
        "id": chunk.id,
        "text": chunk.text,
        "content": chunk.content,
        "doc_id": chunk.doc_id,
        "domain": chunk.domain,
        "label": chunk.label,
        "facets": json.dumps(dict(chunk.facets), sort_keys=True, ensure_ascii=False),
        "valid_from": chunk.valid_from.isoformat() if chunk.valid_from else None,
        "valid_to": chunk.valid_to.isoformat() if chunk.valid_to else None,
        "kind": chunk.kind,
        "description": chunk.description,
        "content_hash": chunk.content_hash,
        "ingested_version": version,
    }


def _as_date(value: Any) -> date | None:
    if value is None or value == "":
        return None
    if isinstance(value, date):
        return value
    return date.fromisoformat(str(value))


def _or_none(value: Any) -> str | None:
    # Engines without NULL (Milvus scalar columns, Chroma metadata) store absent values as "".
    return None if value is None or value == "" else str(value)


def chunk_from_row(row: Mapping[str, Any]) -> Chunk:
    facets = row.get("facets") or "{}"
    return Chunk(
        id=str(row["id"]),
        text=str(row.get("text") or ""),
        content=_or_none(row.get("content")),
        doc_id=_or_none(row.get("doc_id")),
        domain=_or_none(row.get("domain")),
        label=_or_none(row.get("label")),
        facets=json.loads(facets) if isinstance(facets, str) else dict(facets),
        valid_from=_as_date(row.get("valid_from")),
        valid_to=_as_date(row.get("valid_to")),
        kind=str(row.get("kind") or "text"),
        description=_or_none(row.get("description")),
        content_hash=str(row.get("content_hash") or ""),
    )


def cosine_scores(queries: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of every query row with every vector row (float32, shape (q, n))."""
    def unit(a: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(a, axis=1, keepdims=True)
        return a / np.where(norms == 0, 1, norms)

    scores: np.ndarray = unit(queries.astype(np.float32)) @ unit(vectors.astype(np.float32)).T
    return scores.astype(np.float32)


def check_vectors(vectors: np.ndarray, rows: int | None, what: str, dim: int | None) -> np.ndarray:
    """float32 (n, d) vectors, or an InputError naming what is wrong (shape, width, NaN)."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise InputError(field=what, expected="a 2-D array (rows, dimension)",
                         found=f"<array of shape {arr.shape}>")
    if rows is not None and arr.shape[0] != rows:
        raise InputError(field=what, expected=f"{rows} rows (one per chunk)",
                         found=f"<{arr.shape[0]} rows>")
    if dim is not None and arr.shape[1] != dim:
        raise InputError(field=what, expected=f"dimension {dim} (the store's)",
                         found=f"<dimension {arr.shape[1]}>")
    if not np.isfinite(arr).all():
        raise InputError(field=what, expected="finite numbers", found="<NaN or infinity>")
    return arr


def check_unique_ids(chunks: Sequence[Chunk]) -> None:
    """One upsert may name a chunk only once."""
    seen: set[str] = set()
    for chunk in chunks:
        if chunk.id in seen:
            raise InputError("duplicate chunk id in one upsert", record=chunk.id, field="id")
        seen.add(chunk.id)


def check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UsageError(f"k must be a positive integer, found {k!r}")


# Every engine accepts a k this small whatever the row count; counting rows costs a query on some
# (a full scan in PostgreSQL), so only a deeper k is compared with the count.
_UNCOUNTED_K = 1000


def clamp_k(k: int, count: Callable[[], int]) -> int:
    """``k`` checked, and never more than the ``count()`` rows there are. Asking for more than
    exists is harmless to the caller, but engines allocate k result slots or reject a k beyond
    their limit, so a depth like 3,000,000,000 must never reach them."""
    check_k(k)
    return k if k <= _UNCOUNTED_K else min(k, count())


# -- stores that do not exist: reading never creates them -------------------------------------
def store_names(names: Iterable[str]) -> list[str]:
    """The store names behind an engine's physical tables: ``kb__v3`` and ``kb__meta`` are the
    versions and pointers of store ``kb`` (see the module docstring)."""
    return sorted({m.group(1) for n in names if (m := _PHYSICAL_RE.match(n))})


def missing_table(uri: str, what: str, name: str, present: Sequence[str]) -> StoreError:
    """The error for a table (collection) that does not exist: the ones that do, and the closest.
    Opening a store to read it never creates it (only ``recallwatch ingest`` creates a store)."""
    shown = ", ".join(present[:20]) + (f" and {len(present) - 20} more" if len(present) > 20
                                       else "")
    listing = f"{what}s present: {shown}" if present else f"there is no {what} yet"
    return StoreError(f"{uri}: no {what} {name!r}{suggest(name, list(present))}; {listing}")


def missing_location(uri: str, engine: str, path: Path, is_store: Callable[[Path], bool]
                     ) -> StoreError:
    """The error for a store path that does not exist (or holds no store of this engine), with
    the closest sibling that does."""
    try:
        names = sorted(p.name for p in path.parent.iterdir() if p != path)
    except OSError:
        names = []
    # only the names close enough to suggest are looked into (a directory may hold thousands)
    close = difflib.get_close_matches(path.name, names, n=5, cutoff=0.6)
    stores = [name for name in close if is_store(path.parent / name)]
    return StoreError(f"{uri}: no {engine} store at {path}{suggest(path.name, stores)}")


def top_k(ids: Sequence[str], scores: np.ndarray, k: int) -> Hits:
    """The k best of one score row, ties broken by id ascending so results are reproducible."""
    order = sorted(range(len(ids)), key=lambda i: (-float(scores[i]), ids[i]))[:k]
    return Hits([ids[i] for i in order], np.asarray([scores[i] for i in order], dtype=np.float32))


def _hits(ids: list[str], scores: Iterable[float]) -> Hits:
    # Engines return scores already ranked, but ANN engines may break ties differently; re-sort
    # stably so the "non-increasing" promise of Hits holds everywhere.
    return top_k(ids, np.asarray(list(scores), dtype=np.float32), len(ids))


class _Engine(Protocol):
    _engine_errors: ClassVar[tuple[type[BaseException], ...]]

    @property
    def uri(self) -> str: ...


_P = ParamSpec("_P")
_R = TypeVar("_R")
_S = TypeVar("_S", bound=_Engine)


def guarded(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Turn the engine client's own exceptions into a StoreError naming the store and the call,
    so a lost connection or a refused request reaches the user as one clean line."""
    @functools.wraps(method)
    def wrapper(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except RecallwatchError:
            raise
        except self._engine_errors as exc:
            raise StoreError(f"{self.uri}: {method.__name__} failed: {engine_message(exc)}"
                             ) from exc
    return wrapper


_RUST_SOURCE = re.compile(r",? \S+\.rs:\d+:\d+")


def engine_message(exc: BaseException) -> str:
    """An engine's exception as one line for a user: whitespace folded, and without the Rust
    source locations that LanceDB appends (``…/lance-io/src/local.rs:273:40``)."""
    return " ".join(_RUST_SOURCE.sub("", str(exc)).split()) or type(exc).__name__


class VersionedStore(ABC):
    """A VectorStore over an engine without native versions (see the module docstring)."""

    scheme: ClassVar[str]
    #: False when ``exact=True`` is computed client-side from exported vectors (Chroma, index
    #: files): still exact, but it reads every vector of the version into memory.
    native_exact: ClassVar[bool] = True
    #: The engine client's exception types, reported as StoreError by every public method.
    _engine_errors: ClassVar[tuple[type[BaseException], ...]] = ()

    def __init__(self, uri: str, name: str) -> None:
        self._uri = uri  # already redacted by the adapter
        self.name = name
        self._pinned: int | None = None  # set on read-only views returned by checkout()
        self._state: dict[str, Any] = self._meta_get(_STATE_KEY) or {
            "current": 1, "production": None, "sealed": [], "created": {}, "dim": None,
        }

    # ---- engine primitives -------------------------------------------------------------------
    @abstractmethod
    def _create_table(self, table: str, dim: int) -> None: ...

    @abstractmethod
    def _drop_table(self, table: str) -> None: ...

    @abstractmethod
    def _write(self, table: str, rows: list[Row], vectors: np.ndarray) -> None:
        """Insert or replace rows by id."""

    @abstractmethod
    def _remove(self, table: str, ids: Sequence[str]) -> None: ...

    @abstractmethod
    def _query(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None, exact: bool
    ) -> list[tuple[list[str], list[float]]]:
        """Per query row: ids and cosine similarities, best first."""

    @abstractmethod
    def _fetch(self, table: str, ids: Sequence[str]) -> tuple[list[Row], np.ndarray]:
        """Rows and vectors of the ids present (any order)."""

    @abstractmethod
    def _scan(self, table: str, doc_ids: Sequence[str] | None) -> tuple[list[Row], np.ndarray]:
        """All rows (of these documents) with their vectors."""

    @abstractmethod
    def _count(self, table: str) -> int: ...

    @abstractmethod
    def _meta_get(self, key: str) -> Any: ...

    @abstractmethod
    def _meta_set(self, key: str, value: Any) -> None: ...

    def _copy_table(self, src: str, dst: str, dim: int) -> None:
        """Copy a version; engines with a server-side copy override this."""
        self._create_table(dst, dim)
        rows, vectors = self._scan(src, None)
        for start in range(0, len(rows), 1000):
            self._write(dst, rows[start:start + 1000], vectors[start:start + 1000])

    def _narrow_scan(self, table: str, columns: Sequence[str]) -> list[Row]:
        """Only these columns of every row; engines that can skip the vectors override this."""
        return self._scan(table, None)[0]

    def _switch_production(self, table: str) -> None:  # noqa: B027 - optional hook
        """Point the engine's alias ``<name>`` at ``table`` atomically (no-op without aliases)."""

    def _atomic(self) -> contextlib.AbstractContextManager[None]:
        """A transaction around the alias switch and the pointer write, where the engine has one."""
        return contextlib.nullcontext()

    def _close(self) -> None:  # noqa: B027 - optional hook
        """Release the engine client."""

    def _exact_by_export(
        self, table: str, vectors: np.ndarray, k: int, filter: NormFilter | None
    ) -> list[tuple[list[str], list[float]]]:
        """Brute force over the exported vectors, for engines with no exact search."""
        rows, stored = self._scan(table, None)
        keep = [i for i, row in enumerate(rows) if chunk_matches(row, filter)]
        ids = [str(rows[i]["id"]) for i in keep]
        if not keep:
            return [([], []) for _ in range(len(vectors))]
        scores = cosine_scores(vectors, stored[keep])
        out = []
        for row in scores:
            hits = top_k(ids, row, k)
            out.append((hits.ids, hits.scores.tolist()))
        return out

    # ---- VectorStore -------------------------------------------------------------------------
    @property
    def uri(self) -> str:
        return self._uri

    def _table(self, version: int | None = None) -> str:
        return f"{self.name}__v{self._version() if version is None else version}"

    def _version(self) -> int:
        return self._pinned if self._pinned is not None else int(self._state["current"])

    def _reload_state(self) -> None:
        # Another process (a reindex, an ingest) may have moved the pointers since we opened.
        if self._pinned is None:
            self._state = self._meta_get(_STATE_KEY) or self._state

    def _changed_state(self, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """A changed copy of the stored pointers. The pointers are never edited in place: threads
        reading through this store replace ``self._state`` on every reload and deep-copy it in
        ``checkout``, so an in-place edit could be lost to a reload or tear a copy. Writers change
        a copy, save it, then publish it with one assignment (see ``_commit_state``)."""
        self._reload_state()
        state = copy.deepcopy(self._state)
        change(state)
        return state

    def _commit_state(self, state: dict[str, Any]) -> None:
        self._meta_set(_STATE_KEY, state)
        self._state = state

    def _has_table(self) -> bool:
        return str(self._version()) in self._state["created"]

    def _writable(self, dim: int | None = None) -> str:
        if self._pinned is not None:
            raise StoreError(
                f"{self._uri}: version {self._pinned} was opened read-only with checkout(); "
                "write to the store itself"
            )
        self._reload_state()
        cur = int(self._state["current"])
        if cur in self._state["sealed"]:
            # a discarded number is not reused: history records may name it
            new = max(int(v) for v in [*self._state["created"],
                                       *self._state.get("discarded", [])]) + 1
            self._copy_table(self._table(cur), self._table(new), int(self._state["dim"]))

            def continue_in_copy(state: dict[str, Any]) -> None:
                state["created"][str(new)] = datetime.now(UTC).isoformat()
                state["current"] = new

            self._commit_state(self._changed_state(continue_in_copy))
        elif str(cur) not in self._state["created"]:
            if dim is None:
                return self._table(cur)
            self._create_table(self._table(cur), dim)

            def created(state: dict[str, Any]) -> None:
                state["created"][str(cur)] = datetime.now(UTC).isoformat()
                state["dim"] = dim

            self._commit_state(self._changed_state(created))
        return self._table()

    def _check_vectors(self, vectors: np.ndarray, rows: int | None, what: str) -> np.ndarray:
        return check_vectors(vectors, rows, what, self._state["dim"])

    @guarded
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        arr = self._check_vectors(vectors, len(chunks), "vectors")
        if not chunks:
            return
        check_unique_ids(chunks)
        # Read what is stored first: a chunk whose fields and vector direction are unchanged is
        # not rewritten (re-running an ingestion writes nothing, creates no version, and leaves
        # ANN indexes alone), and a changed vector with the same content hash keeps the version
        # it was first ingested in, so ids_since() lists only what really changed.
        self._reload_state()
        old_rows, old_vectors = (self._fetch(self._table(), [c.id for c in chunks])
                                 if self._has_table() and self._pinned is None else ([], None))
        old = {str(r["id"]): (r, old_vectors[n]) for n, r in enumerate(old_rows)
               if old_vectors is not None}
        keep = []
        for n, chunk in enumerate(chunks):
            stored = old.get(chunk.id)
            if stored is None or chunk_from_row(stored[0]) != chunk or not np.allclose(
                    cosine_scores(arr[n:n + 1], stored[1][None, :]), 1.0, rtol=0, atol=1e-6):
                keep.append(n)
        if not keep and self._pinned is None:
            return
        table = self._writable(arr.shape[1])
        version = self._version()
        rows = []
        for n in keep:
            chunk, stored = chunks[n], old.get(chunks[n].id)
            same = stored is not None and chunk.content_hash and (
                stored[0].get("content_hash") == chunk.content_hash)
            rows.append(row_from_chunk(
                chunk, int(stored[0]["ingested_version"]) if stored and same else version))
        self._write(table, rows, arr[keep])

    @guarded
    def delete(self, ids: Sequence[str]) -> None:
        table = self._writable()
        if ids and self._has_table():
            self._remove(table, list(ids))

    @guarded
    def search(
        self, vectors: np.ndarray, k: int, *, filter: Filter | None = None, exact: bool = False
    ) -> list[Hits]:
        check_k(k)
        arr = self._check_vectors(vectors, None, "query vectors")
        norm = normalise_filter(filter)
        self._reload_state()
        table = self._table()
        if self._has_table() and len(arr):
            k = clamp_k(k, lambda: self._count(table))
        if not self._has_table() or len(arr) == 0 or k == 0:
            return [Hits([], np.zeros(0, dtype=np.float32)) for _ in range(len(arr))]
        found = self._query(table, arr, k, norm, exact)
        return [_hits(ids, scores) for ids, scores in found]

    @guarded
    def score_of(self, vectors: np.ndarray, ids: Sequence[Sequence[str]]) -> list[dict[str, float]]:
        arr = self._check_vectors(vectors, len(ids), "query vectors")
        self._reload_state()
        if not self._has_table():
            return [{} for _ in ids]
        wanted = sorted({i for row in ids for i in row})
        if not wanted:
            return [{} for _ in ids]
        rows, stored = self._fetch(self._table(), wanted)
        where = {str(r["id"]): n for n, r in enumerate(rows)}
        out: list[dict[str, float]] = []
        for q, row_ids in zip(arr, ids, strict=True):
            present = [i for i in row_ids if i in where]
            if not present:
                out.append({})
                continue
            scores = cosine_scores(q[None, :], stored[[where[i] for i in present]])[0]
            out.append({i: float(s) for i, s in zip(present, scores, strict=True)})
        return out

    @guarded
    def get(self, ids: Sequence[str]) -> dict[str, Chunk]:
        self._reload_state()
        if not self._has_table() or not ids:
            return {}
        rows, _ = self._fetch(self._table(), list(ids))
        return {str(r["id"]): chunk_from_row(r) for r in rows}

    @guarded
    def chunks(self, *, doc_ids: Sequence[str] | None = None) -> list[Chunk]:
        self._reload_state()
        if not self._has_table():
            return []
        rows, _ = self._scan(self._table(), doc_ids)
        return sorted((chunk_from_row(r) for r in rows), key=lambda c: c.id)

    @guarded
    def count(self) -> int:
        self._reload_state()
        return self._count(self._table()) if self._has_table() else 0

    @guarded
    def versions(self) -> list[IndexVersion]:
        self._reload_state()
        prod = self._state["production"]
        return [
            IndexVersion(
                version=v,
                created_at=datetime.fromisoformat(created),
                production=prod is not None and int(v) == int(prod),
                meta={"table": self._table(int(v)), "sealed": int(v) in self._state["sealed"]},
            )
            for v, created in sorted(self._state["created"].items(), key=lambda kv: int(kv[0]))
        ]

    @guarded
    def current_version(self) -> str:
        self._reload_state()
        return str(self._version())

    def _parse_version(self, version: str) -> int:
        self._reload_state()
        if str(version) not in self._state["created"]:
            known = ", ".join(sorted(self._state["created"], key=int)) or "none yet"
            raise StoreError(f"{self._uri}: no version {version!r}; versions: {known}")
        return int(version)

    @guarded
    def checkout(self, version: str) -> VersionedStore:
        number = self._parse_version(version)
        view = copy.copy(self)
        view._state = copy.deepcopy(self._state)
        view._pinned = number
        return view

    @guarded
    def promote(self, version: str) -> None:
        number = self._parse_version(version)

        def production(state: dict[str, Any]) -> None:
            if number not in state["sealed"]:
                state["sealed"].append(number)
            state["production"] = number

        self._switch_to(number, self._changed_state(production))

    def _switch_to(self, number: int, state: dict[str, Any]) -> None:
        # The engine's switch (view, alias) and the pointer write commit together.
        with self._atomic():
            self._switch_production(self._table(number))
            self._meta_set(_STATE_KEY, state)
        self._state = state

    @guarded
    def rollback_to(self, version: str) -> None:
        """Make ``version`` production again (a rollback), in the same atomic switch as
        ``promote``. When the current version is the production being replaced (nothing was
        written since), ``version`` becomes current too: the gate and the monitor examine the
        current version, and they must examine what is served again."""
        number = self._parse_version(version)

        def back(state: dict[str, Any]) -> None:
            if number not in state["sealed"]:
                state["sealed"].append(number)
            if state["production"] is not None and state["current"] == state["production"]:
                state["current"] = number
            state["production"] = number

        self._switch_to(number, self._changed_state(back))

    @guarded
    def discard(self, version: str, *, current: str) -> None:
        """Drop ``version``, which was never production (a reindex copy that failed its
        verification); if it is current, ``current`` (the version it was copied from) becomes
        current again. Its number is not reused."""
        number, back_to = self._parse_version(version), self._parse_version(current)
        if number == self._state["production"]:
            raise StoreError(f"{self._uri}: version {number} is production; it cannot be dropped")

        def drop(state: dict[str, Any]) -> None:
            del state["created"][str(number)]
            state["sealed"] = [v for v in state["sealed"] if int(v) != number]
            state["discarded"] = sorted({*state.get("discarded", []), number})
            if int(state["current"]) == number:
                state["current"] = back_to

        self._commit_state(self._changed_state(drop))
        self._drop_table(self._table(number))

    @guarded
    def production_version(self) -> str | None:
        self._reload_state()
        prod = self._state["production"]
        return None if prod is None else str(prod)

    @guarded
    def ids_since(self, version: str) -> list[str]:
        number = self._parse_version(version)
        if not self._has_table():
            return []
        rows = self._narrow_scan(self._table(), ("id", "ingested_version"))
        return sorted(str(r["id"]) for r in rows if int(r["ingested_version"]) > number)

    @guarded
    def vectors(self, ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of ``ids``, in that order (monitor, benchmarks). Qdrant stores
        cosine vectors normalised, so it returns them normalised."""
        self._reload_state()
        rows, stored = self._fetch(self._table(), list(ids)) if self._has_table() else ([], None)
        where = {str(r["id"]): n for n, r in enumerate(rows)}
        missing = [i for i in ids if i not in where]
        if missing or stored is None:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            raise StoreError(f"{self._uri}: no stored chunk {shown or ', '.join(ids[:5])}")
        picked: np.ndarray = stored[[where[i] for i in ids]]
        return picked

    @guarded
    def content_hashes(self) -> dict[str, str]:
        """id -> content_hash of every chunk of the current version (ingestion's change check)."""
        self._reload_state()
        if not self._has_table():
            return {}
        rows = self._narrow_scan(self._table(), ("id", "content_hash"))
        return {str(r["id"]): str(r.get("content_hash") or "") for r in rows}

    @guarded
    def seal(self) -> None:
        """Close the current version to writes: the next write continues in a copy. An ingestion
        seals when it completes, so a version is what one ingestion left, as with LanceDB, and a
        version a gate examined is never modified in place."""
        self._reload_state()
        cur = int(self._state["current"])
        if str(cur) in self._state["created"] and cur not in self._state["sealed"]:
            self._commit_state(self._changed_state(lambda state: state["sealed"].append(cur)))

    @guarded
    def new_version(self) -> str:
        """Seal the current version and continue in a copy of it (a reindex builds there)."""
        self.seal()  # saved: _writable reloads the pointers before it decides to copy
        self._writable(self._state["dim"])
        return self.current_version()

    @guarded
    def get_meta(self, key: str) -> Any:
        self._check_meta_key(key)
        return self._meta_get(key)

    @guarded
    def set_meta(self, key: str, value: Any) -> None:
        self._check_meta_key(key)
        try:
            json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise InputError(field=f"meta {key!r}", expected="a JSON-serialisable value",
                             found=f"<{type(value).__name__}>") from exc
        self._meta_set(key, value)

    def _check_meta_key(self, key: str) -> None:
        if not isinstance(key, str) or not key or key.startswith("__"):
            raise UsageError(
                f"meta key {key!r}: expected a non-empty string not starting with '__'")

    def close(self) -> None:
        if self._pinned is None:
            self._close()

    def __enter__(self) -> VersionedStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._uri!r})"
