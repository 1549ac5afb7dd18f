"""What a benchmarked engine is: build on a matrix, set query parameters, search, report memory.

Engines see vectors already prepared by the harness (cosine is normalised and searched as inner
product), so each speaks only ``ip`` or ``l2``. Row positions in the base are the ids an engine
returns; ``-1`` pads a row with fewer than k answers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.formats.fields import number_text

__all__ = [
    "CANDIDATES",
    "CELLS",
    "DEGREE",
    "SEED",
    "Engine",
    "Memory",
    "Param",
    "Space",
    "param_problem",
    "resolve_params",
]

Space = Literal["ip", "l2"]


@dataclass(frozen=True)
class Param:
    """One build or query parameter an engine accepts, with the range its library survives.

    Numbers reach C++ code that aborts or crashes on some values (hnswlib ``M: 0`` segfaults,
    faiss ``nbits: 0`` divides by zero), so every number declares its bounds and every string
    its choices; the sweep reader checks them before any index is built.
    """

    name: str
    kind: type
    default: Any
    help: str = ""
    lo: float | None = None
    hi: float | None = None
    choices: tuple[str, ...] = ()
    # extra check on an accepted value: what was expected, or None when it is fine
    check: Callable[[Any], str | None] | None = None

    def expected(self) -> str:
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        kind = {int: "an integer", float: "a number", bool: "true or false",
                str: "a string"}.get(self.kind, self.kind.__name__)
        if self.lo is not None and self.hi is not None:
            return f"{kind} in [{number_text(self.lo)}, {number_text(self.hi)}]"
        return kind

    def problem(self, value: Any) -> str | None:
        """What was expected, if ``value`` is not acceptable; None when it is."""
        if value is None and self.default is None:  # optional, like the store engine's uri
            return None
        if isinstance(value, bool) and self.kind is not bool:
            return self.expected()
        numeric = self.kind is float and isinstance(value, int)
        if not (isinstance(value, self.kind) or numeric):
            return self.expected()
        if self.lo is not None and not self.lo <= value:  # NaN fails here
            return self.expected()
        if self.hi is not None and not value <= self.hi:
            return self.expected()
        if self.choices and value not in self.choices:
            return self.expected()
        return self.check(value) if self.check is not None else None


# Bounds shared by the engines, as (lo, hi): beyond them a library crashes, aborts or allocates
# without limit. Graph degree (HNSW M, usearch connectivity): below 2 a graph degenerates and
# hnswlib/faiss crash; candidate lists (ef, efSearch, expansion); IVF cells (nlist, nprobe);
# random seeds (hnswlib takes an unsigned 32-bit one).
DEGREE = (2, 1024)
CANDIDATES = (1, 100_000)
CELLS = (1, 1_000_000)
SEED = (0, 2**32 - 1)


@dataclass(frozen=True)
class Memory:
    """Index size in bytes and how it was obtained (e.g. ``faiss serialize_index``)."""

    bytes: int
    how: str


def param_problem(
    declared: Sequence[Param], given: Mapping[str, Any], *, open_param: Param | None = None
) -> tuple[str, str, Any] | None:
    """The first bad parameter in ``given`` as (name, expected, found), or None. An engine
    that passes names through to its library declares ``open_param`` for every value."""
    known = {p.name: p for p in declared}
    for name, value in given.items():
        param = known.get(name, open_param)
        if param is None:
            return name, f"one of {', '.join(known) or 'no parameters'}", "<unknown name>"
        expected = param.problem(value)
        if expected is not None:
            return name, expected, value
    return None


def resolve_params(
    engine: str, declared: Sequence[Param], given: Mapping[str, Any], stage: str
) -> dict[str, Any]:
    """``given`` checked against ``declared`` (names, types, ranges), defaults filled in."""
    known = {p.name: p for p in declared}
    unknown = sorted(set(given) - set(known))
    if unknown:
        valid = ", ".join(known) or "none"
        raise UsageError(f"engine {engine!r}: unknown {stage} parameter {unknown[0]!r}; "
                         f"valid: {valid}")
    bad = param_problem(declared, given)
    if bad is not None:
        name, expected, found = bad
        raise UsageError(f"engine {engine!r}: {stage} parameter {name!r} expects {expected}, "
                         f"found {found!r}")
    out: dict[str, Any] = {}
    for p in declared:
        value = given.get(p.name, p.default)
        out[p.name] = None if value is None else float(value) if p.kind is float else value
    return out


class Engine:
    """Base class of every engine; subclasses declare their parameters and fill in the hooks."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    build_params: ClassVar[tuple[Param, ...]] = ()
    query_params: ClassVar[tuple[Param, ...]] = ()
    # for engines that pass query parameter names through to their library (faiss factory)
    open_query_param: ClassVar[Param | None] = None
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
