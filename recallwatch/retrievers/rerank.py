"""Reranking: a second, slower model re-scores each query's candidates from the first stage.

A reranker is a function ``f(query, [(chunk id, text), …]) -> [score, …]`` in the user's code
(``python: MODULE:ATTR``), or a sentence-transformers cross-encoder loaded from a local folder
(``cross_encoder: PATH``): a model that reads the query and the chunk together and says how well
they match. torch is imported only when a cross-encoder is loaded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from recallwatch._usercode import UserCode
from recallwatch.errors import NotInstalledError, RetrieverError, UsageError
from recallwatch.retrievers.base import Hit
from recallwatch.vectors import ties_as_measured

__all__ = ["CallableReranker", "CrossEncoderReranker", "Reranker", "rerank_lists"]


class Reranker(Protocol):
    name: str

    def score(self, query: str, docs: Sequence[tuple[str, str]]) -> list[float]:
        """One score per (chunk id, text), higher = better."""
        ...

    def describe(self) -> dict[str, Any]: ...


@dataclass
class CallableReranker:
    fn: Callable[[str, list[tuple[str, str]]], Any]
    spec: str
    name: str = "reranker"
    guard: UserCode | None = None  # None: guarded without a timeout

    def __post_init__(self) -> None:
        if self.guard is None:
            self.guard = UserCode(f"reranker {self.spec}", "its scores")

    def score(self, query: str, docs: Sequence[tuple[str, str]]) -> list[float]:
        assert self.guard is not None  # set in __post_init__
        raw = self.guard.call(self.fn, query, list(docs), during=f"on query {query[:60]!r}")
        return _scores(raw, len(docs), self.spec, query)

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "spec": self.spec}

    def close(self) -> None:
        if self.guard is not None:
            self.guard.close()


@dataclass
class CrossEncoderReranker:
    path: Path
    batch_size: int = 32
    name: str = "cross-encoder"
    _model: Any = field(default=None, init=False)

    def __post_init__(self) -> None:
        if not self.path.is_dir():
            raise UsageError(f"rerank: cross_encoder {str(self.path)!r} is not a folder: expected "
                             "a sentence-transformers CrossEncoder saved with save()")
        try:
            from sentence_transformers import CrossEncoder
        except ModuleNotFoundError:
            raise NotInstalledError("sentence-transformers (the cross-encoder reranker)",
                                    "st") from None
        try:
            self._model = CrossEncoder(str(self.path), device="cpu")
        except Exception as exc:
            raise UsageError(f"rerank: cannot load the cross-encoder in {self.path}: "
                             f"{type(exc).__name__}: {exc}") from None

    def score(self, query: str, docs: Sequence[tuple[str, str]]) -> list[float]:
        if not docs:
            return []
        raw = self._model.predict([(query, text) for _, text in docs],
                                  batch_size=self.batch_size, show_progress_bar=False)
        return _scores([float(x) for x in raw], len(docs), str(self.path), query)

    def describe(self) -> dict[str, Any]:
        return {"kind": "cross-encoder", "path": str(self.path)}


def _scores(raw: Any, n: int, where: str, query: str) -> list[float]:
    try:
        values = [float(x) for x in raw]
    except (TypeError, ValueError):
        raise RetrieverError(f"reranker {where} answered query {query[:60]!r} with "
                             f"{type(raw).__name__}: expected a list of {n} numbers") from None
    if len(values) != n or not all(math.isfinite(v) for v in values):
        raise RetrieverError(f"reranker {where} answered query {query[:60]!r} with "
                             f"{len(values)} scores for {n} chunks (or a score that is not a "
                             "finite number): expected one finite score per chunk")
    return values


def rerank_lists(reranker: Reranker, queries: Sequence[str], candidates: Sequence[list[Hit]],
                 texts: dict[str, str]) -> list[list[Hit]]:
    """Each query's candidates re-scored by ``reranker`` and sorted, equal scores by id
    descending (as the measures rank them). ``texts`` holds every candidate's text."""
    out = []
    for query, hits in zip(queries, candidates):
        scores = reranker.score(query, [(cid, texts[cid]) for cid, _ in hits])
        out.append(ties_as_measured(sorted(zip((cid for cid, _ in hits), scores),
                                           key=lambda h: -h[1])))
    return out
