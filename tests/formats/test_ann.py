from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallwatch.errors import InputError
from recallwatch.formats.ann import AnnDataset, read_hdf5, read_vectors, write_hdf5, write_vectors


def test_hdf5_round_trip_keeps_arrays_and_metric(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    data = AnnDataset(rng.standard_normal((50, 8)).astype(np.float32),
                      rng.standard_normal((5, 8)).astype(np.float32), "cosine",
                      rng.integers(0, 50, (5, 10)), rng.random((5, 10)).astype(np.float32))
    path = tmp_path / "d.hdf5"
    write_hdf5(path, data)
    back = read_hdf5(path)
    assert back.metric == "cosine"
    np.testing.assert_array_equal(back.train, data.train)
    np.testing.assert_array_equal(back.test, data.test)
    assert back.neighbors is not None and back.distances is not None
    np.testing.assert_array_equal(back.neighbors, data.neighbors)
    np.testing.assert_array_equal(back.distances, data.distances)


def test_hdf5_uses_ann_benchmarks_names(tmp_path: Path) -> None:
    import h5py

    path = tmp_path / "d.hdf5"
    write_hdf5(path, AnnDataset(np.ones((3, 2), np.float32), np.ones((1, 2), np.float32), "l2"))
    with h5py.File(path) as f:
        assert f.attrs["distance"] == "euclidean"
        assert set(f) == {"train", "test"}


def test_hdf5_without_distance_attribute_names_the_field(tmp_path: Path) -> None:
    import h5py

    path = tmp_path / "bad.hdf5"
    with h5py.File(path, "w") as f:
        f["train"] = np.ones((3, 2))
        f["test"] = np.ones((1, 2))
    with pytest.raises(InputError, match=r"bad.hdf5: field 'distance': expected a file attribute"):
        read_hdf5(path)


@pytest.mark.parametrize("suffix", [".npy", ".fvecs", ".fbin", ".ivecs", ".ibin", ".bvecs",
                                    ".u8bin"])
def test_vector_files_round_trip(tmp_path: Path, suffix: str) -> None:
    rng = np.random.default_rng(1)
    arr = rng.integers(0, 200, (7, 5)).astype(np.float32)
    path = tmp_path / f"v{suffix}"
    write_vectors(path, arr)
    back = read_vectors(path)
    assert back.shape == (7, 5)
    np.testing.assert_array_equal(back.astype(np.float32), arr)


def test_fvecs_with_a_wrong_row_dimension_names_the_row(tmp_path: Path) -> None:
    path = tmp_path / "v.fvecs"
    write_vectors(path, np.ones((4, 3), np.float32))
    raw = bytearray(path.read_bytes())
    raw[2 * 16:2 * 16 + 4] = np.array([9], "<i4").tobytes()  # row 3 claims dimension 9
    path.write_bytes(bytes(raw))
    with pytest.raises(InputError, match=r"v.fvecs:3: field 'dimension': expected 3, found 9"):
        read_vectors(path)


def test_fbin_with_a_short_body_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "v.fbin"
    path.write_bytes(np.array([10, 4], "<i4").tobytes() + b"\0" * 12)
    with pytest.raises(InputError, match=r"field 'header': expected 168 bytes for n=10, d=4"):
        read_vectors(path)


def test_unknown_suffix_lists_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"expected a file ending in .fvecs, .ivecs"):
        read_vectors(tmp_path / "v.txt")
