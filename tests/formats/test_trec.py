"""TREC readers and writers: whitespace variants, gzip, round trips, and located errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.errors import InputError
from recallwatch.formats.trec import line_of_record, read_qrels, read_run, write_qrels, write_run

GOLDEN = Path(__file__).resolve().parent.parent / "data" / "trec"


def test_golden_run() -> None:
    t = read_run(GOLDEN / "run.txt")
    assert t.query_ids.to_pylist() == ["q1", "q1", "q1", "q2", "q2", "q4"]
    assert t.doc_ids.to_pylist() == ["d1", "d9", "d3", "d7", "d4", "d1"]
    assert t.values.tolist() == [3.5, 2.0, 2.0, 1.0, 0.5, 1.0]


@pytest.mark.parametrize(
    "content",
    [
        b"q1 Q0 d1 1 2.5 r\nq2 Q0 d2 1 -1e-3 r\n",
        b"q1\tQ0\td1\t1\t2.5\tr\nq2\tQ0\td2\t1\t-1e-3\tr\n",  # tabs
        b"q1  Q0 d1 1   2.5 r  \n\n   q2 Q0 d2 1 -1e-3 r\n",  # repeated, leading, trailing blanks
        b"q1 Q0 d1 1 2.5 r\r\nq2 Q0 d2 1 -1e-3 r\r\n",  # CRLF
        b"q1 Q0 d1 1 2.5 r\nq2 Q0 d2 1 -1e-3 r",  # no final newline
    ],
)
def test_whitespace_variants_parse_alike(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run"
    path.write_bytes(content)
    t = read_run(path)
    assert t.query_ids.to_pylist() == ["q1", "q2"]
    assert t.doc_ids.to_pylist() == ["d1", "d2"]
    assert t.values.tolist() == [2.5, -1e-3]


def test_gzip_is_detected_by_content_not_name(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"  # no .gz suffix
    path.write_bytes(gzip.compress(b"1 0 d1 2\n1 0 d2 0\n"))
    t = read_qrels(path)
    assert t.query_ids.to_pylist() == ["1", "1"] and t.values.tolist() == [2, 0]


def test_query_ids_keep_leading_zeros(tmp_path: Path) -> None:
    path = tmp_path / "qrels"
    path.write_text("001 0 d1 1\n010 0 d2 1\n")
    assert read_qrels(path).query_ids.to_pylist() == ["001", "010"]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text("abcXYZ019_-.:é", min_size=1, max_size=6),
            st.text("abcXYZ019_-.:/é", min_size=1, max_size=8),
            st.floats(allow_nan=False, allow_infinity=False, width=64),
            st.integers(-1, 4),
        ),
        min_size=1,
        max_size=30,
    ),
    st.booleans(),
)
def test_write_read_round_trip(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str, float, int]],
    compress: bool,
) -> None:
    directory = tmp_path_factory.mktemp("trec")
    suffix = ".gz" if compress else ".txt"
    qids, docids, scores, grades = (list(c) for c in zip(*rows, strict=True))
    write_run(directory / f"run{suffix}", qids, docids, list(range(1, len(rows) + 1)), scores)
    write_qrels(directory / f"qrels{suffix}", qids, docids, grades)
    run, qrels = read_run(directory / f"run{suffix}"), read_qrels(directory / f"qrels{suffix}")
    assert run.query_ids.to_pylist() == qids and run.doc_ids.to_pylist() == docids
    assert run.values.tolist() == scores  # float64 written at full precision
    assert qrels.values.tolist() == grades and qrels.doc_ids.to_pylist() == docids


def test_writer_rejects_ids_with_whitespace(tmp_path: Path) -> None:
    with pytest.raises(
        InputError, match="field 'docid': expected non-empty ids without whitespace, found 'a b'"
    ):
        write_run(tmp_path / "run", ["q"], ["a b"], [1], [1.0])


def test_line_of_record_skips_blank_lines() -> None:
    data = b"a\n\n  \nb\nc\n"
    assert [line_of_record(data, i) for i in range(3)] == [1, 4, 5]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            b"q1 0 d1\n",
            ":1: expected 4 whitespace-separated columns 'qid 0 docid rel', "
            "found <3 columns: 'q1 0 d1'>",
        ),
        (
            b"q1 0 d1 1\nq1 0 d2 x\n",
            ":2: record 'q1': field 'rel': expected an integer relevance grade, found 'x'",
        ),
        (
            b"q1 0 d1 1\nq1 0 d2 \xe9\n",
            ":2: expected UTF-8 text, found <bytes b'\\xe9' at column 9>",
        ),
        (b"", ": expected at least one line 'qid 0 docid rel', found <an empty file>"),
    ],
)
def test_qrels_errors_are_located(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "qrels"
    path.write_bytes(content)
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert str(err.value) == f"{path}{message}"
    assert str(err.value).startswith(str(path))


def test_scores_are_float64_not_float32(tmp_path: Path) -> None:
    path = tmp_path / "run"
    path.write_text("q Q0 a 1 0.1000000001 r\nq Q0 b 2 0.1 r\n")
    values = read_run(path).values
    assert values.dtype == np.float64 and values[0] > values[1]
