"""``callable``: wrap a Python function ``texts -> vectors`` as an embedder.

For models recallwatch does not ship an adapter for, and for tests. The dimension is read from
one call on a probe text when not given. Every call goes through the user-code guard
(:mod:`recallwatch._usercode`): what the function prints goes to standard error, ``sys.exit()``
in it is an error, not the end of the program, and an exception it raises is an
:class:`~recallwatch.errors.EmbedderError` naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from recallwatch._usercode import UserCode
from recallwatch.embedders._batching import BatchedEmbedder, Role
from recallwatch.errors import EmbedderError

__all__ = ["CallableEmbedder", "EmbedFn"]

EmbedFn = Callable[[Sequence[str]], "np.ndarray | Sequence[Sequence[float]]"]


class CallableEmbedder(BatchedEmbedder):
    def __init__(
        self, fn: EmbedFn, *, query_fn: EmbedFn | None = None, name: str | None = None,
        version: str = "0", dimension: int | None = None, batch_size: int = 64,
        progress: bool = False,
    ) -> None:
        super().__init__(batch_size=batch_size, progress=progress)
        self._fn = fn
        self._query_fn = query_fn or fn
        qualname = getattr(fn, "__qualname__", type(fn).__name__)
        self.name = name or f"callable:{getattr(fn, '__module__', '?')}.{qualname}"
        self.version = version
        self._guard = UserCode(self.name, "its vectors", error=EmbedderError)
        if dimension is None:
            probe = np.asarray(self._guard.call(fn, ["dimension probe"],
                                                during="on the dimension probe"))
            if probe.ndim != 2 or probe.shape[0] != 1:
                raise EmbedderError(
                    f"{self.name} returned shape {probe.shape} for 1 text, expected (1, d)"
                )
            dimension = int(probe.shape[1])
        self.dimension = dimension

    def _embed_batch(self, texts: list[str], role: Role) -> np.ndarray:
        fn = self._query_fn if role == "query" else self._fn
        return np.asarray(self._guard.call(fn, texts, during=f"embedding {len(texts)} "
                                           f"{role} text(s)"), dtype=np.float32)
