"""The TREC reader's three parsers agree with one reference: trec_eval's rules, written plainly.

The fast path (pyarrow's CSV reader on single-space text), the general path (pyarrow's regex
kernels, then the CSV reader) and the error path (a Python scan that locates the bad line) are
separate code. Here a deliberately simple line-by-line reading of the rules decides what each
generated file means; every parser must then agree: the same records, or a refusal, and the error
on the line the reference names.
"""

from __future__ import annotations

import gzip
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from recallwatch.errors import InputError
from recallwatch.formats import trec

INTEGER = re.compile(r"[+-]?[0-9]+")
DECIMAL = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?")

Records = tuple[list[str], list[str], list[float]]


def reference(data: bytes, kind: str) -> Records | int:
    """The records of a file, or the 1-based line of its first bad line."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    qids: list[str] = []
    docids: list[str] = []
    values: list[float] = []
    value_at = 3 if kind == "qrels" else 4
    for number, line in enumerate(data.split(b"\n"), 1):
        if b"\0" in line:
            return number
        words = line.split()  # bytes.split: space, \t, \n, \r, \v, \f, as C's isspace()
        if not words or words[0].startswith(b"#"):
            continue
        if (kind == "qrels" and len(words) != 4) or (kind == "run" and len(words) < 6):
            return number
        try:
            qid, docid, value = (words[i].decode("utf-8") for i in (0, 2, value_at))
        except UnicodeDecodeError:
            return number
        if kind == "qrels":
            if not INTEGER.fullmatch(value) or not -(2**63) <= int(value) < 2**63:
                return number
            values.append(int(value))
        else:
            if not DECIMAL.fullmatch(value) or not math.isfinite(float(value)):
                return number
            values.append(float(value))
        qids.append(qid)
        docids.append(docid)
    return qids, docids, values


def _records(columns: Any) -> Records:
    qids, docids, values = columns
    return qids.to_pylist(), docids.to_pylist(), np.asarray(values).tolist()


IDS = ["q1", "q2", "d1", "D#2", "#x", "é", "0", "Q0", "tag", "x" * 40]
NUMBERS = [
    # legal values first: the record generator draws from NUMBERS[:12]
    "0", "1", "-1", "+1", "007", "-0", "2.5", ".5", "5.", "-.5e-3", "1e5", "1E+5",
    "1e400", "1e-400", "0x10", "0X1F", "1_0", "１", "٣", "nan", "NaN", "inf", "-Infinity",
    "NA", "null", "1,5", "1.5.2", "e5", ".", "+", "-", "--1", "+-1", "9223372036854775807",
    "9223372036854775808", "99999999999999999999", "",
]
BYTES = [b"\xff", b"\xe2\x82", b"\xc0\xaf", b"\xed\xa0\x80", b"\x00", b"#"]
SEPARATORS = [b" ", b"\t", b"  ", b" \t ", b"\x0b", b"\x0c", b"\r", b"\t\r "]
ENDINGS = [b"\n", b"\r\n", b"\n", b"\n", b" \n", b"\t\r\n"]

words = st.one_of(
    st.sampled_from(IDS).map(str.encode),
    st.sampled_from(NUMBERS).map(str.encode),
    st.sampled_from(BYTES),
)


@st.composite
def lines(draw: Any, kind: str) -> bytes:
    shape = draw(st.sampled_from(["record", "record", "record", "mutated", "comment", "blank"]))
    if shape == "blank":
        return draw(st.sampled_from([b"", b" ", b"\t", b"\r"]))
    if shape == "comment":
        return draw(st.sampled_from([b"", b"  ", b"\t"])) + b"#" + draw(words)
    n = 4 if kind == "qrels" else 6
    fields = [draw(st.sampled_from(IDS)).encode() for _ in range(n)]
    value_at = 3 if kind == "qrels" else 4
    fields[value_at] = draw(st.sampled_from(NUMBERS[:12])).encode()
    if shape == "mutated":
        for _ in range(draw(st.integers(1, 2))):
            action = draw(st.sampled_from(["replace", "drop", "add"]))
            at = draw(st.integers(0, len(fields) - 1)) if fields else 0
            if action == "replace" and fields:
                fields[at] = draw(words)
            elif action == "drop" and fields:
                del fields[at]
            else:
                fields.insert(at, draw(words))
    lead = draw(st.sampled_from([b"", b"", b" ", b"\t"]))
    separators = [draw(st.sampled_from(SEPARATORS[:3] if draw(st.booleans()) else SEPARATORS))
                  for _ in fields]
    return lead + b"".join(f + s for f, s in zip(fields, separators, strict=True)).rstrip(b" ")


@st.composite
def files(draw: Any, kind: str) -> bytes:
    body = draw(st.lists(lines(kind), min_size=1, max_size=8))
    endings = [draw(st.sampled_from(ENDINGS)) for _ in body]
    data = b"".join(line + end for line, end in zip(body, endings, strict=True))
    if draw(st.booleans()):
        data = data.rstrip(b"\n")
    if draw(st.integers(0, 9)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


def _check(data: bytes, kind: str, directory: Path) -> None:
    layout = trec._LAYOUTS[kind]  # type: ignore[index]
    expected = reference(data, kind)
    stripped = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    fast = trec._parse_fast(stripped, layout) if b"\0" not in stripped else None
    general = trec._parse_general(stripped, layout) if b"\0" not in stripped else None
    for parsed in (fast, general):
        if parsed is None:
            continue
        got = _records(parsed)
        if isinstance(expected, int):
            # a run's non-finite scores are the one refusal left to the caller
            assert kind == "run" and not all(math.isfinite(v) for v in got[2]), (data, got)
        else:
            assert got == expected, data
    if not isinstance(expected, int):
        assert general is not None, data  # the general path reads every legal file
    located = trec._locate_error(stripped, "f", layout)
    assert (located.line if located else None) == (expected if isinstance(expected, int) else None)

    path = directory / ("file.gz" if len(data) % 3 == 0 else "file")
    path.write_bytes(gzip.compress(data) if path.suffix == ".gz" else data)
    read = trec.read_qrels if kind == "qrels" else trec.read_run
    if isinstance(expected, int):
        with pytest.raises(InputError) as err:
            read(path)
        assert err.value.line == expected, (data, str(err.value))
    elif not expected[0]:
        nothing = r"found <(an empty file|only comments and blank lines)>$"
        with pytest.raises(InputError, match=nothing):
            read(path)
    else:
        t = read(path)
        assert (t.query_ids.to_pylist(), t.doc_ids.to_pylist(), t.values.tolist()) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files("qrels"))
@example(b"q1 0 d1 0x10\n")
@example(b"q1  d1 1\n")  # three words: an empty field on the single-space path
@example(b"# 0 d1 1\nq 0 d 1\n")
@example(b"q 0 d +1\n")
def test_qrels_parsers_agree(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _check(data, "qrels", tmp_path_factory.mktemp("qrels"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(files("run"))
@example(b"q Q0 d  2.0 r\n")  # five words
@example(b"q Q0 d 1 2.0 \n")
@example(b"q Q0 d 1 2.0 r\rq Q0 e 1 x r\n")
@example(b"q Q0 d 1 nan r\n")
@example(b"# Q0 d 1 2.0 r\n")
def test_run_parsers_agree(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    _check(data, "run", tmp_path_factory.mktemp("run"))


@pytest.mark.parametrize("text", [*NUMBERS, "1" * 400, "0." + "1" * 400, "1e" + "9" * 30])
def test_pyarrow_reads_a_score_exactly_when_the_grammar_allows_it(text: str) -> None:
    """The fast path trusts pyarrow's float parser; it must agree with the decimal grammar."""
    layout = trec._LAYOUTS["run"]
    parsed = trec._parse_fast(f"q Q0 d 1 {text} r\n".encode(), layout) if text else None
    finite = parsed is not None and bool(np.isfinite(parsed[2]).all())
    assert finite == bool(DECIMAL.fullmatch(text) and math.isfinite(float(text)))
