"""Qrels too large to hold whole: the judgments scattered by query with the run through
temporary files and evaluated a group of queries at a time; equal bit for bit to the whole
reading and to pytrec_eval, in memory that does not follow the qrels; refused input located as
the whole reading locates it; the temporary files gone afterwards."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.errors import InputError
from recallwatch.metrics import Qrels, Run, evaluate, evaluate_file
from recallwatch.metrics._regroup import Scattered
from tests.metrics.test_regroup import _identical, _shuffled
from tests.metrics.test_streamed import (
    EVERY_FAMILY,
    PYTREC_NAMES,
    _write,
    assert_pytrec_evals,
    python_output,
)
from tests.stats.test_cranfield import cranfield  # noqa: F401  (the fixture: a real BM25 run)


def _tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    return tmpdir


@pytest.mark.parametrize("block_bytes", [300, 2000, 6000])
@pytest.mark.parametrize("shuffle", [False, True])
def test_large_qrels_are_scattered_with_the_run_bit_for_bit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_bytes: int, shuffle: bool) -> None:
    """Judged queries the run lacks, run queries without judgments, negative grades, ties; the
    run grouped by query or not: the same values, dtypes and query lists as the whole reading."""
    qrels_path, run_path = _write(tmp_path, seed=21)
    if shuffle:
        _shuffled(run_path, tmp_path / "shuffled.txt", seed=4)
        run_path = tmp_path / "shuffled.txt"
    tmpdir = _tmpdir(tmp_path, monkeypatch)
    done = evaluate_file(qrels_path, run_path, EVERY_FAMILY, block_bytes=block_bytes)
    assert done.read_whole is None and done.note is None
    assert done.temporary_files > 4 and done.blocks >= 2
    whole = evaluate(Qrels.from_trec(qrels_path), Run.from_trec(run_path, cache=False),
                     EVERY_FAMILY)
    assert whole.missing_from_run and "unjudged" in whole.not_judged
    _identical(whole, done.result)
    assert not list(tmpdir.iterdir())


def test_small_qrels_are_read_whole_without_temporary_files(tmp_path: Path) -> None:
    qrels_path, run_path = _write(tmp_path, seed=22)
    done = evaluate_file(qrels_path, run_path, EVERY_FAMILY)
    assert done.temporary_files == 0 and done.read_whole is None
    _identical(evaluate(Qrels.from_trec(qrels_path), Run.from_trec(run_path, cache=False),
                        EVERY_FAMILY), done.result)


@pytest.mark.parametrize("gz", [False, True])
def test_real_qrels_scattered_give_pytrec_evals_values(
        tmp_path: Path, cranfield: Path, gz: bool) -> None:  # noqa: F811
    qrels_path = cranfield / "qrels"
    if gz:
        qrels_path = tmp_path / "qrels.gz"
        qrels_path.write_bytes(gzip.compress((cranfield / "qrels").read_bytes()))
    run_path = tmp_path / "run.txt"
    _shuffled(cranfield / "full", run_path, seed=5)
    done = evaluate_file(qrels_path, run_path, list(PYTREC_NAMES), block_bytes=4000)
    assert done.temporary_files > 10
    assert_pytrec_evals(done.result, cranfield / "qrels", run_path)
    _identical(evaluate(Qrels.from_trec(cranfield / "qrels"),
                        Run.from_trec(cranfield / "full", cache=False), list(PYTREC_NAMES)),
               done.result)


def _with_line(path: Path, line: str) -> int:
    """``line`` inserted two thirds of the way down the file; its line number."""
    lines = path.read_text().splitlines(keepends=True)
    at = 2 * len(lines) // 3
    lines.insert(at, line)
    path.write_text("".join(lines))
    return at + 1


@pytest.mark.parametrize("bad", ["refused", "twice"])
def test_bad_qrels_are_located_as_the_whole_reading_locates_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str) -> None:
    qrels_path, run_path = _write(tmp_path, seed=23)
    if bad == "refused":
        line = _with_line(qrels_path, "q5 0 d1 high\n")
    else:  # a judgment given again: the whole reading names both lines
        line = _with_line(qrels_path, qrels_path.read_text().splitlines(keepends=True)[3])
    tmpdir = _tmpdir(tmp_path, monkeypatch)
    with pytest.raises(InputError) as whole:
        Qrels.from_trec(qrels_path)
    with pytest.raises(InputError) as scattered:
        evaluate_file(qrels_path, run_path, ["AP"], block_bytes=500)
    assert str(scattered.value) == str(whole.value)
    assert f"qrels.txt:{line}:" in str(whole.value)
    assert not list(tmpdir.iterdir())
    result = CliRunner().invoke(app, ["eval", str(qrels_path), str(run_path), "-m", "AP"])
    assert result.exit_code == 2 and f"qrels.txt:{line}:" in result.stderr
    assert "Traceback" not in result.output


def test_a_bad_run_with_large_qrels_is_located_as_before(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qrels_path, run_path = _write(tmp_path, seed=24)
    line = _with_line(run_path, "q5 Q0 d1 1 high tag\n")
    tmpdir = _tmpdir(tmp_path, monkeypatch)
    with pytest.raises(InputError) as whole:
        Run.from_trec(run_path, cache=False)
    with pytest.raises(InputError) as scattered:
        evaluate_file(qrels_path, run_path, ["AP"], block_bytes=500)
    assert str(scattered.value) == str(whole.value) and f"run.txt:{line}:" in str(whole.value)
    assert not list(tmpdir.iterdir())
    missing = tmp_path / "no-run.txt"
    with pytest.raises(InputError) as absent:
        evaluate_file(qrels_path, missing, ["AP"], block_bytes=500)
    assert "no-run.txt" in str(absent.value)


def test_without_a_usable_temporary_directory_the_qrels_are_read_whole_and_said_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    qrels_path, run_path = _write(tmp_path, seed=25)
    missing = tmp_path / "no-such-dir"
    monkeypatch.setenv("TMPDIR", str(missing))
    done = evaluate_file(qrels_path, run_path, EVERY_FAMILY, block_bytes=500)
    assert done.note is not None and done.note.startswith(f"{qrels_path}: the temporary files")
    assert str(missing) in done.note and "qrels were read whole" in done.note
    _identical(evaluate(Qrels.from_trec(qrels_path), Run.from_trec(run_path, cache=False),
                        EVERY_FAMILY), done.result)
    assert not missing.exists()


@pytest.mark.parametrize("large_qrels", [False, True])
def test_a_temporary_file_removed_during_the_run_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large_qrels: bool) -> None:
    """Something cleans TMPDIR while the run is evaluated: a located error, not a crash (it
    was an internal error, exit 3)."""
    qrels_path, run_path = _write(tmp_path, seed=26)
    _shuffled(run_path, tmp_path / "shuffled.txt", seed=6)
    run_path = tmp_path / "shuffled.txt"
    if not large_qrels:  # qrels held whole; the run regrouped (its text over a block)
        qrels_path.write_text(qrels_path.read_text()[:1000].rsplit("\n", 1)[0] + "\n")
        assert qrels_path.stat().st_size < 1500 < run_path.stat().st_size
    tmpdir = _tmpdir(tmp_path, monkeypatch)
    read = Scattered.read
    removed: list[Path] = []

    def cleaned_first(self: Scattered, numbers: list[int]) -> object:
        if not removed:
            removed.append(self.files[numbers[0]])
            removed[0].unlink()
        return read(self, numbers)

    monkeypatch.setattr(Scattered, "read", cleaned_first)
    with pytest.raises(InputError) as error:  # an InputError: exit 2, with its message
        evaluate_file(qrels_path, run_path, ["AP"], block_bytes=1500)
    message = str(error.value)
    assert message.startswith(f"{removed[0]}: the temporary copy of {run_path}")
    assert "could not be read back" in message and "TMPDIR" in message
    assert not list(tmpdir.iterdir())


def test_the_memory_does_not_follow_the_qrels(tmp_path: Path) -> None:
    """Eight times the judgments (100 a query) add less than 4 bytes of Python-traced memory
    each (the result's query ids and values); reading them whole adds ten times as much (its
    arrays hold every judgment)."""

    def write(n: int) -> tuple[Path, Path]:
        qrels, run = tmp_path / f"qrels-{n}.txt", tmp_path / f"run-{n}.txt"
        with qrels.open("w") as q, run.open("w") as r:
            for i in range(n):
                q.writelines(f"q{i} 0 d{d} {d % 3}\n" for d in range(100))
                r.writelines(f"q{i} Q0 d{d * 7} {d} {1 - d / 10} t\n" for d in range(5))
        return qrels, run

    def peak(files: tuple[Path, Path], whole: bool) -> int:
        tracemalloc.start()
        try:
            qrels = Qrels.from_trec(files[0]) if whole else files[0]
            done = evaluate_file(qrels, files[1], ["AP", "nDCG@10"], block_bytes=1 << 18)
            assert (done.temporary_files > 0) != whole
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, big = write(500), write(4000)
    peak(small, whole=False)  # what a first call imports and caches is not the qrels' cost
    scattered = peak(big, whole=False) - peak(small, whole=False)
    assert scattered < 4 * 3500 * 100, scattered
    assert peak(big, whole=True) - peak(small, whole=True) > 10 * scattered


def test_scattered_qrels_do_not_import_pandas(tmp_path: Path) -> None:
    """As for the run's blocks: pyarrow imports pandas (a second of a cold start) for an array
    built from a Python list; the merge of the groups' results sorts in Python instead."""
    qrels_path, run_path = _write(tmp_path, seed=27)
    code = ("import sys\n"
            "from recallwatch.metrics import evaluate_file\n"
            f"done = evaluate_file({str(qrels_path)!r}, {str(run_path)!r}, ['AP', 'nDCG@10'], "
            "block_bytes=500)\n"
            "print(done.temporary_files > 4, 'pandas' in sys.modules)\n")
    assert python_output(code).split() == ["True", "False"]
