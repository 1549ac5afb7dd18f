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
    why = " (TREC files separate their fields by whitespace, so an id cannot hold any)"
    for args, field, found in (((["q"], ["a b"]), "docid", "'a b'"),
                               ((["q\t1"], ["a"]), "qid", "'q\\t1'")):
        with pytest.raises(InputError) as refused:
            write_run(tmp_path / "run", *args, [1], [1.0])
        assert str(refused.value) == (f"{tmp_path / 'run'}: field {field!r}: expected a non-empty "
                                      f"id without whitespace, found {found}{why}")
    with pytest.raises(InputError) as refused:
        write_run(tmp_path / "run", ["q"], ["a"], [1], [1.0], tag="my run")
    assert str(refused.value) == (f"{tmp_path / 'run'}: field 'tag': expected a non-empty id "
                                  f"without whitespace, found 'my run'{why}")
    assert not (tmp_path / "run").exists() and list(tmp_path.iterdir()) == []


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


# --- trec_eval 10's reading rules (get_qrels.c, get_trec_results.c) ---------------------------


def _write(tmp_path: Path, content: bytes, name: str = "file") -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


def test_qrels_comment_lines_as_in_trec_eval_test_files(tmp_path: Path) -> None:
    # the shape of trec_eval's test/qrels.test.with-comments: comments first, between
    # records, twice in a row, and '#' inside a document id, which is not a comment
    path = _write(
        tmp_path,
        b"# comment here\n301 0 CR93E-10279 0\n# and comment here\n# another\n"
        b"301 0 CR#93E-1860 1\n#no space after the hash\n302 0 d#1 2\n# last, no newline",
    )
    t = read_qrels(path)
    assert t.query_ids.to_pylist() == ["301", "301", "302"]
    assert t.doc_ids.to_pylist() == ["CR93E-10279", "CR#93E-1860", "d#1"]
    assert t.values.tolist() == [0, 1, 2]


def test_run_comments_may_be_indented_and_text_after_the_tag_is_ignored(tmp_path: Path) -> None:
    # trec_eval's test/results.trunc has "STANDARD more junk at" lines
    path = _write(
        tmp_path,
        b"#run header\n301\tQ0\tFBIS3-27619\t99\t  2.138276\tSTANDARD more junk at\n"
        b"   \t# indented comment\n"
        b"301 Q0 msmarco_doc_00#4_1633 1 0.7 tag\n"
        b"303\tQ0\tFT941-17652\t99\t  1.857372\tSTANDARD end of lines.\n",
    )
    t = read_run(path)
    assert t.query_ids.to_pylist() == ["301", "301", "303"]
    assert t.doc_ids.to_pylist() == ["FBIS3-27619", "msmarco_doc_00#4_1633", "FT941-17652"]
    assert t.values.tolist() == [2.138276, 0.7, 1.857372]


def test_single_space_file_with_comments_and_extra_fields(tmp_path: Path) -> None:
    # a comment with exactly six words would parse as a record on the single-space fast path
    path = _write(tmp_path, b"# Q0 d0 1 9.0 r\nq1 Q0 d1 1 2.5 r and more\nq1 Q0 d2 2 1.5 r\n")
    t = read_run(path)
    assert t.doc_ids.to_pylist() == ["d1", "d2"] and t.values.tolist() == [2.5, 1.5]


def test_extra_field_in_qrels_is_refused_as_trec_eval_does(tmp_path: Path) -> None:
    path = _write(tmp_path, b"q1 0 d1 1\nq1 0 d2 1 # judged twice\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert str(err.value) == (
        f"{path}:2: expected 4 whitespace-separated columns 'qid 0 docid rel', "
        "found <7 columns: 'q1 0 d2 1 # judged twice'>"
    )


def test_comment_lines_do_not_count_as_records_in_line_numbers(tmp_path: Path) -> None:
    data = b"# a\nq 0 a 1\n\n  # b\nq 0 b 1\n#c\nq 0 c 1\n"
    assert [line_of_record(data, i) for i in range(3)] == [2, 5, 7]


def test_duplicate_after_comments_names_the_right_lines(tmp_path: Path) -> None:
    from recallwatch.metrics import Qrels

    path = _write(tmp_path, b"# header\nq1 0 d1 1\n# between\nq1 0 d1 2\n")
    with pytest.raises(InputError) as err:
        Qrels.from_trec(path)
    assert str(err.value) == (
        f"{path}:4: record 'q1': field 'docid': duplicate document 'd1' in query 'q1' "
        "(also on line 2)"
    )


def test_only_comments_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, b"# nothing\n\n# to see\n")
    with pytest.raises(InputError) as err:
        read_run(path)
    assert str(err.value) == (
        f"{path}: expected at least one line 'qid Q0 docid rank score tag', "
        "found <only comments and blank lines>"
    )


@pytest.mark.parametrize(
    ("content", "grades"),
    [
        (b"q 0 a +1\nq 0 b -1\nq 0 c 007\nq 0 d -0\n", [1, -1, 7, 0]),  # atol reads these
        (b"q\t0\ta\t+2\n", [2]),
        (b"q 0 a 9223372036854775807\n", [2**63 - 1]),
    ],
)
def test_grades_trec_eval_reads_as_integers(
    tmp_path: Path, content: bytes, grades: list[int]
) -> None:
    assert read_qrels(_write(tmp_path, content)).values.tolist() == grades


@pytest.mark.parametrize(
    ("grade", "hint"),
    [
        ("1_0", ""),  # Python's int() reads 10, atol 1, pyarrow refuses: refused, located
        ("１", " (only the ASCII digits 0-9 count)"),  # full-width: int() reads 1, atol 0
        ("٣", " (only the ASCII digits 0-9 count)"),
        ("0x10", ""),  # pyarrow reads 16, atol 0
        ("0X1F", ""),
        ("1.0", ""),
        ("1e3", ""),
        ("+-1", ""),
        ("99999999999999999999", " (beyond the 64-bit integer range)"),
        ("9223372036854775808", " (beyond the 64-bit integer range)"),
        ("1" * 5000, " (beyond the 64-bit integer range)"),  # past int()'s 4,300-digit limit
    ],
)
@pytest.mark.parametrize("separator", [b" ", b"\t"])  # the fast path, then the general one
def test_grades_neither_parser_should_guess_are_refused_on_their_line(
    tmp_path: Path, grade: str, hint: str, separator: bytes
) -> None:
    line = separator.join([b"q1", b"0", b"d2", grade.encode()])
    path = _write(tmp_path, b"q1 0 d1 1\n" + line + b"\n")
    with pytest.raises(InputError) as err:
        read_qrels(path)
    shown = repr(grade) if len(grade) <= 120 else f"'{grade[:70]}…{grade[-20:]}' (5,000 characters)"
    assert str(err.value) == (
        f"{path}:2: record 'q1': field 'rel': expected an integer relevance grade, "
        f"found {shown}{hint}"
    )


@pytest.mark.parametrize(
    "score",
    ["nan", "NaN", "-nan", "inf", "-Infinity", "1e400", "0x1p3", "1_0", "１.5", "1,5", "NA", "."],
)
@pytest.mark.parametrize("separator", [b" ", b"\t"])
def test_scores_that_are_not_finite_decimals_are_refused_on_their_line(
    tmp_path: Path, score: str, separator: bytes
) -> None:
    line = separator.join([b"q1", b"Q0", b"d2", b"2", score.encode(), b"r"])
    path = _write(tmp_path, b"q1 Q0 d1 1 2.0 r\n" + line + b"\n")
    with pytest.raises(InputError) as err:
        read_run(path)
    assert str(err.value).startswith(
        f"{path}:2: record 'q1': field 'score': expected a finite number, found {score!r}"
    )


@pytest.mark.parametrize(
    ("score", "value"),
    [("+1.5", 1.5), (".5", 0.5), ("5.", 5.0), ("1E5", 1e5), ("-0", -0.0), ("1e-400", 0.0)],
)
def test_decimal_scores(tmp_path: Path, score: str, value: float) -> None:
    path = _write(tmp_path, f"q Q0 d 1 {score} r\n".encode())
    assert read_run(path).values.tolist() == [value]


def test_a_lone_carriage_return_separates_fields_not_lines(tmp_path: Path) -> None:
    # trec_eval splits on isspace(), CR included; pyarrow would end a line there
    path = _write(tmp_path, b"q1 0 d1 1\rq1 0 d2 0\n")
    with pytest.raises(InputError, match=r":1: expected 4 whitespace-separated columns"):
        read_qrels(path)
    run = read_run(_write(tmp_path, b"q1\rQ0 d1 1 2.0 r\rq1 Q0 d2 1 1.0 r\n", "run"))
    assert run.doc_ids.to_pylist() == ["d1"]  # the rest of the line follows the tag


def test_byte_order_mark_is_not_part_of_the_first_query_id(tmp_path: Path) -> None:
    path = _write(tmp_path, b"\xef\xbb\xbfq1 0 d1 1\n")
    assert read_qrels(path).query_ids.to_pylist() == ["q1"]


def test_a_line_longer_than_a_pyarrow_block_is_read(tmp_path: Path) -> None:
    docid = "d" * 3_000_000
    path = _write(tmp_path, f"q 0 a 1\nq 0 {docid} 2\nq 0 b 0\n".encode())
    t = read_qrels(path)
    assert t.doc_ids.to_pylist() == ["a", docid, "b"]


def test_a_megabyte_line_is_cut_in_the_message(tmp_path: Path) -> None:
    junk = "x" * 1_000_000
    path = _write(tmp_path, f"q1 0 d1 1\nq1 0 d2 {junk}\n".encode())
    with pytest.raises(InputError) as err:
        read_qrels(path)
    message = str(err.value)
    assert message == (
        f"{path}:2: record 'q1': field 'rel': expected an integer relevance grade, "
        f"found '{'x' * 70}…{'x' * 20}' (1,000,000 characters)"
    )
    assert err.value.found == junk  # the attribute keeps it whole


def test_a_megabyte_line_with_wrong_columns_is_cut_in_the_message(tmp_path: Path) -> None:
    junk = "y" * 1_000_000
    path = _write(tmp_path, f"q1 Q0 {junk}\n".encode())
    with pytest.raises(InputError) as err:
        read_run(path)
    message = str(err.value)
    assert message.startswith(
        f"{path}:1: expected 6 whitespace-separated columns 'qid Q0 docid rank score tag', "
        "found <3 columns: 'q1 Q0 yyy"
    )
    assert message.endswith("yyy'> (1,000,021 characters)")
    assert len(message) < len(str(path)) + 250


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"q1 0 d\x001 1\n", ":1: expected text without NUL bytes, found <a NUL byte at column 7>"),
        (b"q1 0 d1 1\n# a comment with a \x00\n", ":2: expected text without NUL bytes, found "
         "<a NUL byte at column 20>"),
        (b"q1 0 d1 1\nq1\t0\td\xe2\x82\t1\n", ":2: expected UTF-8 text, found "
         "<bytes b'\\xe2\\x82' at column 7>"),
    ],
)
def test_nul_and_encoding_errors_are_located(tmp_path: Path, content: bytes, message: str) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(InputError) as err:
        read_qrels(path)
    assert str(err.value) == f"{path}{message}"


def test_ignored_fields_may_hold_any_bytes(tmp_path: Path) -> None:
    # trec_eval never reads iter, Q0, rank or tag; neither does recallwatch
    path = _write(tmp_path, b"q\xff 0 d 1\n", "qrels")
    with pytest.raises(InputError, match="expected UTF-8 text"):  # the query id is read
        read_qrels(path)
    run = read_run(_write(tmp_path, b"q Q\xff d r\xfe 1.0 t\xe9\n", "run"))
    assert run.doc_ids.to_pylist() == ["d"]


def test_truncated_gzip_names_the_line_where_the_data_ends(tmp_path: Path) -> None:
    content = b"".join(b"q%d Q0 d%d 1 2.0 r\n" % (i, i) for i in range(50_000))
    packed = gzip.compress(content)
    path = _write(tmp_path, packed[: len(packed) // 2])
    with pytest.raises(InputError) as err:
        read_run(path)
    assert err.value.line is not None and 1 < err.value.line < 50_000
    assert str(err.value) == (
        f"{path}:{err.value.line}: expected a complete gzip stream, found <Compressed file ended "
        "before the end-of-stream marker was reached> (the data ends or breaks on this line)"
    )


def test_a_pipe_is_read_as_a_file_is(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "run"
    os.mkfifo(fifo)
    content = b"\xef\xbb\xbfq1 Q0 d1 1 2.5 r\nq2 Q0 d2 1 -1e-3 r\n"
    writer = threading.Thread(target=fifo.write_bytes, args=(content,))
    writer.start()
    t = read_run(fifo)
    writer.join()
    assert t.query_ids.to_pylist() == ["q1", "q2"] and t.values.tolist() == [2.5, -1e-3]


@pytest.mark.parametrize("memchr", [True, False], ids=["memchr", "numpy"])
def test_byte_search_with_and_without_the_c_library(
    monkeypatch: pytest.MonkeyPatch, memchr: bool
) -> None:
    import pyarrow as pa

    from recallwatch.formats import arrow as _arrow

    if not memchr:
        monkeypatch.setattr(_arrow, "_memchr", lambda: None)
    data = _arrow.arrow_owned(b"q1 Q0 d1 1 2.5 r\n" * 1000 + b"#")
    assert _arrow.contains_byte(data, ord("#")) and _arrow.contains_byte(data, ord("\n"))
    assert not _arrow.contains_byte(data, 0) and not _arrow.contains_byte(data, ord("\t"))
    assert not _arrow.contains_byte(pa.allocate_buffer(0), 0)
    assert _arrow.contains_byte(data.slice(data.size - 1), ord("#"))
