"""BM25 keyword search over a corpus with ``bm25s`` (Lucene's variant, k1 1.5, b 0.75): the
``bm25:CORPUS`` retriever, and the keyword system of a judging pool (``label pool --bm25``).

BM25 scores a chunk by the query words it contains, weighting rare words more and long chunks
less. No stop words and no stemming: the corpus may be in any language.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch.errors import NotInstalledError
from recallwatch.records import Chunk
from recallwatch.retrievers.base import Hit

__all__ = ["K1", "B", "BM25Index", "BM25Retriever"]

K1, B = 1.5, 0.75


def _bm25s() -> Any:
    try:
        import bm25s
    except ModuleNotFoundError:
        raise NotInstalledError("bm25s (BM25 keyword search)", "bm25") from None
    return bm25s


def _tokenize(texts: Sequence[str]) -> Any:
    return _bm25s().tokenize(list(texts), stopwords=None, show_progress=False)


class BM25Index:
    """The chunks' text indexed once; :meth:`search` answers any number of queries."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = list(chunks)
        self._index: Any = None
        if self.chunks:
            self._index = _bm25s().BM25(k1=K1, b=B)
            self._index.index(_tokenize([c.text for c in self.chunks]), show_progress=False)

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        """Each query's top ``k`` (fewer when fewer chunks share a word with it: a chunk scoring
        0 shares none, and is not a result, only the index's order)."""
        if self._index is None or not queries:
            return [[] for _ in queries]
        depth = min(k, len(self.chunks))
        docs, scores = self._index.retrieve(_tokenize(list(queries)), k=depth,
                                            show_progress=False, n_threads=1)
        return [[(self.chunks[i].id, float(s)) for i, s in zip(row, row_scores) if s > 0]
                for row, row_scores in zip(docs.tolist(), scores.tolist())]


@dataclass
class BM25Retriever:
    """``bm25:CORPUS``: BM25 over a corpus file (read once, indexed on the first search)."""

    corpus: Path
    name: str = "bm25"
    _by_id: dict[str, Chunk] = field(default_factory=dict, init=False)
    _index: BM25Index | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        from recallwatch.formats.corpus import read_corpus

        self._by_id = {c.id: c for c in read_corpus(self.corpus)}

    def search(self, queries: Sequence[str], k: int) -> list[list[Hit]]:
        if self._index is None:
            self._index = BM25Index(list(self._by_id.values()))
        return self._index.search(queries, k)

    def chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        return {c: self._by_id[c] for c in ids if c in self._by_id}

    def siblings(self, doc_ids: Sequence[str]) -> list[Chunk]:
        wanted = set(doc_ids)
        return [c for c in self._by_id.values() if c.doc_id in wanted]

    def describe(self) -> dict[str, Any]:
        return {"kind": "bm25", "corpus": str(self.corpus), "chunks": len(self._by_id),
                "k1": K1, "b": B}


def open_bm25(spec: str, *, name: str, base_dir: Path, embedder: str | None,
              options: dict[str, Any]) -> BM25Retriever:
    from recallwatch.errors import UsageError

    path = spec.partition(":")[2].strip()
    if not path:
        raise UsageError(f"retriever {name!r}: bm25 needs a corpus file: bm25:CORPUS")
    if options:
        raise UsageError(f"retriever {name!r}: bm25 takes no options, found "
                         f"{', '.join(sorted(options))}")
    return BM25Retriever(base_dir / path, name)
