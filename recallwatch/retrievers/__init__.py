"""Retrievers: anything that answers a query with ranked chunk ids and scores, found by the
scheme of its spec through one registry.

* a store URI (``lancedb://…``, ``postgresql://…``, …): the store searched with the embedder that
  built it;
* ``bm25:CORPUS``: BM25 keyword search over a corpus file;
* ``python:MODULE:ATTR``: a function ``f(query, k)`` or a LangChain, LlamaIndex or Haystack
  retriever in the user's code;
* ``http://…`` / ``https://…``: a search service.

Importing this package imports nothing heavy; each kind is imported when first opened.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallwatch._redact import redact
from recallwatch._registry import Registry
from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit, Retriever, SupportsChunks, check_hits

__all__ = ["RETRIEVERS", "Hit", "Retriever", "SupportsChunks", "check_hits",
           "is_retriever_spec", "open_retriever", "scheme_of"]

# scheme -> "module:opener(spec, *, name, base_dir, embedder, options) -> Retriever"
RETRIEVERS: Registry[object] = Registry("retriever scheme")
RETRIEVERS.register("bm25", "recallwatch.retrievers.bm25:open_bm25", extra="bm25",
                    description="BM25 keyword search over a corpus file: bm25:CORPUS")
RETRIEVERS.register("python", "recallwatch.retrievers.python:open_python",
                    description="a function f(query, k) or a LangChain / LlamaIndex / Haystack "
                    "retriever in your code: python:MODULE:ATTR")
RETRIEVERS.register("http", "recallwatch.retrievers.http:open_http",
                    description="a search service: http://HOST/PATH")
RETRIEVERS.register("https", "recallwatch.retrievers.http:open_http",
                    description="a search service: https://HOST/PATH")


def scheme_of(spec: str) -> str:
    """The part of a spec before its first ``:`` (``bm25``, ``python``, ``lancedb``, …)."""
    head, sep, _ = spec.partition(":")
    return head.strip().lower() if sep else ""


def is_retriever_spec(spec: str) -> bool:
    """Whether ``spec`` names a retriever that is not a store (``bm25:``, ``python:``,
    ``http(s)://``): given where a store URI is, it is searched as a one-retriever pipeline."""
    return scheme_of(spec) in RETRIEVERS


def open_retriever(spec: str, *, name: str | None = None, base_dir: Path | None = None,
                   embedder: str | None = None,
                   options: Mapping[str, Any] | None = None) -> Retriever:
    """The retriever a spec names. ``name`` labels it (default: its scheme); relative paths are
    read from ``base_dir`` (default: the working directory); ``embedder`` overrides the one a
    store recorded; ``options`` are the kind's settings (an HTTP request template, an
    ``id_field``, …)."""
    from recallwatch.stores import STORES

    scheme = scheme_of(spec)
    label = name or scheme or "retriever"
    where = Path.cwd() if base_dir is None else base_dir
    opts = dict(options or {})
    if scheme in RETRIEVERS:
        opener = RETRIEVERS.get(scheme)
        retriever: Retriever = opener(  # type: ignore[operator]
            spec, name=label, base_dir=where, embedder=embedder, options=opts)
        return retriever
    if scheme in STORES:
        if opts:
            raise UsageError(f"retriever {label!r}: a store takes no options, found "
                             f"{', '.join(sorted(opts))}")
        from recallwatch.retrievers.store import open_store_retriever

        return open_store_retriever(_store_uri(spec, where), name=label, embedder=embedder)
    valid = [*(f"{s}:" for s in RETRIEVERS.names()), *(f"{s}://" for s in STORES.names())]
    raise UsageError(f"retriever {label!r}: unknown kind {redact(spec)!r}; a retriever is one "
                     f"of: {', '.join(valid)}")


def _store_uri(uri: str, base_dir: Path) -> str:
    """A relative local path in a store URI (``lancedb://./kb``) read from ``base_dir``."""
    scheme, _, rest = uri.partition("://")
    if scheme in ("lancedb", "qdrant+local", "milvus", "chroma", "faiss", "hnswlib") \
            and rest.startswith("."):
        return f"{scheme}://{(base_dir / rest).as_posix()}"
    return uri
