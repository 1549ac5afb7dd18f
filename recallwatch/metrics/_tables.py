"""Columns for qrels and runs: from Python mappings, pandas/polars frames, Arrow tables and
Parquet/Arrow files, with each value checked (ids are strings, grades integers, scores finite).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import chain, compress
from operator import methodcaller
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch.errors import InputError
from recallwatch.formats.arrow import from_numpy, strings, to_numpy

__all__ = ["COLUMNAR", "columnar_batches", "columns", "flatten", "flatten_scores", "floats",
           "integers", "read_columnar", "string_column"]

Array = np.ndarray[Any, Any]


def flatten(nested: Mapping[str, Mapping[str, Any]], value: str = "score"
            ) -> tuple[pa.Array, pa.Array, list[Any]]:
    """``{query_id: {doc_id: value}}`` as three columns; anything else is an InputError that
    says what was expected.

    Built without a Python loop over the entries: the ids and values are gathered by C-level
    iteration (``itertools.chain``), and each query id is written once and repeated by Arrow."""
    queries, docids, inner = _flat_ids(nested, value)
    return queries, docids, list(chain.from_iterable(map(methodcaller("values"), inner)))


def flatten_scores(nested: Mapping[str, Mapping[str, Any]]
                   ) -> tuple[pa.Array, pa.Array, Array]:
    """:func:`flatten` with the values as :func:`floats` gives them, read straight into a
    float64 array (no list of them first); a value that is not a finite number is refused as
    :func:`floats` refuses it."""
    queries, docids, inner = _flat_ids(nested, "score")
    try:
        scores = np.fromiter(chain.from_iterable(map(methodcaller("values"), inner)),
                             np.float64, count=len(docids))
    except (TypeError, ValueError, OverflowError):
        scores = None  # read again as a list, to name the value
    if scores is None or not np.isfinite(scores).all():
        scores = floats(list(chain.from_iterable(map(methodcaller("values"), inner))), "score")
    return queries, docids, scores


def _flat_ids(nested: Mapping[str, Mapping[str, Any]], value: str
              ) -> tuple[pa.Array, pa.Array, list[Mapping[str, Any]]]:
    """The query ids and doc ids of :func:`flatten`, and the inner mappings."""
    if not isinstance(nested, Mapping):
        raise InputError(expected=f"a mapping {{query_id: {{doc_id: {value}}}}}",
                         found=f"<{type(nested).__name__}>")
    inner = list(nested.values())
    if set(map(type, inner)) - {dict}:  # plain dicts are mappings: only the others are asked
        for qid, docs in nested.items():
            if not isinstance(docs, Mapping):
                raise InputError(record=str(qid), expected=f"a mapping {{doc_id: {value}}}",
                                 found=f"<{type(docs).__name__}>",
                                 hint=f"write {{query_id: {{doc_id: {value}, ...}}, ...}}")
    lengths = np.fromiter(map(len, inner), np.int64, count=len(inner))
    named = list(compress(nested, lengths.tolist()))  # the queries with entries
    queries = string_column(named, "query id").take(
        from_numpy(np.repeat(np.arange(len(named)), lengths[lengths > 0])))
    return queries, string_column(list(chain.from_iterable(inner)), "doc id"), inner


def string_column(values: list[Any], what: str) -> pa.Array:
    try:
        return strings(values)
    except TypeError:
        bad = next(v for v in values if not isinstance(v, str))
        raise InputError(field=what, expected="a string", found=bad) from None


def integers(values: Any, what: str) -> Array:
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array.astype(np.int64)
    if array.dtype.kind == "b" or array.dtype.kind == "f":
        as_int = array.astype(np.int64) if np.isfinite(array).all() else None
        if as_int is not None and (as_int == array).all():
            return as_int
    bad = next(
        (
            v
            for v in np.ravel(array).tolist()
            if not (isinstance(v, int) and not isinstance(v, bool))
            and not (isinstance(v, float) and v.is_integer())
        ),
        None,
    )
    raise InputError(field=what, expected="an integer grade", found=bad)


def floats(values: Any, what: str, source: str | None = None) -> Array:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        bad = next(v for v in values if not isinstance(v, int | float))
        raise InputError(source=source, field=what, expected="a finite number",
                         found=bad) from None
    if not np.isfinite(array).all():
        raise InputError(
            source=source, field=what, expected="a finite number",
            found=float(array[~np.isfinite(array)][0]),
        )
    return array


def columns(
    frame: Any, *names: str, source: str | None = None
) -> tuple[pa.Array, pa.Array, Array]:
    """Three columns of an Arrow table or a pandas or polars DataFrame, without importing
    either library."""
    if isinstance(frame, pa.Table):
        table = frame
    else:
        table = frame.to_arrow() if hasattr(frame, "to_arrow") else pa.Table.from_pandas(frame)
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise InputError(
            source=source,
            field=missing[0],
            expected=f"a column named {missing[0]!r}",
            found=f"<columns {', '.join(table.column_names)}>",
        )
    qid, docid, value = (table.column(n).combine_chunks() for n in names)
    for name, column in zip(names, (qid, docid, value), strict=False):
        if column.null_count:
            raise InputError(source=source, field=name, expected="a value in every row",
                             found="<a missing value>")
    qid, docid = (pc.cast(c, pa.string()) if c.type != pa.string() else c for c in (qid, docid))
    if pa.types.is_boolean(value.type):
        value = pc.cast(value, pa.int8())
    if not (pa.types.is_integer(value.type) or pa.types.is_floating(value.type)):
        raise InputError(source=source, field=names[2], expected="a column of numbers",
                         found=f"<a column of {value.type}>")
    return qid, docid, to_numpy(value)


COLUMNAR = (".parquet", ".arrow", ".feather", ".ipc")


def read_columnar(path: Path, suffix: str) -> pa.Table:
    """A Parquet or Arrow IPC file, read into memory Arrow owns."""
    with _read_errors(path, suffix):
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            return pq.read_table(path)
        with pa.OSFile(str(path)) as f:
            return _ipc_reader(f).read_all()


def columnar_batches(path: Path, suffix: str, rows: int) -> Iterator[pa.Table]:
    """The rows of a Parquet or Arrow IPC file in order, at most ``rows`` at a time (a Parquet
    file by record batches; an Arrow file or stream a record batch, as written, at a time, cut
    in pieces), with the errors of :func:`read_columnar`."""
    with _read_errors(path, suffix):
        if suffix == ".parquet":
            import pyarrow.parquet as pq

            with pq.ParquetFile(path) as parquet:
                for batch in parquet.iter_batches(batch_size=rows):
                    yield pa.Table.from_batches([batch])
            return
        with pa.OSFile(str(path)) as f:
            reader = _ipc_reader(f)
            batches = (reader if isinstance(reader, pa.ipc.RecordBatchStreamReader) else
                       (reader.get_batch(i) for i in range(reader.num_record_batches)))
            for batch in batches:
                for start in range(0, batch.num_rows, rows):
                    yield pa.Table.from_batches([batch.slice(start, rows)])


def _ipc_reader(
    f: pa.NativeFile,
) -> pa.ipc.RecordBatchFileReader | pa.ipc.RecordBatchStreamReader:
    """An Arrow IPC file's reader, or a stream's (the format without the file's footer)."""
    try:
        return pa.ipc.open_file(f)
    except pa.ArrowInvalid as not_a_file:
        f.seek(0)
        try:
            return pa.ipc.open_stream(f)
        except pa.ArrowInvalid:
            raise not_a_file from None


@contextmanager
def _read_errors(path: Path, suffix: str) -> Iterator[None]:
    """A file that cannot be read as ``suffix`` says so as an InputError naming it."""
    what = "a Parquet file" if suffix == ".parquet" else "an Arrow IPC (Feather v2) file"
    try:
        yield
    except FileNotFoundError:
        raise InputError(source=path, expected=what, found="<no such file>") from None
    except IsADirectoryError:
        raise InputError(source=path, expected=what, found="<a directory>") from None
    except PermissionError:
        raise InputError(source=path, expected=what, found="<permission denied>") from None
    except (OSError, pa.ArrowException) as exc:
        raise InputError(source=path, expected=what, found=f"<{exc}>") from None
