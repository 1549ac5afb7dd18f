"""Arrow is only handed memory it owns, so no Arrow thread ever needs Python to free it.

Arrow's threaded CSV reader can release its input on a worker thread after ``read_csv`` has
returned; when that input wrapped a Python ``bytes`` object and the interpreter was already
exiting, the process aborted (exit 134, "terminate called without an active exception") after
printing correct output — about 1 run in 250 under load. The end-to-end proof is the loop in
``benchmarks/exit_codes.py`` (thousands of runs, 0 wrong exit codes; a short version runs in the
slow suite); these tests pin the mechanism.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.formats import trec
from recallwatch.formats.arrow import arrow_owned, strings


@pytest.mark.parametrize(
    "data",
    [b"q1 0 d1 1\n", memoryview(b"abc"), np.arange(5, dtype=np.int32), b""],
    ids=["bytes", "memoryview", "numpy", "empty"],
)
def test_arrow_owned_copies_into_memory_of_arrow_s_own_pool(data: object) -> None:
    raw = bytes(memoryview(data).cast("B"))  # type: ignore[arg-type]
    before = pa.total_allocated_bytes()
    buffer = arrow_owned(data)  # type: ignore[arg-type]
    assert pa.total_allocated_bytes() - before >= len(raw)  # allocated by Arrow, not Python
    assert buffer.to_pybytes() == raw
    before = pa.total_allocated_bytes()
    wrapped = pa.py_buffer(b"q1 0 d1 1\n")  # what the check tells apart: Python memory, wrapped
    assert pa.total_allocated_bytes() == before and wrapped.size == 10


def test_strings_are_built_on_arrow_owned_buffers() -> None:
    before = pa.total_allocated_bytes()
    array = strings(["q1", "é", ""])
    assert pa.total_allocated_bytes() - before >= 4 + len("q1é".encode())
    assert array.to_pylist() == ["q1", "é", ""]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(), max_size=30))
def test_strings_hold_every_string_as_given(values: list[str]) -> None:
    """Any text, empty strings and NUL bytes inside a string included."""
    array = strings(values)
    assert array.type == pa.string() and array.to_pylist() == values


def test_strings_with_nul_bytes_and_none() -> None:
    assert strings(["a\0b", "", "\0"]).to_pylist() == ["a\0b", "", "\0"]
    assert strings([]).to_pylist() == [] and strings([""]).to_pylist() == [""]
    with pytest.raises(TypeError):
        strings(["a", 3])  # type: ignore[list-item]


def test_the_trec_reader_hands_the_csv_reader_arrow_owned_memory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    seen: list[tuple[object, int]] = []
    real = pa.BufferReader

    def spy(source: pa.Buffer) -> pa.BufferReader:
        seen.append((source, pa.total_allocated_bytes() - before))
        return real(source)

    monkeypatch.setattr(trec.pa, "BufferReader", spy)
    path = tmp_path / "run.txt"  # type: ignore[operator]
    path.write_text("q1 Q0 d1 1 0.5 t\n", encoding="utf-8")
    before = pa.total_allocated_bytes()
    table = trec.read_run(path)
    assert len(table) == 1
    assert seen
    for source, allocated in seen:
        assert isinstance(source, pa.Buffer) and allocated >= source.size
