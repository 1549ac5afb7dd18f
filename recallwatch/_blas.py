"""How many threads numpy's BLAS may use, for a block of code.

OpenBLAS starts one thread per core and, between calls, keeps them spinning. On a machine whose
cores are busy with other work, the small matrix products of an embedding model or of exact
rescoring then wait for descheduled spinning threads: measured on a shared 2-core machine, USE
embedded 50 chunks/s with 2 BLAS threads (30 CPU-seconds for 1,500 chunks) and 500 with one
(3 CPU-seconds), identical vectors. recallwatch runs such code with one thread and gets
parallelism from processes instead.

``threadpoolctl`` does this when it is installed (it is not a dependency of recallwatch, nor of
the USE package, whose ``threads`` option silently does nothing without it); otherwise numpy's
own OpenBLAS is found beside numpy and told directly. Where neither works, nothing is limited.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

__all__ = ["blas_threads"]


def blas_threads(n: int) -> AbstractContextManager[Any]:
    """A context in which numpy's BLAS uses at most ``n`` threads (restored after)."""
    controller = _threadpoolctl()
    if controller is not None:
        limit: AbstractContextManager[Any] = controller.limit(limits=n, user_api="blas")
        return limit
    openblas = _openblas()
    if openblas is None:
        return nullcontext()
    return _limited(openblas, n)


@contextmanager
def _limited(openblas: tuple[Any, Any], n: int) -> Iterator[None]:
    get, set_ = openblas
    previous = int(get())
    if previous == n:
        yield
        return
    set_(n)
    try:
        yield
    finally:
        set_(previous)


@functools.cache
def _threadpoolctl() -> Any:
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


_SYMBOLS = (  # (get, set) in the builds numpy ships and in plain OpenBLAS
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
    ("openblas_get_num_threads", "openblas_set_num_threads"),
)


@functools.cache
def _openblas() -> tuple[Any, Any] | None:
    """numpy's OpenBLAS (the copy in ``numpy.libs`` or ``numpy/.dylibs``): (get, set)."""
    import numpy

    root = Path(numpy.__file__).resolve().parent
    candidates = [*root.parent.glob("numpy.libs/*openblas*"), *root.glob(".dylibs/*openblas*")]
    for path in candidates:
        try:
            lib = ctypes.CDLL(str(path))  # already loaded by numpy: the same library
        except OSError:
            continue
        for get_name, set_name in _SYMBOLS:
            get, set_ = getattr(lib, get_name, None), getattr(lib, set_name, None)
            if get is not None and set_ is not None:
                get.restype = ctypes.c_int
                set_.argtypes = [ctypes.c_int]
                set_.restype = None
                return get, set_
    return None
