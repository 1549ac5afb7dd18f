"""The corpus format: every field, every bad input, JSONL / gzip / Parquet, raise vs collect."""

from __future__ import annotations

import datetime as dt
import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.errors import InputError
from recallwatch.formats.corpus import (
    CHUNK_KINDS,
    chunk_from_record,
    chunk_to_record,
    content_hash,
    read_corpus,
    write_corpus,
)

FULL = {
    "id": "legal_045", "text": "Artículo 45. Permisos retribuidos: quince días por matrimonio.",
    "content": "Art. 45 …", "doc_id": "convenio-2025", "domain": "legal",
    "label": "SINTESIS_CURADA", "facets": {"region": "madrid", "año": "2025"},
    "valid_from": "2025-01-01", "valid_to": "2025-12-31", "kind": "table",
    "description": "Tabla de permisos",
}


def _jsonl(path: Path, records: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False))
                            + "\n" for r in records), encoding="utf-8")
    return path


def test_every_field_round_trips(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "c.jsonl", [FULL, {"id": "b", "text": "mínimo"}])
    corpus = read_corpus(src)
    a, b = corpus.chunks
    assert a.id == "legal_045" and a.kind == "table" and a.label == "SINTESIS_CURADA"
    assert a.facets == {"region": "madrid", "año": "2025"}
    assert (a.valid_from, a.valid_to) == (dt.date(2025, 1, 1), dt.date(2025, 12, 31))
    assert b.kind == "text" and b.facets == {} and b.domain is None and b.valid_from is None
    assert chunk_to_record(a) == FULL and chunk_to_record(b) == {"id": "b", "text": "mínimo"}
    assert [c.id for c in corpus] == ["legal_045", "b"] and len(corpus) == 2 and not corpus.rejected
    assert len(a.content_hash) == 64 and a.content_hash == content_hash(a)


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.gz", ".parquet"])
def test_writer_and_reader_agree_on_every_format(tmp_path: Path, suffix: str) -> None:
    chunks = read_corpus(_jsonl(tmp_path / "src.jsonl", [FULL, {"id": "b", "text": "x"}])).chunks
    out = tmp_path / f"out{suffix}"
    write_corpus(chunks, out)
    assert read_corpus(out).chunks == chunks  # hashes included: same content, same hash


def test_parquet_with_native_struct_and_dates(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "id": ["a", "b"], "text": ["uno", "dos"],
        "facets": pa.array([[("k", "v")], None], type=pa.map_(pa.string(), pa.string())),
        "valid_from": pa.array([dt.date(2025, 1, 1), None], type=pa.date32()),
    })
    pq.write_table(table, tmp_path / "c.parquet")
    a, b = read_corpus(tmp_path / "c.parquet").chunks
    assert a.facets == {"k": "v"} and a.valid_from == dt.date(2025, 1, 1)
    assert b.facets == {} and b.valid_from is None
    pq.write_table(pa.table({"id": ["a"], "text": [""]}), tmp_path / "bad.parquet")
    with pytest.raises(InputError, match=r"bad\.parquet:1: record 'a': field 'text'"):
        read_corpus(tmp_path / "bad.parquet")


def test_hash_changes_with_any_field() -> None:
    base = chunk_from_record(FULL)
    for key, value in [("text", "otro"), ("domain", "rrhh"), ("facets", {"region": "bcn"}),
                       ("valid_to", "2026-01-01"), ("description", None), ("kind", "text")]:
        changed = chunk_from_record({**FULL, key: value})
        assert changed.content_hash != base.content_hash, key
    assert chunk_from_record(dict(reversed(list(FULL.items())))).content_hash == base.content_hash


BAD: list[tuple[Any, str]] = [
    ({"id": "a", "txt": "x"}, r"c\.jsonl:1: record 'a': field 'txt': unknown key "
                              r"\(did you mean 'text'\?\)"),
    ({"text": "x"}, r"c\.jsonl:1: field 'id': missing required field"),
    ({"id": "", "text": "x"}, r"field 'id': expected a non-empty string, found ''"),
    ({"id": 7, "text": "x"}, r"field 'id': expected a non-empty string, found 7"),
    ({"id": "a"}, r"record 'a': field 'text': missing required field"),
    ({"id": "a", "text": "   "}, r"field 'text': expected a non-empty string .*found '   '"),
    ({"id": "a", "text": "x", "domain": 3}, r"field 'domain': expected a string or null, found 3"),
    ({"id": "a", "text": "x", "kind": "tabel"},
     r"field 'kind': expected one of text, table, .*found 'tabel' \(did you mean 'table'\?\)"),
    ({"id": "a", "text": "x", "facets": ["a"]}, r"field 'facets': expected an object of strings"),
    ({"id": "a", "text": "x", "facets": {"n": 1}},
     r"field 'facets\.n': expected a string, found 1"),
    ({"id": "a", "text": "x", "valid_from": "01/02/2025"},
     r"field 'valid_from': expected an ISO date YYYY-MM-DD, found '01/02/2025'"),
    ({"id": "a", "text": "x", "valid_from": "2025-03-01", "valid_to": "2025-02-01"},
     r"field 'valid_to': expected a date on or after valid_from \(2025-03-01\), "
     r"found '2025-02-01'"),
    ("{not json", r"c\.jsonl:1: invalid JSON"),
    ("[1, 2]", r"c\.jsonl:1: expected a JSON object, found <an array>"),
]


@pytest.mark.parametrize(("record", "message"), BAD)
def test_bad_records_name_file_line_field(tmp_path: Path, record: Any, message: str) -> None:
    src = _jsonl(tmp_path / "c.jsonl", [record])
    with pytest.raises(InputError, match=message):
        read_corpus(src)


def test_collect_keeps_the_good_and_lists_the_bad(tmp_path: Path) -> None:
    records = [FULL, *[r for r, _ in BAD], {"id": "legal_045", "text": "dup"},
               {"id": "ok", "text": "bien"}]
    src = _jsonl(tmp_path / "c.jsonl", records)
    corpus = read_corpus(src, on_error="collect")
    assert [c.id for c in corpus.chunks] == ["legal_045", "ok"]
    assert len(corpus.rejected) == len(BAD) + 1
    assert [r.line for r in corpus.rejected] == list(range(2, len(BAD) + 3))
    dup = corpus.rejected[-1]
    assert dup.id == "legal_045"
    assert dup.reason.endswith(f"field 'id': duplicate id (first seen at {src}:1)")


def test_duplicate_ids_raise_naming_both_lines(tmp_path: Path) -> None:
    src = _jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "text": "y"},
                                        {"id": "a", "text": "z"}])
    with pytest.raises(InputError, match=rf"c\.jsonl:3: record 'a': field 'id': duplicate id "
                                         rf"\(first seen at {tmp_path}/c\.jsonl:1\)"):
        read_corpus(src)


def test_file_level_errors_always_raise(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected an existing file"):
        read_corpus(tmp_path / "missing.jsonl", on_error="collect")
    with pytest.raises(InputError, match=r"expected a \.jsonl, \.jsonl\.gz or \.parquet"):
        read_corpus(tmp_path / "c.csv")
    (tmp_path / "e.jsonl").write_text("\n\n")
    with pytest.raises(InputError, match="expected at least one chunk"):
        read_corpus(tmp_path / "e.jsonl")
    (tmp_path / "b.jsonl").write_bytes(b'{"id": "a", "text": "\xff"}\n')
    with pytest.raises(InputError, match=r"b\.jsonl:1: expected UTF-8 text"):
        read_corpus(tmp_path / "b.jsonl")
    (tmp_path / "g.jsonl.gz").write_bytes(b"not gzip")
    with pytest.raises(InputError, match="expected a gzip file"):
        read_corpus(tmp_path / "g.jsonl.gz")
    (tmp_path / "p.parquet").write_text("not parquet")
    with pytest.raises(InputError, match="expected a Parquet file"):
        read_corpus(tmp_path / "p.parquet")
    with pytest.raises(InputError, match="on_error"):
        read_corpus(tmp_path / "e.jsonl", on_error="skip")  # type: ignore[arg-type]


def test_gzip_lines_are_counted(tmp_path: Path) -> None:
    raw = "\n".join(json.dumps(r) for r in [{"id": "a", "text": "x"}, {"id": "b"}]) + "\n"
    (tmp_path / "c.jsonl.gz").write_bytes(gzip.compress(raw.encode()))
    with pytest.raises(InputError, match=r"c\.jsonl\.gz:2: record 'b': field 'text'"):
        read_corpus(tmp_path / "c.jsonl.gz")


_text = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "")
_records = st.fixed_dictionaries(
    {"id": _text, "text": _text},
    optional={
        "domain": st.none() | _text, "facets": st.dictionaries(_text, _text, max_size=3),
        "kind": st.sampled_from(CHUNK_KINDS), "valid_from": st.dates().map(dt.date.isoformat),
    },
)


@settings(max_examples=60, deadline=None)
@given(_records)
def test_any_valid_record_round_trips(record: dict[str, Any]) -> None:
    chunk = chunk_from_record(record)
    again = chunk_from_record(json.loads(json.dumps(chunk_to_record(chunk))))
    assert again == chunk
