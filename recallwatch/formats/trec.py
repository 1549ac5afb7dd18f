"""TREC qrels (``qid iter docid rel``) and run (``qid Q0 docid rank score tag``) files.

The happy path never loops over lines in Python: the file is read once (gzip detected by its magic
bytes, not its name), handed to pyarrow's CSV reader with a single-space delimiter, and only when
that fails is whitespace normalised and the parse retried. Locating the offending line, with what
was expected and what was found, happens on the error path only, by re-scanning the bytes.
"""

from __future__ import annotations

import gzip
import math
import re
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from recallwatch.errors import InputError
from recallwatch.formats._arrow import arrow_owned, to_numpy

__all__ = [
    "TrecKind",
    "TrecTable",
    "line_of_record",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
]

TrecKind = Literal["qrels", "run"]


@dataclass(frozen=True)
class _Layout:
    columns: tuple[str, ...]
    value_column: str  # the numeric column: the grade of a qrels line, the score of a run line
    value_expected: str
    example: str


_LAYOUTS: dict[TrecKind, _Layout] = {
    "qrels": _Layout(
        ("qid", "iter", "docid", "rel"), "rel", "an integer relevance grade", "qid 0 docid rel"
    ),
    "run": _Layout(
        ("qid", "Q0", "docid", "rank", "score", "tag"),
        "score",
        "a finite number",
        "qid Q0 docid rank score tag",
    ),
}

_GZIP_MAGIC = b"\x1f\x8b"
_SPACES = re.compile(rb"[ \t\f\v]+")
_EDGES = re.compile(rb"(?m)^ | $| (?=\r$)")


@dataclass(frozen=True)
class TrecTable:
    """The columns of a TREC file that evaluation uses, one entry per non-blank line."""

    query_ids: pa.Array  # string
    doc_ids: pa.Array  # string
    values: np.ndarray[Any, Any]  # int64 grades (qrels) or float64 scores (run)
    source: str

    def __len__(self) -> int:
        return len(self.values)


def read_qrels(path: str | PathLike[str]) -> TrecTable:
    """Read a TREC qrels file (plain or gzip): ``qid iter docid rel``, rel an integer."""
    return _read(path, "qrels")


def read_run(path: str | PathLike[str]) -> TrecTable:
    """Read a TREC run file (plain or gzip): ``qid Q0 docid rank score tag``.

    The rank column is ignored, as trec_eval ignores it: order comes from the scores.
    """
    return _read(path, "run")


def _read_bytes(path: str | PathLike[str], kind: TrecKind) -> bytes:
    p = Path(path)
    try:
        with p.open("rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise InputError(
            source=p, expected=f"a readable TREC {kind} file", found="<no such file>"
        ) from None
    except IsADirectoryError:
        raise InputError(
            source=p, expected=f"a readable TREC {kind} file", found="<a directory>"
        ) from None
    except PermissionError:
        raise InputError(
            source=p, expected=f"a readable TREC {kind} file", found="<permission denied>"
        ) from None
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise InputError(
                source=p, expected="a complete gzip stream", found=f"<{exc}>"
            ) from None
    return data


def _read(path: str | PathLike[str], kind: TrecKind) -> TrecTable:
    layout = _LAYOUTS[kind]
    source = str(path)
    data = _read_bytes(path, kind)
    if not data.strip():
        raise InputError(
            source=source,
            expected=f"at least one line '{layout.example}'",
            found="<an empty file>",
        )
    table = _parse(data, layout)
    if table is None:
        # Tabs, repeated or trailing blanks: legal TREC whitespace the fast parser cannot split.
        table = _parse(_normalise(data), layout)
    if table is None:
        raise _locate_error(data, source, layout) or InputError(
            source=source, expected=f"lines '{layout.example}'", found="<unparseable content>"
        )
    qids = table.column("qid").combine_chunks()
    docids = table.column("docid").combine_chunks()
    raw = table.column(layout.value_column).combine_chunks()
    if raw.null_count or _has_empty(qids) or _has_empty(docids):
        raise _locate_error(data, source, layout) or InputError(
            source=source, expected=f"lines '{layout.example}'", found="<an empty field>"
        )
    values = to_numpy(raw)
    if kind == "run" and not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values))[0])
        raise InputError(
            source=source,
            line=line_of_record(data, row),
            field="score",
            expected="a finite number",
            found=str(values[row]),
        )
    return TrecTable(qids, docids, values, source)


def _parse(data: bytes, layout: _Layout) -> pa.Table | None:
    value_type = pa.int64() if layout.value_column == "rel" else pa.float64()
    try:
        return pacsv.read_csv(
            # Arrow-owned memory: the threaded reader may free its input after returning
            pa.BufferReader(arrow_owned(data)),
            read_options=pacsv.ReadOptions(column_names=list(layout.columns)),
            parse_options=pacsv.ParseOptions(
                delimiter=" ", quote_char=False, double_quote=False, escape_char=False
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={
                    "qid": pa.string(),
                    "docid": pa.string(),
                    layout.value_column: value_type,
                },
                include_columns=["qid", "docid", layout.value_column],
                strings_can_be_null=False,
                quoted_strings_can_be_null=False,
            ),
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None


def _normalise(data: bytes) -> bytes:
    return _EDGES.sub(b"", _SPACES.sub(b" ", data))


def _has_empty(strings: pa.Array) -> bool:
    return bool(len(strings)) and pc.min(pc.binary_length(strings)).as_py() == 0


def _lines(data: bytes) -> list[tuple[int, bytes]]:
    """(1-based line number, content) of every non-blank line, as pyarrow counts records."""
    return [(i, line) for i, line in enumerate(data.split(b"\n"), 1) if line.strip()]


def line_of_record(data: bytes | str | PathLike[str], index: int) -> int:
    """The 1-based line number of the ``index``-th record (0-based), blank lines skipped.

    Error path only: it loops over lines. ``data`` is the file's bytes or its path.
    """
    if not isinstance(data, bytes):
        data = _read_bytes(data, "run")
    return _lines(data)[index][0]


def _locate_error(data: bytes, source: str, layout: _Layout) -> InputError | None:
    """Re-scan line by line for the first bad line: the slow, precise explanation."""
    n_columns = len(layout.columns)
    value_index = layout.columns.index(layout.value_column)
    for number, raw in _lines(data):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.end]
            return InputError(
                source=source,
                line=number,
                expected="UTF-8 text",
                found=f"<bytes {bad!r} at column {exc.start + 1}>",
            )
        fields = text.split()
        if len(fields) != n_columns:
            return InputError(
                source=source,
                line=number,
                expected=f"{n_columns} whitespace-separated columns '{layout.example}'",
                found=f"<{len(fields)} columns: {text.strip()!r}>",
            )
        value = fields[value_index]
        if not _valid_value(value, layout):
            return InputError(
                source=source,
                line=number,
                record=fields[0],
                field=layout.value_column,
                expected=layout.value_expected,
                found=value,
            )
    return None


def _valid_value(text: str, layout: _Layout) -> bool:
    if layout.value_column == "rel":
        try:
            int(text)
        except ValueError:
            return False
        return True
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


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


def _write(path: str | PathLike[str], columns: dict[str, Any]) -> None:
    for name in ("qid", "docid"):
        text = columns[name]
        text = pa.array(text, pa.string()) if isinstance(text, list) else text
        bad = pc.or_(pc.match_substring_regex(text, r"\s"), pc.equal(pc.binary_length(text), 0))
        if len(text) and pc.any(bad).as_py():
            first = text.filter(bad)[0].as_py()
            raise InputError(field=name, expected="non-empty ids without whitespace", found=first)
        columns[name] = text
    table = pa.table(columns)
    options = pacsv.WriteOptions(include_header=False, delimiter=" ", quoting_style="none")
    target = Path(path)
    if target.suffix == ".gz":
        with pa.CompressedOutputStream(str(target), "gzip") as out:
            pacsv.write_csv(table, out, write_options=options)
    else:
        pacsv.write_csv(table, str(target), write_options=options)
