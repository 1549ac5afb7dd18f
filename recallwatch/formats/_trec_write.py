"""Writing TREC qrels and run files, as :mod:`recallwatch.formats.trec` reads them back: one
space between fields, ids (and a run's tag) checked to hold no whitespace, scores at full
precision; each file replaced whole (:func:`recallwatch._files.atomic_path`)."""

from __future__ import annotations

from os import PathLike
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from recallwatch._files import atomic_path
from recallwatch.errors import InputError

__all__ = ["write_qrels", "write_run"]


def write_qrels(
    path: str | PathLike[str],
    query_ids: pa.Array | list[str],
    doc_ids: pa.Array | list[str],
    grades: np.ndarray[Any, Any] | list[int],
) -> None:
    """Write ``qid 0 docid rel`` lines (gzip when the name ends in ``.gz``)."""
    n = len(grades)
    _write(
        path,
        {
            "qid": query_ids,
            "iter": pa.array(np.zeros(n, dtype=np.int64)),
            "docid": doc_ids,
            "rel": pa.array(np.asarray(grades, dtype=np.int64)),
        },
    )


def write_run(
    path: str | PathLike[str],
    query_ids: pa.Array | list[str],
    doc_ids: pa.Array | list[str],
    ranks: np.ndarray[Any, Any] | list[int],
    scores: np.ndarray[Any, Any] | list[float],
    tag: str = "recallwatch",
) -> None:
    """Write ``qid Q0 docid rank score tag`` lines (gzip when the name ends in ``.gz``).

    Scores are written with ``repr`` precision, so they parse back to the same float64.
    """
    if not tag or any(c.isspace() for c in tag):
        raise InputError(source=path, field="tag", expected=_NO_SPACE, found=tag, hint=_WHY)
    n = len(scores)
    score_text = pc.cast(pa.array(np.asarray(scores, dtype=np.float64)), pa.string())
    _write(
        path,
        {
            "qid": query_ids,
            "Q0": pa.repeat("Q0", n),
            "docid": doc_ids,
            "rank": pa.array(np.asarray(ranks, dtype=np.int64)),
            "score": score_text,
            "tag": pa.repeat(tag, n),
        },
    )


_NO_SPACE = "a non-empty id without whitespace"
_WHY = "TREC files separate their fields by whitespace, so an id cannot hold any"


def _write(path: str | PathLike[str], columns: dict[str, Any]) -> None:
    for name in ("qid", "docid"):
        text = columns[name]
        text = pa.array(text, pa.string()) if isinstance(text, list) else text
        bad = pc.or_(pc.match_substring_regex(text, r"\s"), pc.equal(pc.binary_length(text), 0))
        if len(text) and pc.any(bad).as_py():
            first = text.filter(bad)[0].as_py()
            raise InputError(source=path, field=name, expected=_NO_SPACE, found=first,
                             hint=_WHY)
        columns[name] = text
    table = pa.table(columns)
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    target = Path(path)
    with atomic_path(target) as tmp:
        if target.suffix == ".gz":
            with pa.CompressedOutputStream(str(tmp), "gzip") as out:
                pacsv.write_csv(table, out, write_options=options)
        else:
            pacsv.write_csv(table, str(tmp), write_options=options)
