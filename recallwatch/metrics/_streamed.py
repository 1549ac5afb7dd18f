"""evaluate_file(qrels, run_path, measures): a run file evaluated a block of queries at a time.

A query's values depend only on its own lines and judgments, so a run file grouped by query (every
line of a query together, as run files are written) is evaluated block by block: memory follows
the block (:data:`~recallwatch.formats.trec_blocks.DEFAULT_BLOCK_BYTES` of text, or as many rows
of a Parquet or Arrow run), not the file, and the values are those of
:func:`~recallwatch.metrics.evaluate` on the whole run, bit for bit. A file not grouped by query
is regrouped through temporary files first (:mod:`recallwatch.metrics._regroup`), and the result
says so. A file the blocks cannot read (a refused line or a duplicate document, which the whole
reading then locates) is read whole, and the result says why. Qrels given as a file too large to
hold whole are scattered by query with the run (:mod:`recallwatch.metrics._partitioned`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from os import PathLike
from typing import Any

import numpy as np

from recallwatch.errors import InputError, UsageError
from recallwatch.formats.arrow import from_numpy
from recallwatch.formats.collections import is_collection
from recallwatch.formats.trec import TrecTable
from recallwatch.formats.trec_blocks import DEFAULT_BLOCK_BYTES, NotStreamable, whole_queries
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._evaluate import EvalResult, evaluate, merged
from recallwatch.metrics._measure import Measure, parse_measure
from recallwatch.metrics._partitioned import evaluate_partitioned, too_large_to_hold
from recallwatch.metrics._regroup import NoTemporaryFiles, regrouped
from recallwatch.metrics._run_files import run_file_pieces

__all__ = ["FileEvaluation", "evaluate_file"]

Array = np.ndarray[Any, Any]
_UNGROUPED = "the run is not grouped by query"


@dataclass(frozen=True)
class FileEvaluation:
    """An evaluation and how the run file was read."""

    result: EvalResult
    blocks: int  # blocks of queries evaluated (0: the run was read whole)
    read_whole: str | None  # why the run was read whole, None when it was read in blocks
    note: str | None = None  # what a user should hear about it (a run not grouped by query)
    temporary_files: int = 0  # the files a run not grouped by query was regrouped through


def evaluate_file(
    qrels: Qrels | str | PathLike[str], run_path: str | PathLike[str],
    measures: Iterable[str | Measure], *, block_bytes: int = DEFAULT_BLOCK_BYTES,
) -> FileEvaluation:
    """Evaluate the run file at ``run_path`` as ``evaluate(qrels, Run.read(run_path), measures)``
    does, in blocks of whole queries when the file allows it. ``qrels``: the judgments, or the
    path of a TREC qrels file, held whole only when it holds less text than a block."""
    wanted = list(dict.fromkeys(parse_measure(m) for m in measures))
    if not wanted:
        raise UsageError("no measure given: name at least one, e.g. nDCG@10")
    if isinstance(qrels, Qrels) or is_collection(qrels):
        return _with_qrels(Qrels.of(qrels), run_path, wanted, block_bytes)
    note = None
    if too_large_to_hold(qrels, block_bytes):
        try:
            parts = evaluate_partitioned(qrels, run_path, wanted, block_bytes)
            return FileEvaluation(parts.result, parts.groups, None, temporary_files=parts.files)
        except NoTemporaryFiles as why:
            note = f"{qrels}: {why.reason}; the qrels were read whole, so memory grew with them"
        except NotStreamable:
            pass  # reading the qrels whole names the line, as before
    done = _with_qrels(Qrels.from_trec(qrels), run_path, wanted, block_bytes)
    if note is not None:
        done = replace(done, note=note if done.note is None else f"{note}. {done.note}")
    return done


def _with_qrels(qrels: Qrels, run_path: str | PathLike[str], wanted: list[Measure],
                block_bytes: int) -> FileEvaluation:
    pieces = _Counted(run_path, block_bytes)
    try:
        result, blocks = _in_blocks(qrels, whole_queries(pieces), wanted)
        return FileEvaluation(result, blocks, None)
    except NotStreamable as why:
        reason = why.reason
    if reason.startswith(_UNGROUPED) and pieces.count <= 1:
        reason += "; it is one block, so it was read whole"  # what regrouping would cost
    elif reason.startswith(_UNGROUPED):
        try:
            with regrouped(run_path, block_bytes) as parts:
                result, blocks = _in_blocks(qrels, parts.blocks(), wanted)
            files = sum(1 for n in parts.rows if n)
            note = (f"{run_path}: {reason}; it was regrouped by query through {files} "
                    "temporary files, so memory stayed bounded (a run sorted by query is "
                    "faster, e.g. sort -s -k1,1 for a text run)")
            return FileEvaluation(result, blocks, None, note, files)
        except NoTemporaryFiles as why:
            reason = f"{reason}; {why.reason}"
            note = f"{run_path}: {reason}; it was read whole, so memory grew with the file"
            return FileEvaluation(evaluate(qrels, Run.read(run_path), wanted), 0, reason, note)
        except NotStreamable as why:
            reason = why.reason
    return FileEvaluation(evaluate(qrels, Run.read(run_path), wanted), 0, reason)


class _Counted:
    """The pieces of a run file, read when iterated, and how many were read."""

    def __init__(self, run_path: str | PathLike[str], block_bytes: int) -> None:
        self.run_path, self.block_bytes = run_path, block_bytes
        self.count = 0

    def __iter__(self) -> Iterator[TrecTable]:
        for piece in run_file_pieces(self.run_path, self.block_bytes):
            self.count += 1
            yield piece


class _Judgments:
    """The qrels grouped by query, to hand each block only its queries' judgments."""

    def __init__(self, qrels: Qrels) -> None:
        self.qrels = qrels
        index = qrels.query_index
        self.order = np.argsort(index, kind="stable")
        self.names = qrels.query_names  # byte order: a query's position is its place in a result
        self.starts = np.searchsorted(index[self.order], np.arange(len(self.names) + 1))
        self.position = {name: i for i, name in enumerate(self.names)}
        self.seen = np.zeros(len(self.names), dtype=bool)

    def of(self, query_ids: list[str]) -> tuple[Array, Qrels | None]:
        """The positions of the judged queries among ``query_ids`` (distinct ids), in order,
        and their judgments (None when none of them is judged)."""
        position = self.position
        found = np.sort(np.array([position[q] for q in query_ids if q in position],
                                 dtype=np.int64))
        self.seen[found] = True
        return found, self._subset(found)

    def unseen(self) -> tuple[Array, Qrels | None]:
        """The judged queries no block held, and their judgments."""
        queries = np.flatnonzero(~self.seen)
        return queries, self._subset(queries)

    def _subset(self, queries: Array) -> Qrels | None:
        rows = self._rows(queries)
        if not len(rows):
            return None
        q, take = self.qrels, from_numpy(rows)
        return Qrels(q.query_ids.take(take), q.doc_ids.take(take), q.grades[rows], q.source)

    def _rows(self, queries: Array) -> Array:
        starts, stops = self.starts[queries], self.starts[queries + 1]
        lengths = stops - starts
        offsets = np.repeat(starts - np.cumsum(lengths) + lengths, lengths)
        rows: Array = self.order[np.arange(int(lengths.sum())) + offsets]
        return rows


def _in_blocks(
    qrels: Qrels, tables: Iterator[TrecTable], wanted: list[Measure]
) -> tuple[EvalResult, int]:
    judgments = _Judgments(qrels)
    seen: set[str] = set()
    parts: list[tuple[Array, EvalResult]] = []
    not_judged: list[str] = []
    for table in tables:
        try:
            run = Run(table.query_ids, table.doc_ids, table.values.astype(np.float64, copy=False))
        except InputError:
            raise NotStreamable("a duplicate document (the whole reading locates it)") from None
        # the names of the block's queries: the run's validation found them already when each
        # query's rows are together (the usual case)
        blocks = run.blocks
        block_names = (table.query_ids.unique() if blocks is None else blocks.names).to_pylist()
        if not seen.isdisjoint(block_names):
            raise NotStreamable(f"{_UNGROUPED} (query "
                                f"{next(n for n in block_names if n in seen)!r} is in two places)")
        seen.update(block_names)
        positions, judged = judgments.of(block_names)
        if judged is None:
            not_judged.extend(block_names)
            continue
        part = evaluate(judged, run, wanted)
        not_judged.extend(part.not_judged)
        parts.append((positions, part))
    if not seen:
        raise NotStreamable("no record read in blocks")
    positions, missing = judgments.unseen()
    if missing is not None:
        parts.append((positions, evaluate(missing, Run.from_dict({}), wanted)))
    return merged(wanted, judgments.names, parts, sorted(not_judged)), len(parts)
