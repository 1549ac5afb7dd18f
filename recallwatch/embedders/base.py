"""The Embedder protocol and the fingerprint that ties an index to the model that built it."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = [
    "FINGERPRINT_META_KEY",
    "PROBE_SENTENCES",
    "SPEC_META_KEY",
    "CountsTokens",
    "Embedder",
    "EmbeddingTokens",
    "Fingerprint",
    "IndexMeta",
    "ReportsTokens",
    "check_fingerprint",
    "fingerprint_of",
    "query_tokens",
    "reported_tokens",
]

# Store meta keys written at ingestion: the fingerprint of the embedder that built the index, and
# the spec (name?options, never a secret) that rebuilds that embedder for a gate run.
FINGERPRINT_META_KEY = "embedder_fingerprint"
SPEC_META_KEY = "embedder_spec"

# Fixed sentences whose vectors identify a model: same name and version but other weights,
# or another normalisation, give another hash.
PROBE_SENTENCES: tuple[str, ...] = (
    "How is income tax calculated for the self-employed?",
    "¿Cuántos días de asuntos propios corresponden según el convenio?",
    "Tabla de retenciones 2025",
    "The quick brown fox jumps over the lazy dog.",
)


@dataclass(frozen=True)
class Fingerprint:
    """Identity of an embedder: stored with every ingestion and every run."""

    name: str
    version: str
    dimension: int
    probe_hash: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fingerprint:
        return cls(str(data["name"]), str(data["version"]), int(data["dimension"]),
                   str(data["probe_hash"]))

    def short(self) -> str:
        return f"{self.name}@{self.version} d={self.dimension} #{self.probe_hash[:12]}"


@runtime_checkable
class Embedder(Protocol):
    """Turns text into L2-normalised float32 vectors, one row per text.

    Queries and documents are separate calls because some models (e5) prefix them differently.
    """

    name: str
    version: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EmbeddingTokens:
    """The tokens of texts an embedder embedded: ``tokens`` over the ``texts`` whose tokens are
    known, ``unknown`` texts whose tokens were not reported (never guessed), ``source`` where
    they were counted, and whether they are ``hosted`` (a provider bills them) or a local
    model's (its time is the cost, not its tokens)."""

    texts: int = 0
    tokens: int = 0
    unknown: int = 0
    source: str = ""
    hosted: bool = False

    def __add__(self, other: EmbeddingTokens) -> EmbeddingTokens:
        return EmbeddingTokens(self.texts + other.texts, self.tokens + other.tokens,
                               self.unknown + other.unknown, other.source or self.source,
                               other.hosted)

    def __sub__(self, other: EmbeddingTokens) -> EmbeddingTokens:
        return EmbeddingTokens(self.texts - other.texts, self.tokens - other.tokens,
                               self.unknown - other.unknown, self.source, self.hosted)

    def to_dict(self) -> dict[str, Any]:
        return {"texts": self.texts, "tokens": self.tokens, "unknown": self.unknown,
                "from": self.source, "hosted": self.hosted}


@runtime_checkable
class CountsTokens(Protocol):
    """An embedder with its own tokenizer: it counts the tokens of texts (a local model)."""

    def count_tokens(self, texts: Sequence[str]) -> EmbeddingTokens: ...


@runtime_checkable
class ReportsTokens(Protocol):
    """An embedder told its tokens by its endpoint (``usage``): the queries' so far."""

    def query_tokens_reported(self) -> EmbeddingTokens: ...


def reported_tokens(embedder: object) -> EmbeddingTokens | None:
    """What an embedder that is told its tokens (an endpoint's ``usage``) has counted so far
    for queries, cumulative; None for one that is not told."""
    return embedder.query_tokens_reported() if isinstance(embedder, ReportsTokens) else None


def query_tokens(embedder: object, texts: Sequence[str],
                 before: EmbeddingTokens | None) -> EmbeddingTokens | None:
    """The tokens of ``texts``, just embedded as queries: counted by the embedder's own
    tokenizer when it has one, else the tokens its endpoint reported since ``before``
    (:func:`reported_tokens`); None when neither is known."""
    if isinstance(embedder, CountsTokens):
        return embedder.count_tokens(texts)
    after = reported_tokens(embedder)
    if after is None or before is None:
        return None
    return after - before


class IndexMeta(Protocol):
    """What choosing an embedder needs from an index: its (redacted) URI and the metadata the
    ingestion recorded. Every :class:`~recallwatch.stores.base.VectorStore` is one; declared
    here so that the embedders do not depend on the stores."""

    @property
    def uri(self) -> str: ...

    def get_meta(self, key: str) -> Any: ...


def fingerprint_of(embedder: Embedder) -> Fingerprint:
    """Name, version, dimension and a hash of the probe sentences' vectors (rounded to 1e-4,
    so BLAS thread counts do not change it)."""
    vectors = np.asarray(embedder.embed_queries(list(PROBE_SENTENCES)), dtype=np.float32)
    rounded = np.round(vectors.astype(np.float64), 4) + 0.0  # +0.0 folds -0.0 into 0.0
    digest = hashlib.sha256(rounded.tobytes()).hexdigest()
    return Fingerprint(embedder.name, embedder.version, int(embedder.dimension), digest)


def check_fingerprint(built_with: Fingerprint | None, querying: Fingerprint, *, index: str) -> None:
    """Raise EmbedderMismatchError naming both when ``querying`` is not the embedder that built
    ``index``. An index with no recorded fingerprint is accepted (built by another tool)."""
    from recallwatch.errors import EmbedderMismatchError

    if built_with is None or built_with == querying:
        return
    raise EmbedderMismatchError(
        f"the index at {index} was built with {built_with.short()}, but it would be used with "
        f"{querying.short()}: use the embedder that built it, or re-ingest into a new store"
    )
