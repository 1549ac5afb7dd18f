"""Vector files for benchmarks: ANN-Benchmarks HDF5, ``.npy``, ``.fvecs``/``.ivecs``/``.bvecs``
(TEXMEX) and ``.fbin``/``.ibin``/``.u8bin`` (big-ann-benchmarks).

Layouts:

- HDF5 (ANN-Benchmarks): datasets ``train`` (n × d), ``test`` (q × d), ``neighbors`` (q × k int)
  and ``distances`` (q × k float), and the attribute ``distance`` (``euclidean``, ``angular`` or
  ``dot``; ``ip``/``cosine``/``l2`` are accepted on read).
- ``*vecs``: every row is an int32 dimension followed by that many values.
- ``*bin``: an int32 row count and an int32 dimension, then the rows.

Large ``*vecs``/``*bin``/``.npy`` files are memory-mapped, not read into memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from recallwatch._files import atomic_path
from recallwatch.errors import InputError, NotInstalledError

__all__ = [
    "VECTOR_SUFFIXES",
    "AnnDataset",
    "Metric",
    "parse_metric",
    "read_hdf5",
    "read_vectors",
    "write_hdf5",
    "write_vectors",
]

Metric = Literal["ip", "l2", "cosine"]

# The HDF5 ``distance`` attribute, both ways. ANN-Benchmarks spells cosine "angular".
_TO_ATTR: dict[Metric, str] = {"l2": "euclidean", "cosine": "angular", "ip": "dot"}
_FROM_ATTR: dict[str, Metric] = {
    "euclidean": "l2", "l2": "l2", "angular": "cosine", "cosine": "cosine",
    "dot": "ip", "ip": "ip", "inner_product": "ip", "mips": "ip",
}

# suffix -> (element dtype, layout)
_FORMATS: dict[str, tuple[str, Literal["vecs", "bin", "npy"]]] = {
    ".fvecs": ("<f4", "vecs"), ".ivecs": ("<i4", "vecs"), ".bvecs": ("u1", "vecs"),
    ".fbin": ("<f4", "bin"), ".ibin": ("<i4", "bin"), ".u8bin": ("u1", "bin"),
    ".i8bin": ("i1", "bin"), ".npy": ("", "npy"),
}
VECTOR_SUFFIXES: tuple[str, ...] = (*_FORMATS, ".hdf5", ".h5")


@dataclass(frozen=True)
class AnnDataset:
    """Base vectors, queries and (optionally) their exact neighbours, as ANN-Benchmarks stores them.

    ``distances`` follow the ANN-Benchmarks convention for the metric: euclidean distance for
    ``l2``, ``1 - cosine`` for ``cosine``, ``-dot`` for ``ip`` (smaller is closer, always).
    """

    train: np.ndarray
    test: np.ndarray
    metric: Metric
    neighbors: np.ndarray | None = None
    distances: np.ndarray | None = None


def parse_metric(value: str, *, source: str | None = None, field: str = "metric") -> Metric:
    """A metric name (ours or ANN-Benchmarks' spelling) as one of ``ip``, ``l2``, ``cosine``."""
    metric = _FROM_ATTR.get(str(value).strip().lower())
    if metric is None:
        raise InputError(source=source, field=field, expected="one of ip, l2, cosine "
                         "(or euclidean, angular, dot)", found=value)
    return metric


def _h5py(path: Path) -> object:
    try:
        import h5py
    except ImportError as exc:
        raise NotInstalledError(f"h5py (to read {path.name})", "bench") from exc
    return h5py


def read_hdf5(path: str | Path) -> AnnDataset:
    """An ANN-Benchmarks HDF5 file. ``neighbors``/``distances`` are optional."""
    path = Path(path)
    h5py = _h5py(path)
    try:
        handle = h5py.File(path, "r")  # type: ignore[attr-defined]
    except (OSError, ValueError) as exc:
        raise InputError(source=str(path), expected="an HDF5 file", found=f"<{exc}>") from exc
    with handle as f:
        for name in ("train", "test"):
            if name not in f:
                raise InputError(source=str(path), field=name, expected="an HDF5 dataset",
                                 found=f"<datasets: {', '.join(sorted(f.keys())) or 'none'}>")
        attr = f.attrs.get("distance")
        if attr is None:
            raise InputError(source=str(path), field="distance", expected="a file attribute "
                             "(euclidean, angular or dot)", found="<missing>")
        metric = parse_metric(attr.decode() if isinstance(attr, bytes) else str(attr),
                              source=str(path), field="distance")
        train = np.asarray(f["train"][:])
        test = np.asarray(f["test"][:])
        neighbors = np.asarray(f["neighbors"][:]) if "neighbors" in f else None
        distances = np.asarray(f["distances"][:]) if "distances" in f else None
    _check_matrix(train, str(path), "train")
    _check_matrix(test, str(path), "test")
    if test.shape[1] != train.shape[1]:
        raise InputError(source=str(path), field="test", expected=f"dimension {train.shape[1]} "
                         "(as train)", found=test.shape[1])
    for name, arr in (("neighbors", neighbors), ("distances", distances)):
        if arr is not None and (arr.ndim != 2 or arr.shape[0] != test.shape[0]):
            raise InputError(source=str(path), field=name,
                             expected=f"a {test.shape[0]} × k matrix", found=arr.shape)
    return AnnDataset(train.astype(np.float32, copy=False), test.astype(np.float32, copy=False),
                      metric, None if neighbors is None else neighbors.astype(np.int64),
                      None if distances is None else distances.astype(np.float32))


def write_hdf5(path: str | Path, data: AnnDataset) -> None:
    """Write ``data`` in the ANN-Benchmarks layout (the file is replaced atomically)."""
    path = Path(path)
    h5py = _h5py(path)
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:  # type: ignore[attr-defined]
        f.attrs["distance"] = _TO_ATTR[data.metric]
        f.attrs["type"] = "dense"
        f.attrs["point_type"] = "float"
        f.attrs["dimension"] = int(data.train.shape[1])
        f.create_dataset("train", data=np.asarray(data.train, dtype=np.float32))
        f.create_dataset("test", data=np.asarray(data.test, dtype=np.float32))
        if data.neighbors is not None:
            f.create_dataset("neighbors", data=np.asarray(data.neighbors, dtype=np.int32))
        if data.distances is not None:
            f.create_dataset("distances", data=np.asarray(data.distances, dtype=np.float32))


def _check_matrix(arr: np.ndarray, source: str, field: str | None = None) -> None:
    """A non-empty 2-D matrix of finite numbers: what every engine and the truth assume (a NaN
    silently scores nothing, and strings fail deep inside a native library)."""
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InputError(source=source, field=field, expected="a non-empty 2-D matrix",
                         found=f"<shape {arr.shape}>")
    if arr.dtype.kind not in "fiub":
        raise InputError(source=source, field=field, expected="a matrix of numbers",
                         found=f"<dtype {arr.dtype}>")
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr).all(axis=1)  # one pass; memory-mapped files stream through
        if not finite.all():
            row = int(np.flatnonzero(~finite)[0])
            bad = arr[row][~np.isfinite(arr[row])][0]
            raise InputError(source=source, record=f"row {row}", field=field,
                             expected="finite numbers", found=f"<{bad}>")


def read_vectors(path: str | Path) -> np.ndarray:
    """The matrix stored in a ``.npy``, ``*vecs`` or ``*bin`` file (memory-mapped when possible)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise InputError(source=str(path), expected=f"a file ending in {', '.join(_FORMATS)}",
                         found=suffix or "<no suffix>")
    if not path.is_file():
        raise InputError(source=str(path), expected="an existing file", found="<missing>")
    dtype, layout = _FORMATS[suffix]
    size = path.stat().st_size
    if layout == "npy":
        try:
            arr = np.load(path, mmap_mode="r", allow_pickle=False)
        except (ValueError, EOFError, OSError) as exc:
            raise InputError(source=str(path), expected="a NumPy .npy array",
                             found=f"<{exc}>") from exc
    elif layout == "bin":
        if size < 8:
            raise InputError(source=str(path), field="header", expected="8 bytes (n, d as int32)",
                             found=f"<{size} bytes>")
        n, d = (int(v) for v in np.fromfile(path, dtype="<i4", count=2))
        width = np.dtype(dtype).itemsize
        if n < 0 or d <= 0 or size != 8 + n * d * width:
            raise InputError(source=str(path), field="header", expected=f"{8 + n * d * width} "
                             f"bytes for n={n}, d={d}", found=f"<{size} bytes>")
        arr = np.memmap(path, dtype=dtype, mode="r", offset=8, shape=(n, d))
    else:
        if size < 4:
            raise InputError(source=str(path), line=1, field="dimension",
                             expected="an int32 dimension", found=f"<{size} bytes>")
        d = int(np.fromfile(path, dtype="<i4", count=1)[0])
        width = np.dtype(dtype).itemsize
        row = 4 + d * width
        if d <= 0 or size % row:
            raise InputError(source=str(path), line=1, field="dimension", expected="a positive "
                             f"dimension dividing the file ({size} bytes)", found=d)
        raw = np.memmap(path, dtype="u1", mode="r").reshape(-1, row)
        dims = raw[:, :4].copy().view("<i4").ravel()
        bad = np.flatnonzero(dims != d)
        if bad.size:
            raise InputError(source=str(path), line=int(bad[0]) + 1, field="dimension",
                             expected=str(d), found=int(dims[bad[0]]))
        arr = raw[:, 4:].view(dtype)
    _check_matrix(arr, str(path))
    return np.asarray(arr)


def write_vectors(path: str | Path, arr: np.ndarray) -> None:
    """Write a 2-D matrix in the format the suffix names (cast to that format's element type)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in _FORMATS:
        raise InputError(source=str(path), expected=f"a file ending in {', '.join(_FORMATS)}",
                         found=suffix or "<no suffix>")
    arr = np.asarray(arr)
    if arr.ndim != 2:
        raise InputError(source=str(path), expected="a 2-D matrix", found=f"<shape {arr.shape}>")
    dtype, layout = _FORMATS[suffix]
    with atomic_path(path) as tmp, tmp.open("wb") as f:
        if layout == "npy":
            np.save(f, arr)
            return
        data = np.ascontiguousarray(arr, dtype=dtype)
        n, d = data.shape
        if layout == "bin":
            np.array([n, d], dtype="<i4").tofile(f)
            data.tofile(f)
        else:
            rows = np.empty((n, 4 + d * data.itemsize), dtype="u1")
            rows[:, :4] = np.full((n, 1), d, dtype="<i4").view("u1")
            rows[:, 4:] = data.view("u1").reshape(n, -1)
            rows.tofile(f)
