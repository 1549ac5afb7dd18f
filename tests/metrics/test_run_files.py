"""Runs from Parquet and Arrow IPC files evaluate as the same run written as TREC."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest

from recallwatch.errors import InputError
from recallwatch.metrics import Qrels, Run, evaluate

RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d1 2 1.0 t\n"
QRELS = {"q1": {"d2": 1}, "q2": {"d1": 2, "d3": 0}}
TABLE = pa.table({
    "qid": ["q1", "q1", "q2", "q2"],
    "docid": ["d1", "d2", "d3", "d1"],
    "score": [2.5, 1.5, 1.0, 1.0],
})


def _values(run: Run) -> dict[str, list[float]]:
    res = evaluate(Qrels.from_dict(QRELS), run, ["AP", "nDCG@2", "P@1", "RR"])
    return {str(m): res.per_query[m].tolist() for m in res.measures}


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".feather", ".ipc"])
def test_columnar_runs_evaluate_as_trec(tmp_path: Path, suffix: str) -> None:
    trec = tmp_path / "run.txt"
    trec.write_text(RUN)
    path = tmp_path / f"run{suffix}"
    if suffix == ".parquet":
        pq.write_table(TABLE, path)
    elif suffix == ".ipc":  # the Arrow IPC stream format (no footer)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, TABLE.schema) as w:
            w.write_table(TABLE)
    else:
        feather.write_feather(TABLE, str(path))
    run = Run.read(path)
    assert run.source == str(path)
    assert _values(run) == _values(Run.read(trec, cache=False))


def test_ids_may_be_integers_or_dictionary_encoded(tmp_path: Path) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(pa.table({
        "qid": pa.array([1, 1, 2, 2]),
        "docid": pa.array(["d1", "d2", "d3", "d1"]).dictionary_encode(),
        "score": pa.array([2.5, 1.5, 1.0, 1.0], pa.float32()),
    }), path)
    run = Run.read(path)
    assert run.query_ids.to_pylist() == ["1", "1", "2", "2"]
    assert run.doc_ids.to_pylist() == ["d1", "d2", "d3", "d1"]


@pytest.mark.parametrize(("table", "message"), [
    (TABLE.drop(["score"]),
     r"field 'score': expected a column named 'score', found <columns qid, docid>"),
    (TABLE.set_column(2, "score", pa.array(["1", "2", "3", "4"])),
     r"field 'score': expected a column of numbers, found <a column of string>"),
    (TABLE.set_column(1, "docid", pa.array(["a", None, "c", "d"])),
     r"field 'docid': expected a value in every row, found <a missing value>"),
    (TABLE.set_column(2, "score", pa.array([1.0, float("nan"), 1.0, 1.0])),
     r"field 'score': expected a finite number, found nan"),
    (TABLE.set_column(1, "docid", pa.array(["d1", "d1", "d3", "d4"])),
     r"duplicate document 'd1' in query 'q1' \(entries 0 and 1\)"),
])
def test_bad_columnar_runs_are_located(tmp_path: Path, table: pa.Table, message: str) -> None:
    path = tmp_path / "run.parquet"
    pq.write_table(table, path)
    with pytest.raises(InputError, match=message) as info:
        Run.read(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"not parquet at all\n"])
def test_a_file_that_is_not_parquet(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "run.parquet"
    path.write_bytes(content)
    with pytest.raises(InputError, match=r"run\.parquet: .*expected a Parquet file"):
        Run.read(path)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        Run.read(tmp_path / "absent.arrow")
