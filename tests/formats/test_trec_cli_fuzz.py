"""Malformed TREC files through the real CLI: exit code 2 and one ``Error: FILE:LINE: …`` line.

Each case is a distinct way a qrels or run file goes wrong (wrong column counts, grades and scores
neither parser should guess at, NaN and infinity, bad UTF-8, NUL bytes, broken gzip, empty fields,
megabyte lines…), with the line the error must name. The legal variants at the end (tabs, CRLF,
comments, text after the run tag…) must evaluate exactly as the plain file does.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200"})
DATA = Path(__file__).resolve().parent.parent / "data" / "trec"
QRELS, RUN = DATA / "qrels.txt", DATA / "run.txt"

Q_OK = b"q1 0 d1 1\nq1 0 d2 0\n"  # two good qrels lines, so most errors sit on line 3
R_OK = b"q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\n"
MEGA = 1_000_000
_RUN_LINES = b"".join(b"q%d Q0 d%d 1 2.0 r\n" % (i, i) for i in range(40_000))
_RUN_GZ = gzip.compress(_RUN_LINES)
_QRELS_GZ = gzip.compress(b"".join(b"q%d 0 d%d 1\n" % (i, i) for i in range(40_000)))


def _corrupt(packed: bytes) -> bytes:
    """Garbage in the middle of a deflate stream."""
    middle = len(packed) // 2
    return packed[:middle] + b"\xff" * 64 + packed[middle + 64 :]


# (case id, kind, content, line the error names, text the error must contain)
CASES: list[tuple[str, str, bytes, int, str]] = [
    # --- qrels: column counts
    ("qrels-3-columns", "qrels", Q_OK + b"q1 0 d3\n", 3, "expected 4 whitespace-separated columns"),
    ("qrels-5-columns", "qrels", Q_OK + b"q1 0 d3 1 x\n", 3, "found <5 columns"),
    ("qrels-1-column", "qrels", b"q1\n", 1, "found <1 columns: 'q1'>"),
    ("qrels-comment-after-grade", "qrels", b"q1 0 d1 1 # note\n", 1, "found <6 columns"),
    ("qrels-double-space-empty-field", "qrels", b"q1  d1 1\n", 1, "found <3 columns"),
    ("qrels-missing-docid-tabs", "qrels", Q_OK + b"q1\t0\t\t1\n", 3, "found <3 columns"),
    ("qrels-indented-3-columns", "qrels", b"  q1 0 d1\n", 1, "found <3 columns"),
    ("qrels-crlf-5-columns", "qrels", b"q1 0 d1 1\r\nq1 0 d2 1 1\r\n", 2, "found <5 columns"),
    ("qrels-lone-cr-joins-lines", "qrels", b"q1 0 d1 1\rq1 0 d2 0\n", 1, "found <8 columns"),
    ("qrels-after-comments", "qrels", b"# h\n\n  # i\nq1 0 d1 1\nq1 0\n", 5, "found <2 columns"),
    ("qrels-bom-3-columns", "qrels", b"\xef\xbb\xbfq1 0 d1\n", 1, "found <3 columns: 'q1 0 d1'>"),
    ("qrels-mega-line-columns", "qrels", b"q1 0 " + b"d" * MEGA + b"\n", 1,
     "(1,000,020 characters)"),
    # --- qrels: grades
    ("grade-word", "qrels", Q_OK + b"q1 0 d3 x\n", 3, "expected an integer relevance grade"),
    ("grade-half", "qrels", Q_OK + b"q1 0 d3 0.5\n", 3, "found '0.5'"),
    ("grade-decimal-one", "qrels", Q_OK + b"q1 0 d3 1.0\n", 3, "found '1.0'"),
    ("grade-exponent", "qrels", Q_OK + b"q1 0 d3 1e3\n", 3, "found '1e3'"),
    ("grade-underscore", "qrels", Q_OK + b"q1 0 d3 1_0\n", 3, "found '1_0'"),
    ("grade-fullwidth", "qrels", Q_OK + "q1 0 d3 １\n".encode(), 3, "only the ASCII digits"),
    ("grade-arabic-indic", "qrels", Q_OK + "q1 0 d3 ٣\n".encode(), 3, "only the ASCII digits"),
    ("grade-hex", "qrels", Q_OK + b"q1 0 d3 0x10\n", 3, "found '0x10'"),
    ("grade-hex-upper-tab", "qrels", Q_OK + b"q1\t0\td3\t0X1F\n", 3, "found '0X1F'"),
    ("grade-plus-minus", "qrels", Q_OK + b"q1 0 d3 +-1\n", 3, "found '+-1'"),
    ("grade-double-minus", "qrels", Q_OK + b"q1 0 d3 --1\n", 3, "found '--1'"),
    ("grade-lone-minus", "qrels", Q_OK + b"q1 0 d3 -\n", 3, "found '-'"),
    ("grade-lone-plus", "qrels", Q_OK + b"q1 0 d3 +\n", 3, "found '+'"),
    ("grade-nan", "qrels", Q_OK + b"q1 0 d3 NaN\n", 3, "found 'NaN'"),
    ("grade-na", "qrels", Q_OK + b"q1 0 d3 NA\n", 3, "found 'NA'"),
    ("grade-inf", "qrels", Q_OK + b"q1 0 d3 inf\n", 3, "found 'inf'"),
    ("grade-comma", "qrels", Q_OK + b"q1 0 d3 1,5\n", 3, "found '1,5'"),
    ("grade-overflow", "qrels", Q_OK + b"q1 0 d3 99999999999999999999\n", 3,
     "beyond the 64-bit integer range"),
    ("grade-int64-max-plus-one", "qrels", Q_OK + b"q1 0 d3 9223372036854775808\n", 3,
     "beyond the 64-bit integer range"),
    ("grade-mega-digits", "qrels", Q_OK + b"q1 0 d3 " + b"7" * MEGA + b"\n", 3,
     "(1,000,000 characters) (beyond the 64-bit integer range)"),
    ("grade-bad-utf8", "qrels", Q_OK + b"q1 0 d3 \xff\n", 3, "expected UTF-8 text"),
    # --- qrels: encoding and NUL
    ("qrels-qid-bad-utf8", "qrels", Q_OK + b"q\xe9 0 d3 1\n", 3,
     "found <bytes b'\\xe9' at column 2>"),
    ("qrels-docid-truncated-utf8", "qrels", Q_OK + b"q1 0 d\xe2\x82 1\n", 3,
     "expected UTF-8 text"),
    ("qrels-overlong-utf8", "qrels", b"q1 0 \xc0\xaf 1\n", 1, "expected UTF-8 text"),
    ("qrels-surrogate-utf8", "qrels", b"q1 0 d\xed\xa0\x80 1\n", 1, "expected UTF-8 text"),
    ("qrels-latin1-file", "qrels", "q1 0 café 1\n".encode("latin-1"), 1, "expected UTF-8 text"),
    ("qrels-nul-in-docid", "qrels", Q_OK + b"q1 0 d\x003 1\n", 3, "expected text without NUL"),
    ("qrels-nul-in-comment", "qrels", b"# \x00\n" + Q_OK, 1, "a NUL byte at column 3"),
    ("qrels-utf16-file", "qrels", "q1 0 d1 1\n".encode("utf-16"), 1, "expected text without NUL"),
    # --- qrels: gzip
    ("qrels-gzip-truncated", "qrels", _QRELS_GZ[: len(_QRELS_GZ) // 2], 0,
     "expected a complete gzip stream"),
    ("qrels-gzip-corrupt", "qrels", _corrupt(_QRELS_GZ), 0, "expected a complete gzip stream"),
    ("qrels-gzip-bad-grade", "qrels", gzip.compress(Q_OK + b"q1 0 d3 high\n"), 3,
     "found 'high'"),
    # --- runs: column counts
    ("run-5-columns", "run", R_OK + b"q1 Q0 d3 3 0.5\n", 3, "found <5 columns"),
    ("run-2-columns", "run", b"q1 Q0\n", 1, "found <2 columns"),
    ("run-empty-rank", "run", R_OK + b"q1 Q0 d3  0.5 r\n", 3, "found <5 columns"),
    ("run-missing-tag-trailing-space", "run", R_OK + b"q1 Q0 d3 3 0.5 \n", 3,
     "found <5 columns"),
    ("run-indented-5-columns", "run", b"\t q1 Q0 d1 1 2.0\n", 1, "found <5 columns"),
    ("run-lone-cr-in-short-line", "run", b"q1 Q0 d1\rx\n", 1, "found <4 columns"),
    ("run-tabs-after-blank-lines", "run", b"q1\tQ0\td1\t1\t2.0\tr\n\n \t\nq1\tQ0\td2\t2\n", 4,
     "found <4 columns"),
    ("run-after-indented-comment", "run", b"  # x\nq1 Q0 d1 1 2.0 r\nq1 Q0\n", 3,
     "found <2 columns"),
    ("run-mega-junk-line", "run", b"q1 Q0 " + b"z" * MEGA + b"\n", 1, "(1,000,021 characters)"),
    # --- runs: scores
    ("score-word", "run", R_OK + b"q1 Q0 d3 3 high r\n", 3, "expected a finite number"),
    ("score-nan", "run", R_OK + b"q1 Q0 d3 3 nan r\n", 3, "found 'nan'"),
    ("score-NaN-tabs", "run", R_OK + b"q1\tQ0\td3\t3\tNaN\tr\n", 3, "found 'NaN'"),
    ("score-inf", "run", R_OK + b"q1 Q0 d3 3 inf r\n", 3, "found 'inf'"),
    ("score-minus-infinity", "run", R_OK + b"q1 Q0 d3 3 -Infinity r\n", 3, "found '-Infinity'"),
    ("score-overflow", "run", R_OK + b"q1 Q0 d3 3 1e400 r\n", 3, "overflows to infinity"),
    ("score-mega-digits", "run", R_OK + b"q1 Q0 d3 3 " + b"9" * MEGA + b" r\n", 3,
     "(1,000,000 characters) (too large: it overflows to infinity)"),
    ("score-hex-float", "run", R_OK + b"q1 Q0 d3 3 0x1p3 r\n", 3, "found '0x1p3'"),
    ("score-underscore", "run", R_OK + b"q1 Q0 d3 3 1_0 r\n", 3, "found '1_0'"),
    ("score-fullwidth", "run", R_OK + "q1 Q0 d3 3 １.5 r\n".encode(), 3, "only the ASCII digits"),
    ("score-comma", "run", R_OK + b"q1 Q0 d3 3 1,5 r\n", 3, "found '1,5'"),
    ("score-two-points", "run", R_OK + b"q1 Q0 d3 3 1.5.2 r\n", 3, "found '1.5.2'"),
    ("score-bare-exponent", "run", R_OK + b"q1 Q0 d3 3 e5 r\n", 3, "found 'e5'"),
    ("score-lone-point", "run", R_OK + b"q1 Q0 d3 3 . r\n", 3, "found '.'"),
    ("score-double-minus", "run", R_OK + b"q1 Q0 d3 3 --1 r\n", 3, "found '--1'"),
    ("score-na", "run", R_OK + b"q1 Q0 d3 3 NA r\n", 3, "found 'NA'"),
    ("score-null", "run", R_OK + b"q1 Q0 d3 3 null r\n", 3, "found 'null'"),
    ("score-crlf", "run", b"q1 Q0 d1 1 2.0 r\r\nq1 Q0 d2 2 1.0 r\r\nq1 Q0 d3 3 x r\r\n", 3,
     "found 'x'"),
    ("score-bad-utf8", "run", R_OK + b"q1 Q0 d3 3 1.\xb5 r\n", 3,
     "found <bytes b'\\xb5' at column 14>"),
    # --- runs: encoding, NUL, gzip
    ("run-qid-bad-utf8", "run", b"q\xff Q0 d1 1 2.0 r\n", 1, "expected UTF-8 text"),
    ("run-docid-bad-utf8", "run", R_OK + b"q1 Q0 d\x803 3 0.5 r\n", 3, "expected UTF-8 text"),
    ("run-nul-in-tag", "run", R_OK + b"q1 Q0 d3 3 0.5 r\x00\n", 3, "a NUL byte at column 17"),
    ("run-gzip-truncated", "run", _RUN_GZ[: len(_RUN_GZ) // 3], 0,
     "expected a complete gzip stream"),
    ("run-gzip-corrupt", "run", _corrupt(_RUN_GZ), 0, "expected a complete gzip stream"),
    ("run-gzip-header-only", "run", _RUN_GZ[:10], 1, "expected a complete gzip stream"),
    ("run-gzip-bad-score", "run", gzip.compress(R_OK + b"q1 Q0 d3 3 nan r\n"), 3,
     "found 'nan'"),
]


def _line_of_break(content: bytes) -> int:
    """For a broken gzip stream: the line where what decompresses ends."""
    pieces = []
    stream = gzip.GzipFile(fileobj=io.BytesIO(content))
    try:
        while piece := stream.read1(1 << 16):
            pieces.append(piece)
    except (OSError, EOFError):
        pass
    return b"".join(pieces).count(b"\n") + 1


@pytest.mark.parametrize(
    ("kind", "content", "line", "text"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_malformed_file_gives_one_located_error_line(
    tmp_path: Path, kind: str, content: bytes, line: int, text: str
) -> None:
    path = tmp_path / f"bad.{kind}"
    path.write_bytes(content)
    args = [str(path), str(RUN)] if kind == "qrels" else [str(QRELS), str(path)]
    result = runner.invoke(app, ["eval", *args, "-m", "P@10"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines
    expected_line = line or _line_of_break(content)
    assert lines[0].startswith(f"Error: {path}:{expected_line}: "), lines[0][:300]
    assert text in lines[0], lines[0][:300]
    assert len(lines[0]) < len(str(path)) + 300  # a megabyte line never floods the terminal


def test_there_are_at_least_sixty_distinct_cases() -> None:
    assert len(CASES) >= 60
    assert len({case[0] for case in CASES}) == len(CASES)
    assert len({(case[1], case[2]) for case in CASES}) == len(CASES)


# (case id, kind, content): each evaluates as the plain golden file does
PLAIN_QRELS = QRELS.read_bytes()
PLAIN_RUN = RUN.read_bytes()
LEGAL: list[tuple[str, str, bytes]] = [
    ("qrels-tabs", "qrels", PLAIN_QRELS.replace(b" ", b"\t")),
    ("qrels-crlf", "qrels", PLAIN_QRELS.replace(b"\n", b"\r\n")),
    ("qrels-crlf-tabs-mixed", "qrels", PLAIN_QRELS.replace(b" ", b" \t").replace(b"\n", b"\r\n")),
    ("qrels-comments", "qrels", b"# judged by\n#  two people\n" + PLAIN_QRELS + b"# end"),
    ("qrels-blank-and-padded-lines", "qrels",
     b"\n   \n" + PLAIN_QRELS.replace(b"\n", b"  \n\t\n")),
    ("qrels-bom", "qrels", b"\xef\xbb\xbf" + PLAIN_QRELS),
    ("qrels-no-final-newline", "qrels", PLAIN_QRELS.rstrip(b"\n")),
    ("qrels-vertical-tab-form-feed", "qrels", PLAIN_QRELS.replace(b" ", b"\x0b\x0c")),
    ("qrels-gzip-with-comments", "qrels", gzip.compress(b"# c\n" + PLAIN_QRELS)),
    ("run-tabs", "run", PLAIN_RUN.replace(b" ", b"\t")),
    ("run-crlf", "run", PLAIN_RUN.replace(b"\n", b"\r\n")),
    ("run-trec-eval-padding", "run", PLAIN_RUN.replace(b" ", b"\t  ")),
    ("run-crlf-tabs-mixed", "run", PLAIN_RUN.replace(b" Q0 ", b"\tQ0 \t").replace(b"\n", b"\r\n")),
    ("run-text-after-tag", "run", PLAIN_RUN.replace(b" golden\n", b" golden more junk at\n")),
    ("run-comments-indented", "run", b"#hdr\n  # x\n" + PLAIN_RUN + b"\t# end\n"),
    ("run-lone-cr-separators", "run", PLAIN_RUN.replace(b" Q0 ", b"\rQ0\r")),
    ("run-leading-blanks", "run", PLAIN_RUN.replace(b"\n", b"\n \t")),
    ("run-bom-gzip", "run", gzip.compress(b"\xef\xbb\xbf" + PLAIN_RUN)),
]


def _evaluate(qrels: Path, run: Path) -> dict[str, object]:
    result = runner.invoke(
        app, ["eval", str(qrels), str(run), "-m", "P@10", "-m", "nDCG@10", "--per-query",
              "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    out: dict[str, object] = json.loads(result.stdout)
    return out


@pytest.mark.parametrize(("kind", "content"), [pytest.param(*c[1:], id=c[0]) for c in LEGAL])
def test_legal_variant_evaluates_as_the_plain_file(
    tmp_path: Path, kind: str, content: bytes
) -> None:
    path = tmp_path / f"ok.{kind}"
    path.write_bytes(content)
    args = (path, RUN) if kind == "qrels" else (QRELS, path)
    assert _evaluate(*args) == _evaluate(QRELS, RUN)
