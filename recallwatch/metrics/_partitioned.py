"""Qrels too large to hold whole: the judgments and the run scattered by query into the same
numbered temporary files, then evaluated a group of files at a time.

A qrels file of more text than a block (16 MB: about 800,000 judgments) is not read whole. Both
files are read a piece at a time and each record goes to temporary file ``crc32(query id) % K``
of its kind (:func:`recallwatch.metrics._regroup.scatter`), so that a query's judgments and its
run records sit in files of the same number. Consecutive numbers are then read together up to
a block's rows and evaluated as a whole run of their own; a query's values depend only on its
own lines and judgments, so the merged result is the whole reading's, bit for bit. Memory
follows the block, plus each judged query's id and values in the result.

Anything the pieces cannot settle (a refused line, a duplicate judgment or document, a file that
is not a regular file) raises :class:`NotStreamable`, and the caller reads the qrels whole: that
reading names the line, as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.compute as pc

from recallwatch.errors import InputError
from recallwatch.formats.trec import TrecTable
from recallwatch.formats.trec_blocks import NotStreamable, trec_pieces
from recallwatch.metrics._data import Qrels, Run
from recallwatch.metrics._evaluate import EvalResult, evaluate, merged
from recallwatch.metrics._measure import Measure
from recallwatch.metrics._regroup import (
    Scattered,
    file_count,
    groups,
    scatter,
    temporary_folder,
    text_bytes,
)
from recallwatch.metrics._run_files import block_rows, run_file_pieces

__all__ = ["Partitioned", "evaluate_partitioned", "too_large_to_hold"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Partitioned:
    """What the partitioned evaluation gave and did."""

    result: EvalResult
    groups: int  # groups of files evaluated
    files: int  # temporary files that received records


def too_large_to_hold(qrels_path: str | PathLike[str], block_bytes: int) -> bool:
    """Whether the qrels file holds more text than a block (by its size; a gzip file counts as
    several times its size)."""
    path = Path(qrels_path)
    return path.is_file() and text_bytes(path) > block_bytes


def evaluate_partitioned(qrels_path: str | PathLike[str], run_path: str | PathLike[str],
                         wanted: list[Measure], block_bytes: int) -> Partitioned:
    """``evaluate(Qrels.from_trec(qrels_path), Run.read(run_path), wanted)``, holding a group
    of queries' judgments and records at a time (see the module's docstring)."""
    if not Path(run_path).is_file():
        raise NotStreamable(f"{run_path} is not a regular file")
    k = max(file_count(Path(qrels_path), block_bytes), file_count(Path(run_path), block_bytes))
    with temporary_folder() as folder:
        judged = scatter(trec_pieces(qrels_path, "qrels", block_bytes=block_bytes), folder,
                         "qrels", k, str(qrels_path))
        run = scatter(run_file_pieces(run_path, block_bytes), folder, "run", k, str(run_path))
        for scattered in (judged, run):
            if not sum(scattered.rows):
                raise NotStreamable(f"no record of {scattered.source} read in pieces")
        parts: list[EvalResult] = []
        not_judged: list[str] = []
        rows = [a + b for a, b in zip(judged.rows, run.rows, strict=True)]
        for numbers in groups(rows, block_rows(block_bytes)):
            part = _evaluated(judged, run, numbers, wanted)
            if isinstance(part, EvalResult):
                parts.append(part)
                not_judged.extend(part.not_judged)
            else:
                not_judged.extend(part)
        files = sum(1 for n in judged.rows if n) + sum(1 for n in run.rows if n)
    return Partitioned(_merged(wanted, parts, sorted(not_judged)), len(parts), files)


def _evaluated(judged: Scattered, run: Scattered, numbers: list[int],
               wanted: list[Measure]) -> EvalResult | list[str]:
    """The evaluation of the files ``numbers``, or the run's queries there when none of them
    is judged."""
    with_run = [i for i in numbers if run.rows[i]]
    records = _run(run.read(with_run)) if with_run else Run.from_dict({})
    with_judgments = [i for i in numbers if judged.rows[i]]
    if not with_judgments:
        names: list[str] = pc.unique(records.query_ids).to_pylist()
        return names
    table = judged.read(with_judgments)
    try:  # no source: the whole reading locates a duplicate (its line in the file)
        qrels = Qrels(table.query_ids, table.doc_ids, table.values)
    except InputError:
        raise NotStreamable("a judgment given twice (the whole reading locates it)") from None
    return evaluate(qrels, records, wanted)


def _run(table: TrecTable) -> Run:
    try:
        return Run(table.query_ids, table.doc_ids, table.values)
    except InputError:
        raise NotStreamable("a duplicate document (the whole reading locates it)") from None


def _merged(wanted: list[Measure], parts: Iterable[EvalResult],
            not_judged: list[str]) -> EvalResult:
    """The parts' results as one, every judged query in byte order (as the qrels order them:
    the code point order Python sorts strings in is their UTF-8 bytes' order). Sorted in Python:
    an Arrow array built from a list would import pandas, a second of a cold start."""
    parts = list(parts)
    names = [q for p in parts for q in p.query_ids]
    order = np.fromiter(sorted(range(len(names)), key=names.__getitem__), np.int64, len(names))
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    positioned: list[tuple[Array, EvalResult]] = []
    start = 0
    for part in parts:
        positioned.append((rank[start:start + len(part.query_ids)], part))
        start += len(part.query_ids)
    return merged(wanted, [names[i] for i in order], positioned, not_judged)
