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

Every call into the code (importing MODULE, building it from a factory, each query) goes through
one user-code guard (:mod:`recallwatch._usercode`): what it prints goes to standard error,
``sys.exit`` is an input error, not the end of the run, and a call may take ``timeout`` seconds
(the option; :data:`DEFAULT_TIMEOUT` unless set). The same guard runs a ``python:`` reranker.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._usercode import UserCode, check_timeout
from recallwatch.errors import RetrieverError, UsageError
from recallwatch.retrievers.base import Hit, _q, check_hits

__all__ = ["DEFAULT_TIMEOUT", "PythonRetriever", "load_attribute", "open_python",
           "split_python_spec", "user_code"]

_OPTIONS = {"id_field", "score_field", "timeout"}
DEFAULT_TIMEOUT = 60.0  # seconds a call into the user's code may take (import, build, a query)


def split_python_spec(spec: str, what: str) -> tuple[str, str]:
    """``python:MODULE:ATTR`` as (MODULE, ATTR); another form is a UsageError."""
    _, _, rest = spec.partition(":")
    module_name, sep, attr = rest.rpartition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"{what}: {spec!r} is not python:MODULE:ATTR (e.g. "
                         "python:my_search:retriever)")
    return module_name, attr


def load_attribute(spec: str, *, base_dir: Path, what: str, guard: UserCode) -> Any:
    """The object ``python:MODULE:ATTR`` names; MODULE is imported (through ``guard``) from the
    working directory, then ``base_dir``. A missing module or attribute is a UsageError naming
    both."""
    module_name, attr = split_python_spec(spec, what)
    added = [d for d in (str(Path.cwd()), str(base_dir)) if d not in sys.path]
    sys.path[:0] = added
    try:
        module = guard.call(_import, module_name, spec, base_dir, what,
                            during=f"while importing module {module_name!r}")
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


def _import(module_name: str, spec: str, base_dir: Path, what: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as exc:
        also = "" if base_dir.resolve() == Path.cwd().resolve() else f" or {base_dir}"
        raise UsageError(f"{what}: cannot import module {module_name!r} of {spec!r} from the "
                         f"working directory {Path.cwd()}{also}: {exc}") from None


def user_code(what: str, returns: str, timeout: float, setting: str, *,
              where: str = "in the pipeline file") -> UserCode:
    """The guard for a piece of the user's code (see :mod:`recallwatch._usercode`), whose
    timeout ``setting`` (a pipeline file's key, or ``where`` else, as the message shows it) can
    be raised."""
    return UserCode(what, returns, timeout,
                    f"If it needs longer, raise its timeout (seconds; {DEFAULT_TIMEOUT:g} unless "
                    f"set) {where}: {setting}")


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
    guard: UserCode | None = None  # None: a guard with the default timeout
    kind: str = field(init=False)

    def __post_init__(self) -> None:
        kind = _kind(self.target)
        if kind is None:
            raise UsageError(
                f"retriever {self.name!r}: {self.spec} is a {type(self.target).__name__}, which "
                "is none of: a function f(query, k), an object with invoke (LangChain), "
                "retrieve (LlamaIndex) or run (Haystack), or a factory returning one")
        self.kind = kind
        if self.guard is None:
            self.guard = _guard(self.name, self.spec, DEFAULT_TIMEOUT)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        return [self._one(q, k) for q in queries]

    def _one(self, query: str, k: int) -> list[Hit]:
        assert self.guard is not None  # set in __post_init__
        raw = self.guard.call(self._ask, query, k, during=f"on query {_q(query)}")
        where = f"retriever {self.name!r} ({self.spec})"
        if self.kind != "call":
            raw = self._documents(raw, where, query)
        return check_hits(raw, where=where, query=query, k=k)

    def _ask(self, query: str, k: int) -> Any:
        if self.kind == "call":
            return self.target(query, k)
        if self.kind == "invoke":
            return self.target.invoke(query)
        if self.kind == "retrieve":
            return self.target.retrieve(query)
        return self.target.run(query=query, top_k=k)

    def close(self) -> None:
        if self.guard is not None:
            self.guard.close()

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
    timeout = (DEFAULT_TIMEOUT if "timeout" not in options else
               check_timeout(options["timeout"], field=f"retrievers.{name}.timeout"))
    guard = _guard(name, spec, timeout)
    target = load_attribute(spec, base_dir=base_dir, what=f"retriever {name!r}", guard=guard)
    if _kind(target) is None and callable(target) and _positional(target) == 0:
        # a factory (a class or a function without arguments)
        target = guard.call(target, during=f"while building the retriever ({spec}())")
    return PythonRetriever(target, spec, name, str(options.get("id_field", "id")),
                           str(options.get("score_field", "score")), guard)


def _guard(name: str, spec: str, timeout: float) -> UserCode:
    return user_code(f"retriever {name!r} ({spec})", "its results", timeout,
                     f"retrievers: {{{name}: {{spec: {spec}, timeout: SECONDS}}}}")
