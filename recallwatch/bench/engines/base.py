"""What a benchmarked engine is: build on a matrix, set query parameters, search, report memory.

Engines see vectors already prepared by the harness (cosine is normalised and searched as inner
product), so each speaks only ``ip`` or ``l2``. Row positions in the base are the ids an engine
returns; ``-1`` pads a row with fewer than k answers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from recallwatch.errors import UsageError

__all__ = ["Engine", "Memory", "Param", "Space", "resolve_params"]

Space = Literal["ip", "l2"]


@dataclass(frozen=True)
class Param:
    """One build or query parameter an engine accepts."""

    name: str
    kind: type
    default: Any
    help: str = ""


@dataclass(frozen=True)
class Memory:
    """Index size in bytes and how it was obtained (e.g. ``faiss serialize_index``)."""

    bytes: int
    how: str


def resolve_params(
    engine: str, declared: Sequence[Param], given: Mapping[str, Any], stage: str
) -> dict[str, Any]:
    """``given`` checked against ``declared`` (names and types), defaults filled in."""
    known = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        valid = ", ".join(known) or "none"
        raise UsageError(f"engine {engine!r}: unknown {stage} parameter {unknown[0]!r}; "
                         f"valid: {valid}")
    out: dict[str, Any] = {}
    for p in declared:
        value = given.get(p.name, p.default)
        if value is None:
            out[p.name] = None
            continue
        ok = (isinstance(value, p.kind) and not (p.kind is int and isinstance(value, bool))) or (
            p.kind is float and isinstance(value, int) and not isinstance(value, bool))
        if not ok:
            raise UsageError(f"engine {engine!r}: {stage} parameter {p.name!r} expects "
                             f"{p.kind.__name__}, found {value!r}")
        out[p.name] = float(value) if p.kind is float else value
    return out


class Engine:
    """Base class of every engine; subclasses declare their parameters and fill in the hooks."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    build_params: ClassVar[tuple[Param, ...]] = ()
    query_params: ClassVar[tuple[Param, ...]] = ()
    # True for engines that reach a store adapter: the sweep adds the concurrent load test
    is_store: ClassVar[bool] = False

    def __init__(self, **params: Any) -> None:
        self.params = resolve_params(self.name, self.build_params, params, "build")
        self.query: dict[str, Any] = resolve_params(self.name, self.query_params, {}, "query")
        self.threads = 1

    def build(self, base: np.ndarray, space: Space, ids: Sequence[str] | None = None) -> None:
        """Index ``base`` (float32, C-contiguous). ``ids`` name the rows for store engines."""
        raise NotImplementedError

    def set_query_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        self.query = resolve_params(self.name, self.query_params, params, "query")
        self._apply_query()
        return dict(self.query)

    def _apply_query(self) -> None:
        """Push ``self.query`` into the library (most engines read it at search time instead)."""

    def set_threads(self, n: int) -> None:
        self.threads = n

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """(nq, k) int64 row positions, batched over ``self.threads`` threads."""
        raise NotImplementedError

    def search_one(self, query: np.ndarray, k: int) -> np.ndarray:
        """The answer to one query (a 1-D vector): the path timed one query at a time."""
        return np.asarray(self.search(query[None, :], k)[0])

    def memory(self) -> Memory | None:
        """Bytes the library reports or serialises for the index; None when it cannot say."""
        return None

    def close(self) -> None:
        """Release the index."""
