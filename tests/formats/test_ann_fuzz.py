"""Malformed vector files (ANN-Benchmarks HDF5, .fvecs/.bin families, .npy) through ``bench``.

A sweep names the damaged file as its dataset; every case must exit 2 with one ``Error:`` line
that names the file, like every other malformed input (see test_fuzz.py for the other formats).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.formats.test_fuzz import COMMAND, runner

h5py = pytest.importorskip("h5py")

Writer = Callable[[Path], None]


def _bytes(data: bytes) -> Writer:
    return lambda p: p.write_bytes(data)


def _npy(arr: np.ndarray) -> Writer:
    return lambda p: np.save(p, arr, allow_pickle=False)


def _h5(train: object = None, test: object = None, distance: str | None = "angular",
        drop: tuple[str, ...] = ()) -> Writer:
    rng = np.random.default_rng(0)
    good = {"train": rng.normal(size=(50, 8)).astype(np.float32),
            "test": rng.normal(size=(5, 8)).astype(np.float32)}
    arrays = {"train": good["train"] if train is None else train,
              "test": good["test"] if test is None else test}

    def write(p: Path) -> None:
        with h5py.File(p, "w") as f:
            for name, arr in arrays.items():
                if name not in drop:
                    f.create_dataset(name, data=arr)
            if distance is not None:
                f.attrs["distance"] = distance
    return write


def _vecs(d: int, rows: list[list[float]], dtype: str = "<f4") -> bytes:
    out = b""
    for row in rows:
        out += struct.pack("<i", d) + np.asarray(row, dtype=dtype).tobytes()
    return out


def _bin(n: int, d: int, body: bytes) -> bytes:
    return struct.pack("<ii", n, d) + body


def cases() -> Iterator[tuple[str, str, Writer]]:
    """(id, file name, writer): each a vector file broken one way."""
    nan = np.full((20, 4), np.nan, dtype=np.float32)
    yield "npy-1d", "base.npy", _npy(np.arange(10, dtype=np.float32))
    yield "npy-3d", "base.npy", _npy(np.zeros((2, 2, 2), dtype=np.float32))
    yield "npy-empty", "base.npy", _npy(np.zeros((0, 4), dtype=np.float32))
    yield "npy-not-numpy", "base.npy", _bytes(b"this is not a numpy file\n")
    yield "npy-truncated", "base.npy", _bytes(b"\x93NUMPY\x01\x00v\x00{'descr'")
    yield "npy-nan", "base.npy", _npy(nan)
    yield "npy-strings", "base.npy", _npy(np.array([["a", "b"], ["c", "d"]]))
    yield "npy-empty-file", "base.npy", _bytes(b"")
    yield "fvecs-empty", "base.fvecs", _bytes(b"")
    yield "fvecs-zero-dim", "base.fvecs", _bytes(struct.pack("<i", 0))
    yield "fvecs-negative-dim", "base.fvecs", _bytes(struct.pack("<i", -3) + b"\0" * 12)
    yield "fvecs-huge-dim", "base.fvecs", _bytes(struct.pack("<i", 2**30) + b"\0" * 8)
    yield "fvecs-truncated-row", "base.fvecs", _bytes(_vecs(4, [[1, 2, 3, 4]]) + b"\x04\0\0\0\0")
    yield "fvecs-mixed-dims", "base.fvecs", _bytes(_vecs(4, [[1, 2, 3, 4]] * 10)
                                                   + _vecs(3, [[1, 2, 3]]))
    yield "fvecs-nan", "base.fvecs", _bytes(_vecs(4, [[float("nan")] * 4] * 20))
    yield "ivecs-truncated", "base.ivecs", _bytes(_vecs(2, [[1, 2]], "<i4")[:-2])
    yield "bvecs-short", "base.bvecs", _bytes(struct.pack("<i", 8) + b"\x01\x02")
    yield "fbin-empty", "base.fbin", _bytes(b"")
    yield "fbin-short-header", "base.fbin", _bytes(b"\x01\x00\x00")
    yield "fbin-short-body", "base.fbin", _bytes(_bin(10, 4, b"\0" * 16))
    yield "fbin-long-body", "base.fbin", _bytes(_bin(1, 4, b"\0" * 64))
    yield "fbin-zero-rows", "base.fbin", _bytes(_bin(0, 4, b""))
    yield "fbin-negative", "base.fbin", _bytes(_bin(-1, 4, b""))
    yield "u8bin-short", "base.u8bin", _bytes(_bin(4, 4, b"\0" * 3))
    yield "i8bin-zero-dim", "base.i8bin", _bytes(_bin(4, 0, b""))
    yield "unknown-suffix", "base.vec", _bytes(_vecs(4, [[1, 2, 3, 4]]))
    yield "directory", "base.fvecs", lambda p: p.mkdir()
    yield "h5-not-hdf5", "data.hdf5", _bytes(b"not an hdf5 file at all")
    yield "h5-empty-file", "data.hdf5", _bytes(b"")
    yield "h5-no-train", "data.hdf5", _h5(drop=("train",))
    yield "h5-no-test", "data.hdf5", _h5(drop=("test",))
    yield "h5-no-distance", "data.hdf5", _h5(distance=None)
    yield "h5-unknown-distance", "data.hdf5", _h5(distance="manhattan")
    yield "h5-dims-differ", "data.hdf5", _h5(test=np.zeros((5, 3), dtype=np.float32))
    yield "h5-train-1d", "data.hdf5", _h5(train=np.zeros(50, dtype=np.float32))
    yield "h5-train-empty", "data.hdf5", _h5(train=np.zeros((0, 8), dtype=np.float32))
    yield "h5-train-nan", "data.hdf5", _h5(train=np.full((50, 8), np.nan, dtype=np.float32))
    yield "h5-test-inf", "data.hdf5", _h5(test=np.full((5, 8), np.inf, dtype=np.float32))
    yield "h5-train-strings", "data.hdf5", _h5(train=np.array([b"a", b"b"]))


CASES = list(cases())


def _sweep(tmp_path: Path, data: Path) -> Path:
    form = (f"hdf5: {data.name}" if data.suffix in (".hdf5", ".h5")
            else f"base: {data.name}\n  queries: {{sample: 5, seed: 1}}")
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(f"""name: ann-fuzz
dataset:
  {form}
k: 5
recall_at: [5]
timing: {{warmup: 0}}
load: {{threads: [1], seconds: 0.1}}
engines:
  - engine: faiss-flat
""", encoding="utf-8")
    return sweep


def test_a_valid_file_of_each_kind_passes(tmp_path: Path) -> None:
    for name, write in (("base.npy", _npy(np.random.default_rng(0).normal(size=(30, 4)))),
                        ("data.hdf5", _h5())):
        folder = tmp_path / name
        folder.mkdir()
        write(folder / name)
        result = runner.invoke(COMMAND, ["bench", str(_sweep(folder, folder / name)),
                                         "--out-dir", str(folder / "out")])
        assert result.exit_code == 0, result.stderr


@pytest.mark.parametrize(("name", "write"), [(n, w) for _, n, w in CASES],
                         ids=[c[0] for c in CASES])
def test_malformed_vector_file_is_one_error_line(name: str, write: Writer,
                                                 tmp_path: Path) -> None:
    data = tmp_path / name
    write(data)
    result = runner.invoke(COMMAND, ["bench", str(_sweep(tmp_path, data)),
                                     "--out-dir", str(tmp_path / "out")])
    assert result.exit_code == 2, (result.exit_code, result.stderr, result.stdout)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: {data}"), lines[0][:300]  # the file, then its line if any
    assert len(lines[0]) < 400  # readable: no dump of the file
