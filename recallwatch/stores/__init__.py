"""Vector store adapters, found by URI scheme through one registry."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from recallwatch._redact import redact
from recallwatch._registry import Registry
from recallwatch.errors import UsageError

# URI parsing and credentials from the environment: shared with the PostgreSQL run history
from recallwatch.stores._credentials import Secret, resolve_secret
from recallwatch.stores._uri import StoreURI, parse_store_uri

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["STORES", "Secret", "StoreURI", "open_store", "parse_store_uri", "resolve_secret"]

# scheme -> "module:callable(uri, *, create) -> VectorStore"
STORES: Registry[object] = Registry("store scheme")
STORES.register("lancedb", "recallwatch.stores.lancedb.store:LanceStore.open",
                description="LanceDB on local disk (the embedded default): lancedb://PATH?table=NAME")
STORES.register("postgresql", "recallwatch.stores.pgvector:PgVectorStore", extra="pgvector",
                description="PostgreSQL + pgvector: postgresql://USER@HOST:PORT/DB?table=NAME")
STORES.register("qdrant", "recallwatch.stores.qdrant:QdrantStore", extra="qdrant",
                description="Qdrant server: qdrant://HOST:PORT/COLLECTION")
STORES.register("qdrant+local", "recallwatch.stores.qdrant:QdrantStore", extra="qdrant",
                description="Qdrant local mode: qdrant+local://PATH/COLLECTION")
STORES.register("milvus", "recallwatch.stores.milvus:MilvusStore", extra="milvus",
                description="Milvus Lite or server: milvus://PATH.db?collection=NAME")
STORES.register("chroma", "recallwatch.stores.chroma:ChromaStore", extra="chroma",
                description="Chroma persistent client: chroma://PATH?collection=NAME")
STORES.register("faiss", "recallwatch.stores.indexfile:IndexFileStore", extra="bench",
                description="faiss HNSW index files + Parquet sidecar: faiss://DIR")
STORES.register("hnswlib", "recallwatch.stores.indexfile:IndexFileStore", extra="bench",
                description="hnswlib index files + Parquet sidecar: hnswlib://DIR")


def open_store(uri: str, *, create: bool = False) -> VectorStore:
    """Open the store a URI names, e.g. ``lancedb://./kb?table=chunks``.

    Opening a store to read it never creates anything: a store or table that does not exist is a
    :class:`~recallwatch.errors.StoreError` listing the ones that do. ``create=True`` (what
    ``recallwatch ingest`` passes) opens a store that may not exist yet, for writing: it is
    created, empty, where the URI says."""
    try:
        scheme = urlsplit(uri).scheme
    except ValueError:  # a broken URI: parse_store_uri says what is wrong, password hidden
        scheme = parse_store_uri(uri).scheme
    if not scheme:
        raise UsageError(
            f"store URI {redact(uri)!r} has no scheme: expected e.g. lancedb://PATH?table=NAME; "
            f"known schemes: {', '.join(STORES.names())}"
        )
    parse_store_uri(uri)  # every adapter reads it so: a broken URI is refused before any opens
    opener = STORES.get(scheme)
    store: VectorStore = opener(uri, create=create)  # type: ignore[operator]
    return store
