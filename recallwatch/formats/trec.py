"""TREC qrels (``qid iter docid rel``) and run (``qid Q0 docid rank score tag``) files, read as
trec_eval 10 reads them (get_qrels.c, get_trec_results.c).

A line is split on ASCII whitespace (space, tab, CR, LF, VT, FF: C's ``isspace``). Blank lines
and comment lines (first non-blank character ``#``) are skipped. A qrels line has exactly four
fields; a run line at least six, text after the run tag being ignored. A grade is a decimal
integer with an optional sign; a score a finite decimal number. Where recallwatch parts from
trec_eval (it refuses what trec_eval's ``atol``/``atof`` would read leniently, e.g. a grade
``0.5`` or a score ``nan``) docs/metrics.md says so.

The happy path never loops over lines in Python: the file is read once, within the line cap
(``_trec_input.py``: a plain file, a pipe or a gzip stream, each line at most 16 MB), and handed
to pyarrow's CSV reader with a single-space delimiter. Files that
need more (repeated blanks, comments, text after the run tag, a ``+`` sign) are normalised by
pyarrow's regex kernels and parsed again, still without a Python loop. Only when that fails too is
the file re-scanned line by line, to say where and what is wrong; that scan applies the same rules
(a test holds the three to agreement).

The three readings stay in this one module on purpose: they apply one definition of a field and a
value (``_LAYOUTS``, ``_INTEGER``, ``_DECIMAL``), kept side by side so that they cannot drift.
Getting the bytes (``_trec_input.py``) and writing files (``_trec_write.py``, whose functions are
imported from here) are apart.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from os import PathLike
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from recallwatch.errors import InputError
from recallwatch.formats._trec_input import read_trec
from recallwatch.formats._trec_write import write_qrels, write_run
from recallwatch.formats.arrow import arrow_owned, contains_byte, to_numpy

__all__ = [
    "TrecKind",
    "TrecTable",
    "line_of_record",
    "parse_lines",
    "read_qrels",
    "read_run",
    "write_qrels",
    "write_run",
]

TrecKind = Literal["qrels", "run"]


@dataclass(frozen=True)
class _Layout:
    kind: TrecKind
    columns: tuple[str, ...]
    value_column: str  # the numeric column: the grade of a qrels line, the score of a run line
    value_expected: str
    example: str
    extra_fields_ignored: bool  # trec_eval skips text after a run's tag; a qrels line must end

    @property
    def value_index(self) -> int:
        return self.columns.index(self.value_column)


_LAYOUTS: dict[TrecKind, _Layout] = {
    "qrels": _Layout(
        "qrels",
        ("qid", "iter", "docid", "rel"),
        "rel",
        "an integer relevance grade",
        "qid 0 docid rel",
        extra_fields_ignored=False,
    ),
    "run": _Layout(
        "run",
        ("qid", "Q0", "docid", "rank", "score", "tag"),
        "score",
        "a finite number",
        "qid Q0 docid rank score tag",
        extra_fields_ignored=True,
    ),
}

_TOKEN = re.compile(rb"[^ \t\n\r\x0b\x0c]+")  # a field: a run of non-isspace bytes
# What Python's int()/float() accept beyond these (1_0, full-width digits, surrounding blanks)
# pyarrow refuses; what pyarrow accepts beyond them (0x10, nan, inf) trec_eval would not read as
# meant. These two patterns are the definition; both parsers are held to them.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64 = range(-(2**63), 2**63)
_TABS_TO_SPACES = bytes.maketrans(b"\t\x0b\x0c", b"   ")
_BLANKS_TO_SPACES = bytes.maketrans(b"\t\x0b\x0c\r", b"    ")
_MAX_BLOCK = 2**31 - 1  # pyarrow's block size is a 32-bit int


@dataclass(frozen=True)
class TrecTable:
    """The columns of a TREC file that evaluation uses, one entry per judgment or result line."""

    query_ids: pa.Array  # string
    doc_ids: pa.Array  # string
    values: np.ndarray[Any, Any]  # int64 grades (qrels) or float64 scores (run)
    source: str
    sha256: str | None = None  # of the file's bytes as stored (asked for with digest=True)

    def __len__(self) -> int:
        return len(self.values)


def read_qrels(path: str | PathLike[str]) -> TrecTable:
    """Read a TREC qrels file (plain or gzip): ``qid iter docid rel``, rel an integer."""
    return _read(path, "qrels")


def read_run(path: str | PathLike[str], *, digest: bool = False) -> TrecTable:
    """Read a TREC run file (plain or gzip): ``qid Q0 docid rank score tag``.

    The rank column is ignored, as trec_eval ignores it: order comes from the scores. So is any
    text after the tag. ``digest``: also hash the bytes read (``TrecTable.sha256``), the very
    bytes parsed, so the hash names exactly this table.
    """
    return _read(path, "run", digest=digest)


def _read(path: str | PathLike[str], kind: TrecKind, *, digest: bool = False) -> TrecTable:
    layout = _LAYOUTS[kind]
    source = str(path)
    read, sha256 = read_trec(path, kind, digest=digest)
    data = read if isinstance(read, pa.Buffer) else arrow_owned(read)
    if _blank(data):
        raise InputError(
            source=source,
            expected=f"at least one line '{layout.example}'",
            found="<an empty file>",
        )
    # trec_eval forbids NUL bytes (its fields are C strings); a NUL is never legal here either.
    # The fast path never accepts one (it refuses control bytes in fields).
    columns = _parse_fast(data, layout)
    if columns is None and not contains_byte(data, 0):
        columns = _parse_general(data.to_pybytes(), layout)
    if columns is None or (kind == "run" and not np.isfinite(columns[2]).all()):
        raise _locate_error(data.to_pybytes(), source, layout) or InputError(
            source=source,
            expected=f"lines '{layout.example}'",
            found="<a line recallwatch could not locate>",
            hint="this is a bug in recallwatch: please report it with the file",
        )
    qids, docids, values = columns
    if len(values) == 0:
        raise InputError(
            source=source,
            expected=f"at least one line '{layout.example}'",
            found="<only comments and blank lines>",
        )
    return TrecTable(qids, docids, values, source, sha256)


def parse_lines(data: bytes | pa.Buffer, kind: TrecKind, source: str) -> TrecTable | None:
    """The records of a piece of a file made of whole lines (a block of a file read in parts),
    by the same rules as :func:`read_run` and :func:`read_qrels`; None when the piece holds
    something those refuse: reading the whole file then says where and what.

    One thread: a piece is small, and the reader's threads would cost more CPU time than they
    save (the pieces of a file are read one after another in any case)."""
    layout = _LAYOUTS[kind]
    owned = data if isinstance(data, pa.Buffer) else arrow_owned(data)
    columns = _parse_fast(owned, layout, threads=False)
    if columns is None and not contains_byte(owned, 0):
        columns = _parse_general(owned.to_pybytes(), layout)
    if columns is None or (kind == "run" and not np.isfinite(columns[2]).all()):
        return None
    return TrecTable(*columns, source)


_Columns = tuple[pa.Array, pa.Array, np.ndarray[Any, Any]]


def _blank(data: pa.Buffer) -> bool:
    """Whether the file holds only whitespace (looking no further than its first other byte)."""
    head = data[:4096].to_pybytes()
    return not head or (head.isspace() and (len(head) == data.size or data.to_pybytes().isspace()))


def _parse_fast(data: bytes | pa.Buffer, layout: _Layout, *, threads: bool = True
                ) -> _Columns | None:
    """The common case, one space or tab between fields: pyarrow's CSV reader alone.

    None when the file needs more than that, never a wrong table: every shape a single-space
    CSV parse would misread is excluded by a memchr-speed test first, or detected after.
    """
    if isinstance(data, bytes):
        data = arrow_owned(data)
    if contains_byte(data, ord("\r")) and _has_lone_cr(data):
        return None  # a lone CR separates fields for trec_eval, lines for pyarrow
    columns = _parse_single_space(data, layout, threads)
    if columns is None and any(contains_byte(data, byte) for byte in b"\t\x0b\x0c"):
        # any isspace byte separates fields (a tab-separated file fails the first try at once)
        columns = _parse_single_space(arrow_owned(data.to_pybytes().translate(_TABS_TO_SPACES)),
                                      layout, threads)
    return columns


def _parse_single_space(data: pa.Buffer, layout: _Layout, threads: bool) -> _Columns | None:
    if layout.kind == "qrels" and _may_hold_hex(data):
        return None  # pyarrow reads 0x10 as 16, trec_eval's atol as 0: let the strict path judge
    value_type = pa.int64() if layout.kind == "qrels" else pa.float64()
    table = _read_csv(data, layout, value_type, every_column=True, threads=threads)
    if table is None:
        return None
    for name in layout.columns:
        if name == layout.value_column:
            continue  # parsed as a number: any other byte fails the parse
        column = table.column(name)
        # Repeated or edge blanks make empty fields, which a single-space parse would accept;
        # a tab, CR, VT, FF or NUL inside a field means other separators (or a refusal).
        if _has_empty(column) or _has_control_byte(column):
            return None
    qids = table.column("qid").combine_chunks()
    if contains_byte(data, ord("#")) and pc.any(pc.starts_with(qids, "#")).as_py():
        return None  # a comment line with as many words as a record
    values = to_numpy(table.column(layout.value_column))
    return qids, table.column("docid").combine_chunks(), values


def _has_control_byte(column: pa.ChunkedArray) -> bool:
    """Whether a field holds a byte below 0x0e (NUL, tab, LF, VT, FF, CR and 1-8): one vectorised
    minimum over the field bytes, cheaper than a scan of the whole file per byte value."""
    for chunk in column.chunks:
        if not len(chunk):
            continue
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=len(chunk) + 1,
                                offset=chunk.offset * 4)
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        if len(data) and data.min() < 0x0E:
            return True
    return False


def _parse_general(data: bytes, layout: _Layout) -> _Columns | None:
    """Normalise with pyarrow's (RE2) regex kernels, then parse as the fast path does.

    Comment lines and edge blanks are emptied (lines keep their numbers; the CSV reader skips
    empty lines), blank runs become one space, and a run line keeps its first six fields.
    """
    text = _whole(data.translate(_BLANKS_TO_SPACES))
    text = pc.replace_substring_regex(text, r"(?m)^ *#[^\n]*|^ +| +$", "")
    text = pc.replace_substring_regex(text, r"  +", " ")
    if layout.extra_fields_ignored:
        fields = len(layout.columns)
        text = pc.replace_substring_regex(
            text, rf"(?m)^((?:[^ \n]+ ){{{fields - 1}}}[^ \n]+) [^\n]*", r"\1"
        )
    # Grades are read as text so that the one integer grammar decides (pyarrow takes 0x10, not +1).
    value_type = pa.binary() if layout.kind == "qrels" else pa.float64()
    table = _read_csv(text[0].as_buffer(), layout, value_type, every_column=False)
    if table is None:
        return None
    raw = table.column(layout.value_column).combine_chunks()
    if layout.kind == "qrels":
        grammar = pc.match_substring_regex(raw, rf"^{_INTEGER.pattern}$")
        if not pc.all(grammar, min_count=0).as_py():
            return None
        try:
            raw = pc.cast(pc.replace_substring(raw, "+", "", max_replacements=1), pa.int64())
        except pa.ArrowInvalid:  # beyond 64 bits
            return None
    return (
        table.column("qid").combine_chunks(),
        table.column("docid").combine_chunks(),
        to_numpy(raw),
    )


def _whole(data: bytes | pa.Buffer) -> pa.Array:
    """The bytes as a one-element binary array for pyarrow's regex kernels.

    In Arrow-owned memory (``bytes`` are copied): a kernel may pass its input through unchanged,
    and what it returns reaches the threaded CSV reader (see ``arrow_owned``).
    """
    owned = data if isinstance(data, pa.Buffer) else arrow_owned(data)
    offsets = np.array([0, owned.size], dtype=np.int64)
    return pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), 1, [None, arrow_owned(offsets), owned]
    )


def _may_hold_hex(data: pa.Buffer) -> bool:
    """Whether a field may start with 0x or 0X (memchr for the letter first: the pair is slower)."""
    letters = [letter for letter in b"xX" if contains_byte(data, letter)]
    if not letters:
        return False
    text = data.to_pybytes()
    return any(b" 0" + bytes([letter]) in text for letter in letters)


def _has_lone_cr(data: bytes | pa.Buffer) -> bool:
    """Whether a CR in ``data`` is not followed by LF (one RE2 scan, faster than numpy's)."""
    return bool(pc.match_substring_regex(_whole(data), r"\r(?:[^\n]|$)")[0].as_py())


def _read_csv(
    data: bytes | pa.Buffer, layout: _Layout, value_type: pa.DataType, *, every_column: bool,
    threads: bool = True,
) -> pa.Table | None:
    types = {name: pa.binary() for name in layout.columns}  # ignored fields: any bytes
    types.update(qid=pa.string(), docid=pa.string())  # the ids must be UTF-8
    types[layout.value_column] = value_type
    include = list(layout.columns) if every_column else ["qid", "docid", layout.value_column]
    read_options = pacsv.ReadOptions(column_names=list(layout.columns), use_threads=threads)
    if not len(data):
        data = b"\n"  # pyarrow refuses an empty buffer; a file of only comments has no records
    for _ in range(2):
        try:
            return pacsv.read_csv(
                # Arrow-owned memory: the threaded reader may free its input after returning
                pa.BufferReader(data if isinstance(data, pa.Buffer) else arrow_owned(data)),
                read_options=read_options,
                parse_options=pacsv.ParseOptions(
                    delimiter=" ", quote_char=False, double_quote=False, escape_char=False
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=types,
                    include_columns=include,
                    null_values=[],  # 'NA' or 'nan' is a value to judge, not a missing one
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            if "straddl" not in str(exc) or read_options.block_size >= _MAX_BLOCK:
                return None
            # A line longer than a block (1 MB) is not an error in itself: one block for all.
            read_options = pacsv.ReadOptions(
                column_names=list(layout.columns), use_threads=threads,
                block_size=min(len(data) + 1, _MAX_BLOCK),
            )
    return None


def _has_empty(column: pa.ChunkedArray) -> bool:
    return bool(len(column)) and pc.min(pc.binary_length(column)).as_py() == 0


def _fields(line: bytes) -> list[re.Match[bytes]]:
    """The fields of one line as trec_eval splits it; none for a blank or comment line."""
    fields = list(_TOKEN.finditer(line))
    return [] if fields and fields[0].group().startswith(b"#") else fields


def line_of_record(data: bytes | str | PathLike[str], index: int) -> int:
    """The 1-based line number of the ``index``-th record (0-based), blank and comment lines
    skipped.

    Error path only: it loops over lines. ``data`` is the file's bytes or its path.
    """
    if not isinstance(data, bytes):
        read = read_trec(data, "run")[0]
        data = read if isinstance(read, bytes) else read.to_pybytes()
    records = (number for number, line in enumerate(data.split(b"\n"), 1) if _fields(line))
    return next(itertools.islice(records, index, None))


def _locate_error(data: bytes, source: str, layout: _Layout) -> InputError | None:
    """Re-scan line by line for the first bad line: the slow, precise explanation."""
    n_columns = len(layout.columns)
    for number, line in enumerate(data.split(b"\n"), 1):
        nul = line.find(b"\0")
        if nul >= 0:
            return InputError(
                source=source,
                line=number,
                expected="text without NUL bytes",
                found=f"<a NUL byte at column {nul + 1}>",
            )
        fields = _fields(line)
        if not fields:
            continue
        if len(fields) < n_columns or (
            len(fields) > n_columns and not layout.extra_fields_ignored
        ):
            text = line.decode("utf-8", "replace").strip()
            return InputError(
                source=source,
                line=number,
                expected=f"{n_columns} whitespace-separated columns '{layout.example}'",
                found=f"<{len(fields)} columns: {text!r}>",
            )
        texts: dict[int, str] = {}
        for index in (0, 2, layout.value_index):
            field = fields[index]
            try:
                texts[index] = field.group().decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = field.group()[exc.start : exc.end]
                return InputError(
                    source=source,
                    line=number,
                    expected="UTF-8 text",
                    found=f"<bytes {bad!r} at column {field.start() + exc.start + 1}>",
                )
        value = texts[layout.value_index]
        problem = _value_problem(value, layout)
        if problem is not None:
            return InputError(
                source=source,
                line=number,
                record=texts[0],
                field=layout.value_column,
                expected=layout.value_expected,
                found=value,
                hint=problem or None,
            )
    return None


def _value_problem(text: str, layout: _Layout) -> str | None:
    """None when ``text`` is a valid grade or score; else a hint, "" when none is needed."""
    if layout.kind == "qrels":
        if _INTEGER.fullmatch(text):
            # int() refuses over 4,300 digits; anything past 19 is out of range anyway
            fits = len(text.lstrip("+-").lstrip("0")) <= 19 and int(text) in _INT64
            return None if fits else "beyond the 64-bit integer range"
    elif _DECIMAL.fullmatch(text):
        return None if math.isfinite(float(text)) else "too large: it overflows to infinity"
    return "" if text.isascii() else "only the ASCII digits 0-9 count"
