"""Qrels and runs as columns: query ids, document ids, and a grade or score per entry.

Built from TREC files, Python mappings, or pandas/polars frames; validated on construction, so an
evaluation never meets a duplicate document or a non-numeric value.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from os import PathLike
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch.errors import InputError, UsageError
from recallwatch.formats import trec
from recallwatch.formats.arrow import from_numpy, to_numpy
from recallwatch.formats.frames import Frame, to_frame
from recallwatch.metrics._keys import PAD, Blocks, DocKeys, mix, query_blocks
from recallwatch.metrics._tables import (
    COLUMNAR,
    columns,
    flatten,
    flatten_scores,
    floats,
    integers,
    read_columnar,
    string_column,
)

__all__ = ["Frame", "Qrels", "Run"]

Array = np.ndarray[Any, Any]
T = TypeVar("T")

_EXPECTED = ("expected {what}: a {{query_id: {{doc_id: {value}}}}} dict, a pandas or polars "
             "DataFrame with columns query_id, doc_id and {value}, a {file} file's path"
             "{extra} or a {cls}; found {found}")


def _shaped(value: Any, read: Callable[[Any], T], from_dict: Callable[[Any], T],
            from_frame: Callable[[Any], T], expected: str) -> T:
    """Qrels or a run from a path, a nested mapping or a frame; anything else is refused with
    ``expected``."""
    if isinstance(value, str | PathLike):
        return read(value)
    if isinstance(value, Mapping):
        return from_dict(value)
    if _is_frame(value):
        return from_frame(value)
    raise UsageError(expected)


def _is_frame(value: Any) -> bool:
    """A pandas or polars DataFrame or an Arrow table, recognised without importing either."""
    module = type(value).__module__.split(".")[0]
    return isinstance(value, pa.Table) or (module in ("pandas", "polars")
                                           and hasattr(value, "columns"))



def _encode(strings: pa.Array) -> tuple[Array, pa.Array]:
    """Integer codes (in order of first appearance) and the distinct values."""
    encoded = pc.dictionary_encode(strings)
    return to_numpy(encoded.indices), encoded.dictionary


class _Entries:
    """What qrels and runs share: id columns, their dictionaries, and the duplicate check."""

    query_ids: pa.Array
    doc_ids: pa.Array
    source: str | None
    _what = "entry"

    @cached_property
    def _queries(self) -> tuple[Array, pa.Array]:
        return _encode(self.query_ids)

    @cached_property
    def _docs(self) -> tuple[Array, pa.Array]:
        return _encode(self.doc_ids)

    @property
    def query_codes(self) -> Array:
        return self._queries[0]

    @property
    def query_dictionary(self) -> pa.Array:
        return self._queries[1]

    @property
    def doc_codes(self) -> Array:
        return self._docs[0]

    @property
    def doc_dictionary(self) -> pa.Array:
        return self._docs[1]

    def __len__(self) -> int:
        return len(self.query_ids)

    def _check(self) -> None:
        if len(self) == 0 and isinstance(self, Qrels):
            raise InputError(
                source=self.source, expected=f"at least one {self._what}", found="<none>"
            )
        self._check_duplicates()

    @cached_property
    def blocks(self) -> Blocks | None:
        """The query blocks, None when some query's rows are not contiguous."""
        return query_blocks(self.query_ids)

    @cached_property
    def grid(self) -> Blocks | None:
        """The query blocks when they make a grid small enough to work on (the fast path)."""
        blocks = self.blocks
        return blocks if blocks is not None and blocks.fits() else None

    @cached_property
    def doc_keys(self) -> DocKeys:
        """Exact integer keys of the document ids, one per row."""
        return DocKeys.of(self.doc_ids)

    def _check_duplicates(self) -> None:
        """Raise on a document listed twice for one query, naming both places.

        The grid proves most inputs clean; anything it cannot settle (and every real duplicate,
        for its message) goes through the general check.
        """
        if self.grid is not None and not self._grid_has_duplicates(self.grid):
            return
        if not _has_duplicates(self.query_codes, self.doc_codes):
            return
        keys = self.query_codes.astype(np.int64) * len(self.doc_dictionary) + self.doc_codes
        ordered = np.sort(keys)
        dup = np.flatnonzero(ordered[1:] == ordered[:-1])
        if len(dup):
            rows = np.flatnonzero(keys == ordered[dup[0]])
            qid = self.query_ids[int(rows[0])].as_py()
            docid = self.doc_ids[int(rows[0])].as_py()
            where: dict[str, Any] = {"source": self.source}
            if self.source is not None and not self.source.lower().endswith(COLUMNAR):
                first, second = (trec.line_of_record(self.source, int(r)) for r in rows[:2])
                where["line"] = second
                detail = f"also on line {first}"
            else:
                detail = f"entries {int(rows[0])} and {int(rows[1])}"
            raise InputError(
                f"duplicate document {docid!r} in query {qid!r} ({detail})",
                record=qid,
                field="docid",
                **where,
            )

    def _grid_has_duplicates(self, blocks: Blocks) -> bool:
        """Whether some query block may list a document twice (a row-wise sort of the keys)."""
        if blocks.width < 2:
            return False
        grid = blocks.grid(mix(self.doc_keys.words), PAD)
        step = max(1, (1 << 16) // blocks.width)  # rows per sort: the temporaries stay in cache
        for start in range(0, len(grid), step):
            keys = np.sort(grid[start:start + step], axis=1)
            same = keys[:, 1:] == keys[:, :-1]
            if blocks.valid is not None:
                # Padding sorts last; pairs that start in it do not count. (A key equal to PAD,
                # which only a mix of two words can be, makes a pair that does: the general check
                # decides.)
                same &= np.arange(blocks.width - 1) < blocks.widths[start:start + step, None]
            if same.any():
                return True
        return False


def uniform_blocks(query_codes: Array) -> int | None:
    """The common length of the query blocks when rows are grouped by query (each query one
    contiguous block) and every query has as many rows, else None. Such runs (a fixed depth, the
    usual case) are sorted and checked per block, as rows of a 2-D array: far faster than a
    global sort.
    """
    n = len(query_codes)
    if n == 0:
        return None
    n_blocks = int(np.count_nonzero(query_codes[1:] != query_codes[:-1])) + 1
    width = n // n_blocks
    if n_blocks * width != n:
        return None
    grid = query_codes.reshape(n_blocks, width)
    if not (grid == grid[:, :1]).all() or len(np.unique(grid[:, 0])) != n_blocks:
        return None
    return width


def _has_duplicates(query_codes: Array, doc_codes: Array) -> bool:
    if len(doc_codes) < 2:
        return False
    width = uniform_blocks(query_codes)
    if width is not None:
        grid = np.sort(doc_codes.reshape(-1, width), axis=1)
        return bool((grid[:, 1:] == grid[:, :-1]).any())
    keys = np.sort(query_codes.astype(np.int64) * (int(doc_codes.max()) + 1) + doc_codes)
    return bool((keys[1:] == keys[:-1]).any())


@dataclass(frozen=True, eq=False)
class Qrels(_Entries):
    """Relevance judgments: (query id, document id, integer grade). Grade <= 0: not relevant."""

    query_ids: pa.Array
    doc_ids: pa.Array
    grades: Array  # int64
    source: str | None = None
    _what = "judgment"

    def __post_init__(self) -> None:
        self._check()

    @classmethod
    def from_trec(cls, path: str | PathLike[str]) -> Qrels:
        """Read a TREC qrels file ``qid iter docid rel`` (plain or gzip)."""
        t = trec.read_qrels(path)
        return cls(t.query_ids, t.doc_ids, t.values.astype(np.int64, copy=False), t.source)

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> Qrels:
        """``{query_id: {doc_id: grade}}``; grades must be integers."""
        qids, docids, values = flatten(qrels, "grade")
        return cls(qids, docids, integers(values, "grade"))

    @classmethod
    def read(cls, path: str | PathLike[str]) -> Qrels:
        """A TREC qrels file, or a public collection's judgments: ``irds:DATASET_ID``
        (through ir_datasets) or ``beir:DIR[#split]`` (a BEIR folder's ``qrels/<split>.tsv``)."""
        from recallwatch.formats.collections import is_collection, open_collection

        if not is_collection(path):
            return cls.from_trec(path)
        collection = open_collection(str(path))
        rows = list(collection.qrels())
        return cls(string_column([r[0] for r in rows], "query id"),
                   string_column([r[1] for r in rows], "doc id"),
                   np.asarray([r[2] for r in rows], dtype=np.int64), collection.name)

    @classmethod
    def of(cls, qrels: Any) -> Qrels:
        """Judgments in any of the shapes a user holds them: a :class:`Qrels`, ``{query_id:
        {doc_id: grade}}``, a pandas or polars DataFrame (or Arrow table) with columns
        ``query_id``, ``doc_id`` and ``relevance``, a TREC qrels file's path, or
        ``irds:DATASET_ID`` / ``beir:DIR[#split]``."""
        if isinstance(qrels, Qrels):
            return qrels
        return _shaped(qrels, cls.read, cls.from_dict, cls.from_frame, _EXPECTED.format(
            what="qrels", value="relevance", file="TREC qrels",
            extra=", irds:DATASET_ID, beir:DIR", cls="Qrels", found=type(qrels).__name__))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}``, in the order the judgments were given."""
        out: dict[str, dict[str, int]] = {}
        for qid, docid, grade in zip(self.query_ids.to_pylist(), self.doc_ids.to_pylist(),
                                     self.grades.tolist(), strict=True):
            out.setdefault(qid, {})[docid] = grade
        return out

    def to_frame(self, library: Frame = "pandas") -> Any:
        """A DataFrame with columns ``query_id``, ``doc_id`` and ``relevance``."""
        return to_frame(pa.table({"query_id": self.query_ids, "doc_id": self.doc_ids,
                                "relevance": from_numpy(self.grades)}), library)

    @classmethod
    def from_frame(
        cls,
        frame: Any,
        *,
        query_id: str = "query_id",
        doc_id: str = "doc_id",
        relevance: str = "relevance",
    ) -> Qrels:
        """A pandas or polars DataFrame with query id, document id and integer grade columns."""
        qids, docids, values = columns(frame, query_id, doc_id, relevance)
        return cls(qids, docids, integers(values, relevance))

    @cached_property
    def _query_order(self) -> tuple[pa.Array, Array]:
        """(the distinct query ids in byte order, each judgment's position among them)."""
        blocks = self.blocks
        names = self.query_dictionary if blocks is None else blocks.names
        order = to_numpy(pc.sort_indices(names))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        index = rank[self.query_codes] if blocks is None else np.repeat(rank, blocks.widths)
        return names.take(from_numpy(order)), index

    @property
    def sorted_query_dictionary(self) -> pa.Array:
        """The judged query ids in byte order: the queries an evaluation scores."""
        return self._query_order[0]

    @property
    def query_names(self) -> list[str]:
        names: list[str] = self.sorted_query_dictionary.to_pylist()
        return names

    @property
    def query_index(self) -> Array:
        """Position of each judgment's query in :attr:`query_names`."""
        return self._query_order[1]

    @cached_property
    def sorted_keys(self) -> tuple[Array, Array]:
        """(query index * #docs + doc code) sorted, with the grades in the same order."""
        keys = self.query_index * np.int64(len(self.doc_dictionary)) + self.doc_codes
        order = np.argsort(keys)
        return keys[order], self.grades[order]


@dataclass(frozen=True, eq=False)
class Run(_Entries):
    """Retrieved documents with scores. Ranked by score descending, then document id descending,
    unless built with :meth:`from_ranked`, whose order is the caller's."""

    query_ids: pa.Array
    doc_ids: pa.Array
    scores: Array  # float64
    source: str | None = None
    preordered: bool = False  # rows are grouped by query, in rank order: never re-sorted
    _what = "retrieved document"

    def __post_init__(self) -> None:
        self._check()

    @classmethod
    def from_trec(cls, path: str | PathLike[str], *, cache: bool | None = None) -> Run:
        """Read a TREC run file ``qid Q0 docid rank score tag`` (plain or gzip).

        ``cache``: keep the parsed run in the user's binary cache, so that evaluating the same
        file again skips parsing it (see ``recallwatch.metrics._cache``: keyed by the file's
        content hash, files of 16 MB or more, written the second time a file is read). None:
        on unless ``RECALLWATCH_CACHE=0`` is set.
        """
        from recallwatch.metrics._cache import default_cache

        store = default_cache() if cache is not False else None
        if cache and store is None:
            store = default_cache(force=True)
        write = False
        if store is not None:
            hit, write = store.lookup(Path(path), cls._validated)
            if hit is not None:
                return hit
        t = trec.read_run(path, digest=write)
        run = cls(t.query_ids, t.doc_ids, t.values.astype(np.float64, copy=False), t.source)
        if store is not None and write and t.sha256 is not None:
            store.store(Path(path), t.sha256, run)
        return run

    @classmethod
    def read(cls, path: str | PathLike[str], *, cache: bool | None = None) -> Run:
        """A run file, by its suffix: ``.parquet``, or Arrow IPC (``.arrow``, ``.feather``,
        ``.ipc``), with columns ``qid``, ``docid`` and ``score``; anything else is a TREC run
        file (:meth:`from_trec`)."""
        suffix = Path(path).suffix.lower()
        if suffix in COLUMNAR:
            return cls.from_table(read_columnar(Path(path), suffix), source=str(path))
        return cls.from_trec(path, cache=cache)

    @classmethod
    def from_table(
        cls, table: pa.Table, *, query_id: str = "qid", doc_id: str = "docid",
        score: str = "score", source: str | None = None,
    ) -> Run:
        """An Arrow table with query id, document id and score columns."""
        qids, docids, values = columns(table, query_id, doc_id, score, source=source)
        return cls(qids, docids, floats(values, score, source), source)

    @classmethod
    def _validated(
        cls, query_ids: pa.Array, doc_ids: pa.Array, scores: Array, source: str | None, *,
        preordered: bool, blocks: Blocks | None, doc_keys: DocKeys | None,
    ) -> Run:
        """A run rebuilt from what an earlier construction validated and derived (the binary
        cache): not checked again."""
        run = cls.__new__(cls)
        for name, value in (("query_ids", query_ids), ("doc_ids", doc_ids), ("scores", scores),
                            ("source", source), ("preordered", preordered)):
            object.__setattr__(run, name, value)
        if blocks is not None:
            run.__dict__["blocks"] = blocks  # what the cached properties would compute
        if doc_keys is not None:
            run.__dict__["doc_keys"] = doc_keys
        return run

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]]) -> Run:
        """``{query_id: {doc_id: score}}``."""
        return cls(*flatten_scores(run))

    @classmethod
    def of(cls, run: Any) -> Run:
        """A run in any of the shapes a user holds it: a :class:`Run`, ``{query_id: {doc_id:
        score}}``, a pandas or polars DataFrame (or Arrow table) with columns ``query_id``,
        ``doc_id`` and ``score``, or a run file's path (TREC, Parquet or Arrow)."""
        if isinstance(run, Run):
            return run
        return _shaped(run, cls.read, cls.from_dict, cls.from_frame, _EXPECTED.format(
            what="a run", value="score", file="TREC run", extra="", cls="Run",
            found=type(run).__name__))

    def rank_order(self) -> Array:
        """The rows in rank order: queries in the order they first appear, each query's
        documents by score descending, then document id descending (trec_eval's order); a run
        built with :meth:`from_ranked` keeps its own."""
        if self.preordered:
            return np.arange(len(self), dtype=np.int64)
        first = np.full(len(self.query_dictionary), len(self), dtype=np.int64)
        np.minimum.at(first, self.query_codes, np.arange(len(self), dtype=np.int64))
        doc_rank = self.doc_order[self.doc_codes]
        return np.lexsort((-doc_rank, -self.scores, first[self.query_codes]))

    def __iter__(self) -> Iterator[tuple[str, dict[str, float]]]:
        """``(query_id, {doc_id: score})`` per query, each query's documents in rank order."""
        return iter(self.to_dict().items())

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}``, each query's documents in rank order."""
        order = self.rank_order()
        out: dict[str, dict[str, float]] = {}
        qids = self.query_ids.take(from_numpy(order)).to_pylist()
        docids = self.doc_ids.take(from_numpy(order)).to_pylist()
        for qid, docid, score in zip(qids, docids, self.scores[order].tolist(), strict=True):
            out.setdefault(qid, {})[docid] = score
        return out

    def to_frame(self, library: Frame = "pandas") -> Any:
        """A DataFrame with columns ``query_id``, ``doc_id``, ``score`` and ``rank`` (1 first),
        in rank order."""
        order = self.rank_order()
        qcodes = self.query_codes[order]
        starts = np.flatnonzero(np.r_[True, qcodes[1:] != qcodes[:-1]]) if len(order) else \
            np.empty(0, dtype=np.int64)
        rank = np.arange(len(order), dtype=np.int64) - np.repeat(
            starts, np.diff(np.r_[starts, len(order)])) + 1
        taken = from_numpy(order)
        return to_frame(pa.table({"query_id": self.query_ids.take(taken),
                                "doc_id": self.doc_ids.take(taken),
                                "score": from_numpy(self.scores[order]),
                                "rank": from_numpy(rank)}), library)

    @classmethod
    def from_ranked(cls, ranked: Mapping[str, Sequence[str]],
                    scores: Sequence[float] | None = None) -> Run:
        """``{query_id: [doc_id, ...]}``, rank 1 first. The order is kept exactly as given:
        no re-sorting by score or id. ``scores``: every document's, in the same order (they
        should not increase within a query); default n, n-1, ..., 1, so a TREC file written
        from this run ranks the same."""
        lengths = [len(docs) for docs in ranked.values()]
        qids = string_column(
            [q for q, n in zip(ranked, lengths, strict=True) for _ in range(n)], "query id"
        )
        docids = string_column([d for docs in ranked.values() for d in docs], "doc id")
        if scores is not None:
            values = floats(scores, "score")
            if len(values) != len(docids):
                raise InputError(field="scores", expected=f"one per document ({len(docids)})",
                                 found=len(values))
        else:
            values = np.concatenate(
                [np.arange(n, 0, -1, dtype=np.float64) for n in lengths] or [np.empty(0)]
            )
        return cls(qids, docids, values, preordered=True)

    @classmethod
    def from_frame(
        cls, frame: Any, *, query_id: str = "query_id", doc_id: str = "doc_id", score: str = "score"
    ) -> Run:
        """A pandas or polars DataFrame with query id, document id and score columns."""
        qids, docids, values = columns(frame, query_id, doc_id, score)
        return cls(qids, docids, floats(values, score))

    @cached_property
    def doc_order(self) -> Array:
        """Byte-order rank of each distinct document id (the trec_eval tie-break)."""
        order = to_numpy(pc.sort_indices(self.doc_dictionary))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order))
        return rank
