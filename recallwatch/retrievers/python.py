"""``python:MODULE:ATTR``: a retriever in the user's own code, found by duck typing.

ATTR names, in MODULE (imported from the working directory or the pipeline file's folder):

* a function ``f(query, k) -> [(chunk id, score), …]`` in rank order;
* an object with ``invoke(query)`` (a LangChain retriever: documents with ``metadata``);
* an object with ``retrieve(query)`` (a LlamaIndex retriever: nodes with a ``score``);
* an object with ``run(query=…, top_k=…)`` (a Haystack component: ``{"documents": […]}``);
* or a function or class taking no arguments that returns one of these (a factory).

A document's chunk id is read from its metadata field ``id_field`` (default ``id``), its score
from its own score or the metadata field ``score_field`` (default ``score``); a document without a
score gets ``1 / rank``, so its list's order is kept. No framework is imported by recallwatch.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers.base import Hit, check_hits

__all__ = ["PythonRetriever", "load_attribute", "open_python"]

_OPTIONS = {"id_field", "score_field"}


def load_attribute(spec: str, *, base_dir: Path, what: str) -> Any:
    """The object ``python:MODULE:ATTR`` names; MODULE is imported from the working directory,
    then ``base_dir``. A missing module or attribute is a UsageError naming both."""
    _, _, rest = spec.partition(":")
    module_name, sep, attr = rest.rpartition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{what}: {spec!r} is not python:MODULE:ATTR (e.g. "
                         "python:my_search:retriever)")
    added = [d for d in (str(Path.cwd()), str(base_dir)) if d not in sys.path]
    sys.path[:0] = added
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"{what}: cannot import module {module_name!r} of {spec!r} from the "
                         f"working directory {Path.cwd()} or {base_dir}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing
        raise RetrieverError(f"{what}: importing {module_name!r} raised "
                             f"{type(exc).__name__}: {exc}") from None
    finally:
        for d in added:
            if d in sys.path:
                sys.path.remove(d)
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            public = sorted(n for n in dir(module) if not n.startswith("_"))
            raise UsageError(f"{what}: module {module_name!r} has no attribute {attr!r}; it "
                             f"defines: {', '.join(public[:20]) or '<nothing public>'}")
        obj = getattr(obj, part)
    return obj


def _kind(obj: Any) -> str | None:
    for method in ("invoke", "retrieve", "run"):
        if callable(getattr(obj, method, None)) and not inspect.isclass(obj):
            return method
    if callable(obj) and not inspect.isclass(obj) and _positional(obj) >= 2:
        return "call"
    return None


def _positional(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


@dataclass
class PythonRetriever:
    target: Any
    spec: str
    name: str = "python"
    id_field: str = "id"
    score_field: str = "score"
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        kind = _kind(self.target)
        if kind is None:
            raise UsageError(
                f"retriever {self.name!r}: {self.spec} is a {type(self.target).__name__}, which "
                "is none of: a function f(query, k), an object with invoke (LangChain), "
                "retrieve (LlamaIndex) or run (Haystack), or a factory returning one")
        self.kind = kind

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self._one(q, k) for q in queries]

    def _one(self, query: str, k: int) -> list[Hit]:
        where = f"retriever {self.name!r} ({self.spec})"
        try:
            if self.kind == "call":
                raw: Any = self.target(query, k)
            elif self.kind == "invoke":
                raw = self.target.invoke(query)
            elif self.kind == "retrieve":
                raw = self.target.retrieve(query)
            else:
                raw = self.target.run(query=query, top_k=k)
        except RetrieverError:
            raise
        except Exception as exc:
            raise RetrieverError(f"{where} raised {type(exc).__name__} on query {query[:60]!r}: "
                                 f"{exc}") from None
        if self.kind != "call":
            raw = self._documents(raw, where, query)
        return check_hits(raw, where=where, query=query, k=k)

    def _documents(self, raw: Any, where: str, query: str) -> list[tuple[Any, Any]]:
        if self.kind == "run":
            if not isinstance(raw, Mapping) or "documents" not in raw:
                raise RetrieverError(f"{where} answered query {query[:60]!r} with "
                                     f"{type(raw).__name__}: expected {{'documents': [...]}}")
            raw = raw["documents"]
        if isinstance(raw, (str, bytes)) or not isinstance(raw, Sequence):
            raise RetrieverError(f"{where} answered query {query[:60]!r} with "
                                 f"{type(raw).__name__}: expected a list of documents")
        out = []
        for rank, doc in enumerate(raw, 1):
            node = getattr(doc, "node", None)  # LlamaIndex: NodeWithScore(node, score)
            meta = getattr(node if node is not None else doc, "metadata", None)
            if meta is None:
                meta = getattr(doc, "meta", None)  # Haystack
            if not isinstance(meta, Mapping) or self.id_field not in meta:
                keys = ", ".join(sorted(meta)) if isinstance(meta, Mapping) else "no metadata"
                raise RetrieverError(
                    f"{where}: document {rank} for query {query[:60]!r} has no metadata field "
                    f"{self.id_field!r} (its metadata: {keys or 'empty'}); store the chunk id "
                    "there, or name the field that holds it with id_field")
            score = getattr(doc, "score", None)
            if score is None:
                score = meta.get(self.score_field, 1.0 / rank)
            out.append((meta[self.id_field], score))
        return out

    def describe(self) -> dict[str, Any]:
        return {"kind": "python", "spec": self.spec, "interface": self.kind,
                "id_field": self.id_field}


def open_python(spec: str, *, name: str, base_dir: Path, embedder: str | None,
                options: dict[str, Any]) -> PythonRetriever:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise UsageError(f"retriever {name!r}: unknown option(s) {', '.join(unknown)}; "
                         f"valid: {', '.join(sorted(_OPTIONS))}")
    what = f"retriever {name!r}"
    target = load_attribute(spec, base_dir=base_dir, what=what)
    if _kind(target) is None and callable(target) and _positional(target) == 0:
        try:  # a factory (a class or a function without arguments)
            target = target()
        except Exception as exc:
            raise RetrieverError(f"{what}: calling {spec} to build the retriever raised "
                                 f"{type(exc).__name__}: {exc}") from None
    return PythonRetriever(target, spec, name, str(options.get("id_field", "id")),
                           str(options.get("score_field", "score")))
