"""Precomputed vectors for a corpus ("bring your own vectors"): a ``vector`` field in each
JSONL or Parquet record, or a NumPy ``.npy`` file beside the corpus (``corpus.jsonl`` ->
``corpus.npy``) holding one row per record, in the file's order.

Every vector must have the dimension of the embedder named for the queries; a record without a
vector, a vector of the wrong length or with a value that is not a finite number is an
InputError naming the file, the line (or row) and the record.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch.errors import InputError
from recallwatch.formats.corpus import Rejection, _records

__all__ = ["beside", "read_corpus_vectors"]


def beside(corpus: Path) -> Path:
    """The ``.npy`` file that goes with a corpus: its name without the corpus suffixes."""
    name = corpus.name
    for suffix in (".jsonl.gz", ".jsonl", ".ndjson", ".parquet"):
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return corpus.with_name(name + ".npy")


def read_corpus_vectors(corpus: Path, dimension: int, *,
                        embedder: str = "the query embedder") -> dict[str, np.ndarray]:
    """Chunk id -> float32 vector, from the records' ``vector`` fields or the ``.npy`` beside."""
    rejected: list[Rejection] = []
    records = [(line, r) for line, r in _records(corpus, collect=True, rejected=rejected)
               if isinstance(r.get("id"), str)]
    expected = f"{dimension} finite numbers (the dimension of {embedder})"
    npy = beside(corpus)
    if any("vector" in r for _, r in records):
        out = {}
        for line, r in records:
            out[r["id"]] = _vector(r.get("vector"), dimension, corpus, line, r["id"], expected)
        return out
    if not npy.is_file():
        raise InputError(source=corpus, field="vector",
                         expected=f"a `vector` field in each record, or {npy.name} beside it",
                         found="<neither>")
    try:
        matrix = np.load(npy, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(source=npy, expected="a NumPy .npy array", found=f"<{exc}>") from None
    if matrix.ndim != 2 or matrix.shape[0] != len(records) or matrix.shape[1] != dimension:
        raise InputError(source=npy, expected=f"an array of {len(records)} rows (one per record "
                         f"of {corpus.name}) × {dimension} columns (the dimension of "
                         f"{embedder})", found=f"shape {tuple(matrix.shape)}")
    matrix = matrix.astype(np.float32)
    bad = np.flatnonzero(~np.isfinite(matrix).all(axis=1))
    if bad.size:
        row = int(bad[0])
        raise InputError(source=npy, line=row + 1, record=records[row][1]["id"],
                         expected="finite numbers", found="<NaN or infinity>")
    return {r["id"]: matrix[i] for i, (_, r) in enumerate(records)}


def _vector(value: Any, dimension: int, source: Path, line: int | None, record: str,
            expected: str) -> np.ndarray:
    if not isinstance(value, list) or len(value) != dimension or not all(
            not isinstance(x, bool) and isinstance(x, (int, float)) and math.isfinite(x)
            for x in value):
        found = (f"{len(value)} numbers" if isinstance(value, list) else
                 "<no vector>" if value is None else type(value).__name__)
        raise InputError(source=source, line=line, record=record, field="vector",
                         expected=expected, found=found)
    return np.asarray(value, dtype=np.float32)
