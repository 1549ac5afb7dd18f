"""The corpus format: chunks to ingest, as JSON Lines (optionally gzip) or Parquet.

One record per chunk::

    {"id": "legal_045", "text": "Artículo 45. Permisos retribuidos …", "doc_id": "convenio-2025",
     "domain": "legal", "label": "SINTESIS_CURADA", "facets": {"region": "madrid"},
     "valid_from": "2025-01-01", "valid_to": "2025-12-31", "kind": "text",
     "content": "…raw text shown to a reader…", "description": "…prose for tables…"}

``id`` and ``text`` (the representation field: what is embedded and searched) are required and
non-empty; everything else is optional. Each chunk gets a ``content_hash`` over all its fields, so
an ingestion knows which chunks are unchanged (the record and the hash live in
:mod:`recallwatch.records`, below the formats and the stores, and are re-exported here).

``read_corpus(path, on_error="raise")`` stops at the first bad record; ``on_error="collect"``
returns the good chunks and the rejected records with their reasons, for an ingestion report.
A file that cannot be read at all (missing, not UTF-8, not Parquet) always raises.
:func:`scan_corpus` gives the same verdicts record by record, reading the file as a stream (a
Parquet file too, a few thousand rows at a time), for an ingestion that keeps no corpus whole.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, get_args

from recallwatch._files import starts_as_gzip
from recallwatch.errors import InputError
from recallwatch.formats.fields import check_keys, iso_date
from recallwatch.formats.structured import LINE_KEY, parse_json_line, text_lines
from recallwatch.records import OPTIONAL_TEXT_FIELDS as _OPTIONAL_TEXT
from recallwatch.records import Chunk, chunk_to_record, content_hash, group_problem

__all__ = [
    "CHUNK_KINDS",
    "GOLD_LABEL",
    "GOLD_LABELS",
    "GOLD_LABEL_EN",
    "ChunkKind",
    "Corpus",
    "Rejection",
    "chunk_from_record",
    "chunk_to_record",
    "content_hash",
    "corpus_records",
    "read_corpus",
    "rejection",
    "scan_corpus",
    "write_corpus",
]

GOLD_LABEL = "SINTESIS_CURADA"  # Spanish for "curated synthesis": the label of a Gold chunk
GOLD_LABEL_EN = "CURATED_SYNTHESIS"  # the same in English: either marks a Gold chunk
GOLD_LABELS = frozenset({GOLD_LABEL, GOLD_LABEL_EN})

# Closed on purpose: the diagnosis reads `kind` (a table without prose), so a typo ("tabel")
# must be an error with a suggestion, not a chunk silently treated as text.
ChunkKind = Literal["text", "table", "list", "faq", "code", "figure", "heading", "other"]
CHUNK_KINDS: tuple[str, ...] = get_args(ChunkKind)

# `vector`: a precomputed embedding, read only by `ingest --precomputed` (formats.corpus_vectors)
_FIELDS = {"id", "text", "facets", "valid_from", "valid_to", "kind", "acl", "vector",
           *_OPTIONAL_TEXT}


@dataclass(frozen=True)
class Rejection:
    """A record that was not accepted: where it is and why."""

    source: str
    line: int | None
    id: str | None
    reason: str  # the full one-line message, as an InputError would print it

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "id": self.id, "reason": self.reason}


@dataclass(frozen=True)
class Corpus:
    """What a corpus file holds: accepted chunks in file order, and rejected records."""

    source: str
    chunks: list[Chunk]
    rejected: list[Rejection] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks)


def read_corpus(
    path: str | Path, *, on_error: Literal["raise", "collect"] = "raise"
) -> Corpus:
    """Read and validate a corpus file (``.jsonl``, ``.jsonl.gz`` or ``.parquet``)."""
    if on_error not in ("raise", "collect"):
        raise InputError(field="on_error", expected="'raise' or 'collect'", found=on_error)
    p = Path(path)
    chunks: list[Chunk] = []
    rejected: list[Rejection] = []
    for line, record, got in scan_corpus(p):
        if isinstance(got, Chunk):
            chunks.append(got)
        elif on_error == "raise":
            raise got
        else:
            rejected.append(rejection(p, line, record, got))
    if not chunks and not rejected:
        raise InputError(source=p, expected="at least one chunk", found="<no records>")
    return Corpus(str(p), chunks, rejected)


def scan_corpus(
    p: Path,
) -> Iterator[tuple[int | None, dict[str, Any] | None, Chunk | InputError]]:
    """Every record of a corpus file in file order, read as a stream: its line (a Parquet row's
    1-based number), the record (None for a line that is not a JSON object), and its chunk or why
    it is rejected (a duplicate id included). Only the ids seen and their lines are kept. A file
    that cannot be read at all raises."""
    first_line: dict[str, int | None] = {}
    for line, record in corpus_records(p):
        if isinstance(record, InputError):
            yield line, None, record
            continue
        try:
            chunk = chunk_from_record(record, source=p, line=line)
            if chunk.id in first_line:
                seen = first_line[chunk.id]
                raise InputError(
                    "duplicate id", source=p, line=line, record=chunk.id, field="id",
                    hint=f"first seen at {p}:{seen}" if seen else "first seen earlier",
                )
        except InputError as exc:
            yield line, record, exc
            continue
        first_line[chunk.id] = line
        yield line, record, chunk


def rejection(p: Path, line: int | None, record: Mapping[str, Any] | None,
              err: InputError) -> Rejection:
    """The rejection of a record, as an ingestion report lists it."""
    rid = None if record is None else record.get("id")
    return Rejection(str(p), line, rid if isinstance(rid, str) else None, str(err))


def chunk_from_record(
    record: Mapping[str, Any], *, source: str | Path = "<record>", line: int | None = None
) -> Chunk:
    """Validate one record (a parsed JSON object or Parquet row) into a Chunk with its hash."""
    rid = record.get("id")
    where: dict[str, Any] = {"source": source, "line": line,
                             "record": rid if isinstance(rid, str) and rid else None}
    check_keys({**record, LINE_KEY: line}, _FIELDS, source=source, record=where["record"])
    if "id" not in record:
        raise InputError("missing required field", field="id", **where)
    if not isinstance(rid, str) or not rid.strip():
        raise InputError(field="id", expected="a non-empty string", found=rid, **where)
    if "text" not in record:
        raise InputError("missing required field", field="text", **where)
    text = record["text"]
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            field="text", expected="a non-empty string (the representation field that is embedded)",
            found=text, **where,
        )
    optional: dict[str, str | None] = {}
    for name in _OPTIONAL_TEXT:
        value = record.get(name)
        if value is not None and not isinstance(value, str):
            raise InputError(field=name, expected="a string or null", found=value, **where)
        optional[name] = value
    kind = record.get("kind")
    if kind is None:
        kind = "text"
    if kind not in CHUNK_KINDS:
        from recallwatch._registry import suggest

        raise InputError(
            field="kind", expected=f"one of {', '.join(CHUNK_KINDS)}", found=kind,
            hint=suggest(str(kind), list(CHUNK_KINDS)).strip(" ()") or None, **where,
        )
    facets = _facets(record.get("facets"), where)
    if "__acl__" in facets:
        raise InputError(field="facets.__acl__", expected="a facet name other than __acl__, "
                         "which stores use for the chunk's acl", found="__acl__",
                         hint="write the groups that may see the chunk as its acl field",
                         **where)
    valid_from = iso_date(record.get("valid_from"), "valid_from", where)
    valid_to = iso_date(record.get("valid_to"), "valid_to", where)
    if valid_from is not None and valid_to is not None and valid_from > valid_to:
        raise InputError(
            field="valid_to", expected=f"a date on or after valid_from ({valid_from.isoformat()})",
            found=valid_to.isoformat(), **where,
        )
    chunk = Chunk(
        id=rid, text=text, content=optional["content"], doc_id=optional["doc_id"],
        domain=optional["domain"], label=optional["label"], facets=facets,
        valid_from=valid_from, valid_to=valid_to, kind=kind, description=optional["description"],
        acl=_acl(record.get("acl"), where),
    )
    for name in ("id", "text", *_OPTIONAL_TEXT):
        _check_text(getattr(chunk, name), name, where)
    for key, item in facets.items():
        _check_text(key, "facets", where)
        _check_text(item, f"facets.{key}", where)
    return replace(chunk, content_hash=content_hash(chunk))


def _acl(value: Any, where: dict[str, Any]) -> tuple[str, ...] | None:
    """A chunk's access list: the groups that may see it (absent or null: everyone)."""
    if value is None:
        return None
    if isinstance(value, str) and value.startswith("["):  # a Parquet column keeps it as JSON
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if not isinstance(value, list):
        raise InputError(field="acl", expected="a list of the groups that may see the chunk "
                         "(leave it out for a chunk everyone may see)", found=value, **where)
    for item in value:
        problem = group_problem(item)
        if problem is not None:
            raise InputError(field="acl", expected=f"group names: {problem}", found=item,
                             **where)
    return tuple(dict.fromkeys(value))


def _check_text(value: str | None, name: str, where: dict[str, Any]) -> None:
    """Refuse a lone UTF-16 surrogate (JSON lets one through as "\\ud800"): it cannot be hashed,
    stored or shown as UTF-8."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(field=name, expected="valid Unicode text",
                         found="<an unpaired UTF-16 surrogate>", **where) from None


def write_corpus(chunks: list[Chunk], path: str | Path) -> None:
    """Write chunks as JSON Lines (``.jsonl``, ``.jsonl.gz``) or Parquet, by the file suffix."""
    p = Path(path)
    records = [chunk_to_record(c) for c in chunks]
    if p.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = [{**r, "facets": json.dumps(r["facets"], ensure_ascii=False) if "facets" in r
                 else None, **({"acl": json.dumps(r["acl"], ensure_ascii=False)} if "acl" in r
                               else {})} for r in records]
        pq.write_table(pa.Table.from_pylist(rows), p)
        return
    lines = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if p.name.endswith(".gz"):
        p.write_bytes(gzip.compress(lines.encode("utf-8"), mtime=0))
    else:
        p.write_text(lines, encoding="utf-8")


def corpus_records(
    p: Path,
) -> Iterator[tuple[int | None, dict[str, Any] | InputError]]:
    """(line, record) of every record of a corpus file, read as a stream; a JSON line that is
    not an object comes as its InputError, in its place. A file that cannot be read raises.
    ``irds:DATASET_ID`` and ``beir:DIR`` are a public collection's documents, one chunk each
    (its id the document's; the title opens the text)."""
    from recallwatch.formats.collections import corpus_record, is_collection, open_collection

    if is_collection(p):
        for number, doc in enumerate(open_collection(p).docs(), start=1):
            yield number, corpus_record(*doc)
        return
    name = p.name.lower()
    if name.endswith(".parquet"):
        yield from _parquet_records(p)
    elif name.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        yield from _jsonl_records(p)
    else:
        raise InputError(source=p, expected="a .jsonl, .jsonl.gz or .parquet corpus file",
                         found=f"<{p.suffix or 'no'} suffix>")


def _jsonl_records(p: Path) -> Iterator[tuple[int | None, dict[str, Any] | InputError]]:
    gzipped = p.name.lower().endswith(".gz")
    if gzipped and p.is_file() and not starts_as_gzip(p):
        raise InputError(source=p, expected="a gzip file", found="<not gzip data>")
    for number, raw in text_lines(p, gzipped=gzipped):
        if not raw.strip():
            continue
        try:
            yield number, parse_json_line(raw, p, number)
        except InputError as err:
            yield number, err


PARQUET_ROWS = 4096  # rows converted to Python at a time


def _parquet_records(p: Path) -> Iterator[tuple[int | None, dict[str, Any] | InputError]]:
    import pyarrow.parquet as pq

    if not p.is_file():
        raise InputError(source=p, expected="an existing file", found="<nothing at that path>")
    try:
        pieces = iter(pq.ParquetFile(p).iter_batches(batch_size=PARQUET_ROWS))
    except Exception as exc:  # pyarrow raises several types for a corrupt or foreign file
        raise _not_parquet(p, exc) from None
    # Parquet has no lines: a record's "line" is its 1-based row number.
    number = 0
    while True:
        try:
            piece = next(pieces, None)
        except Exception as exc:  # a corrupt page found while reading on
            raise _not_parquet(p, exc) from None
        if piece is None:
            return
        try:
            rows = piece.to_pylist()
        except Exception as exc:  # invalid UTF-8 in a string column, an out-of-range timestamp…
            raise InputError(source=p, line=number + _first_bad_row(piece),
                             expected="values Python can read",
                             found=f"<{type(exc).__name__}: {str(exc)[:120]}>") from None
        for row in rows:
            number += 1
            yield number, {k: v for k, v in row.items() if v is not None}


def _not_parquet(p: Path, exc: Exception) -> InputError:
    return InputError(source=p, expected="a Parquet file", found=f"<{type(exc).__name__}>",
                      hint=(str(exc).splitlines() or [""])[0][:200] or None)


def _first_bad_row(table: Any) -> int:
    """1-based number of the first row that pyarrow cannot convert (binary search on prefixes:
    the error path only)."""
    good, bad = 0, int(table.num_rows)  # the first `good` rows convert; the first `bad` do not
    while bad - good > 1:
        mid = (good + bad) // 2
        try:
            table.slice(0, mid).to_pylist()
        except Exception:
            bad = mid
        else:
            good = mid
    return bad


def _facets(value: Any, where: dict[str, Any]) -> dict[str, str]:
    if value is None:
        return {}
    if isinstance(value, str):  # Parquet writers often keep nested objects as JSON text
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # bad JSON, an over-long number, deep nesting
            raise InputError(field="facets", expected="an object of strings (or its JSON text)",
                             found=value, **where) from None
    if isinstance(value, list) and all(isinstance(p, tuple | list) and len(p) == 2 for p in value):
        value = dict(value)  # a Parquet map column reads back as (key, value) pairs
    if not isinstance(value, dict):
        raise InputError(field="facets", expected="an object of strings", found=value, **where)
    for key, item in value.items():
        if not isinstance(key, str):
            raise InputError(field="facets", expected="text keys", found=key, **where)
        if not isinstance(item, str):
            raise InputError(field=f"facets.{key}", expected="a string", found=item, **where)
    return dict(value)
