"""TREC-style pooling: the union of several systems' top results, minus what is already judged.

No single search system finds every relevant chunk, and a golden set built from one system's
results rewards that system. Pooling asks several systems (the vector store, BM25 keyword search
over the corpus, any external results files) for their top ``depth`` results per query, takes the
union, drops the pairs someone already judged (the golden set's expected chunks count as judged),
and writes what is left as a judging queue (:mod:`recallwatch.formats.judging`).

The queue is ordered by query, then by the best rank any system gave the chunk, then by how many
systems found it: a judge who stops half-way has judged what matters most.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch._redact import redact
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.judging import QueueItem
from recallwatch.records import Chunk
from recallwatch.retrievers import is_retriever_spec
from recallwatch.retrievers.base import Hit, SupportsChunks
from recallwatch.retrievers.pipeline import (
    Pipeline,
    PipelineRun,
    PipelineSpec,
    load_pipeline,
    single_retriever,
)

__all__ = ["MAX_DEPTH", "Pool", "PoolQuery", "bm25_rankings", "build_pool", "load_pool_queries",
           "store_rankings"]

MAX_DEPTH = 1000

Rankings = dict[str, list[str]]  # query id → chunk ids, best first


@dataclass(frozen=True)
class PoolQuery:
    id: str
    text: str
    expected: tuple[str, ...] = ()  # chunks the golden set already names: judged relevant


@dataclass
class Pool:
    """The judging queue and how it came to be."""

    items: list[QueueItem]
    depth: int
    systems: list[str]
    candidates: int  # distinct (query, chunk) pairs the systems returned
    already_judged: int  # of those, how many were judged before
    per_system: dict[str, int] = field(default_factory=dict)  # pairs each system contributed
    only_by: dict[str, int] = field(default_factory=dict)  # unjudged pairs one system alone found
    without_text: int = 0

    def summary(self) -> dict[str, Any]:
        return {"queue": len(self.items), "depth": self.depth, "systems": self.systems,
                "candidates": self.candidates, "already_judged": self.already_judged,
                "per_system": self.per_system, "only_by": self.only_by,
                "without_text": self.without_text,
                "queries": len({i.query_id for i in self.items})}


def load_pool_queries(path: str | os.PathLike[str]) -> list[PoolQuery]:
    """Queries to pool for: a golden set (its expected chunks count as judged) or a list of
    ``{id, text}`` records (YAML, JSON or JSONL) for queries nobody has labelled yet."""
    from recallwatch.formats.fields import line_of, shown, text_id
    from recallwatch.formats.structured import load_structured

    p = Path(path)
    data = load_structured(p)
    records = data.get("queries") if isinstance(data, dict) else data
    if isinstance(records, list) and any(isinstance(r, dict) and "expected" in r
                                         for r in records):
        from recallwatch.formats.golden import load_golden

        return [PoolQuery(q.id, q.text, tuple(str(e) for e in q.all_expected))
                for q in load_golden(p).queries]
    if not isinstance(records, list) or not records:
        raise InputError(source=p, expected="a golden set or a non-empty list of {id, text}",
                         found=shown(records))
    out, seen = [], set()
    for n, r in enumerate(records, 1):
        qid = text_id(r.get("id")) if isinstance(r, dict) else None
        text = text_id(r.get("text")) if isinstance(r, dict) else None
        if qid is None or text is None:
            raise InputError(source=p, line=line_of(r), record=qid or f"#{n}",
                             field="text" if qid else "id", expected="a non-empty string",
                             found=shown(r.get("text" if qid else "id")
                                         if isinstance(r, dict) else r))
        if qid in seen:
            raise InputError("duplicate query id", source=p, line=line_of(r), record=qid)
        seen.add(qid)
        out.append(PoolQuery(qid, text))
    return out


def bm25_rankings(queries: Sequence[PoolQuery], chunks: Sequence[Chunk], depth: int) -> Rankings:
    """BM25 (Lucene variant, k1 1.5, b 0.75) over the chunks' text: each query's top ``depth``."""
    from recallwatch.retrievers.bm25 import BM25Index

    hits = BM25Index(chunks).search([q.text for q in queries], depth)
    return {q.id: [cid for cid, _ in row] for q, row in zip(queries, hits)}


def store_rankings(queries: Sequence[PoolQuery], store: Any, depth: int,
                   embedder: Any) -> Rankings:
    """The store's top ``depth`` per query, searched as the gate searches it."""
    import numpy as np

    from recallwatch.stores.base import search_all

    vectors = np.asarray(embedder.embed_queries([q.text for q in queries]), dtype=np.float32)
    hits = search_all(store, vectors, depth)
    return {q.id: list(h.ids) for q, h in zip(queries, hits)}


def _shown_text(chunk: Chunk) -> str:
    # the raw content is what a reader sees; the representation field is what was embedded
    return chunk.content or chunk.text


def _meta(chunk: Chunk) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("doc_id", "domain", "label", "description"):
        value = getattr(chunk, key)
        if value:
            out[key] = value
    if chunk.kind != "text":
        out["kind"] = chunk.kind
    if chunk.facets:
        out["facets"] = dict(chunk.facets)
    if chunk.content and chunk.content != chunk.text:
        out["representation"] = chunk.text  # what the search engine saw
    return out


def build_pool(queries: Sequence[PoolQuery], systems: Mapping[str, Rankings], depth: int, *,
               judged: Iterable[tuple[str, str]] = (),
               chunks: Callable[[Sequence[str]], Mapping[str, Chunk]] | None = None) -> Pool:
    """The union of every system's top ``depth`` per query, minus ``judged`` pairs and the
    queries' expected chunks, as queue items (chunk text and metadata from ``chunks``)."""
    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"the pool depth must be between 1 and {MAX_DEPTH}, got {depth}")
    if not systems:
        raise UsageError("pooling needs at least one system: --store, --pipeline, --bm25 or "
                         "--results")
    done = set(judged) | {(q.id, c) for q in queries for c in q.expected}
    found: dict[tuple[str, str], dict[str, int]] = {}
    per_system = dict.fromkeys(systems, 0)
    for name, ranking in systems.items():
        for q in queries:
            for rank, cid in enumerate(ranking.get(q.id, [])[:depth], 1):
                found.setdefault((q.id, cid), {})[name] = rank
                per_system[name] += 1
    order = {q.id: i for i, q in enumerate(queries)}
    todo = sorted(((pair, by) for pair, by in found.items() if pair not in done),
                  key=lambda x: (order[x[0][0]], min(x[1].values()), -len(x[1]), x[0][1]))
    ids = list(dict.fromkeys(pair[1] for pair, _ in todo))
    known = dict(chunks(ids)) if chunks is not None and ids else {}
    text = {q.id: q.text for q in queries}
    items = []
    for (qid, cid), by in todo:
        c = known.get(cid)
        items.append(QueueItem(qid, text[qid], cid, _shown_text(c) if c else "",
                               _meta(c) if c else {}, dict(by)))
    only_by = dict.fromkeys(systems, 0)
    for item in items:
        if len(item.found_by) == 1:
            only_by[next(iter(item.found_by))] += 1
    return Pool(items, depth, list(systems), candidates=len(found),
                already_judged=sum(1 for pair in found if pair in done), per_system=per_system,
                only_by=only_by, without_text=sum(1 for i in items if not i.text))


def _system_name(path: Path, taken: Iterable[str]) -> str:
    name, n = path.stem, 1
    while name in set(taken):
        n += 1
        name = f"{path.stem}-{n}"
    return name


def pool_from_files(queries: str | os.PathLike[str], *, store: str | None = None,
                    results: Sequence[str | os.PathLike[str]] = (),
                    bm25: str | os.PathLike[str] | None = None, depth: int = 20,
                    judgments: Sequence[str | os.PathLike[str]] = (),
                    embedder: str | None = None,
                    pipeline: str | os.PathLike[str] | None = None,
                    ) -> tuple[Pool, dict[str, Any]]:
    """The pool as ``recallwatch label pool`` builds it, and its provenance (inputs hashed,
    settings): the store (``store``, searched with the embedder that built it; a retriever spec
    there is searched as the pipeline of that one retriever), BM25 over the ``bm25`` corpus, each
    results file, and each retriever of a ``pipeline`` file (and its fused list), minus the
    ``judgments`` files' pairs."""
    from recallwatch._hashing import canonical_hash
    from recallwatch.formats.judging import judged_pairs

    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"--depth must be between 1 and {MAX_DEPTH}, got {depth}")
    qs = load_pool_queries(queries)
    judged = judged_pairs(judgments)  # read every input before the slow searches
    systems: dict[str, Rankings] = {}
    sources: dict[str, dict[str, Any]] = {}
    corpus: dict[str, Chunk] = {}
    if bm25 is not None:
        from recallwatch.formats.corpus import read_corpus

        corpus = {c.id: c for c in read_corpus(Path(bm25))}
        systems["bm25"] = bm25_rankings(qs, list(corpus.values()), depth)
        sources["bm25"] = {"corpus": str(bm25), "chunks": len(corpus), "k1": 1.5, "b": 0.75}
    for path in results:
        from recallwatch.formats.results import load_results

        name = _system_name(Path(path), [*systems, "store"])
        systems[name] = {q: r.ids for q, r in load_results(Path(path)).items()}
        sources[name] = {"results": str(path)}
    opened = None
    piped: list[Pipeline] = []
    try:
        if pipeline is not None:
            spec = load_pipeline(Path(pipeline))
            run = _searched(piped, spec, Path(pipeline).resolve().parent, qs, depth, embedder)
            lists = {**run.per_retriever, **({"fused": run.fused} if spec.fuse else {})}
            for name, per_query in lists.items():
                label = _system_name(Path(name), [*systems, "store"])
                systems[label] = _ids(qs, per_query)
                sources[label] = {"pipeline": str(pipeline), "retriever": name}
        if store is not None and is_retriever_spec(store):
            # a retriever where a store URI is: searched as the pipeline of that one retriever
            run = _searched(piped, single_retriever(store), Path.cwd(), qs, depth, embedder)
            systems = {"store": _ids(qs, run.final), **systems}
            sources["store"] = {"retriever": redact(store)}
        elif store is not None:
            from recallwatch.embedders import embedder_for_store
            from recallwatch.stores import open_store

            opened = open_store(store)
            chosen = embedder_for_store(opened, embedder)
            systems = {"store": store_rankings(qs, opened, depth, chosen), **systems}
            sources["store"] = {"store": opened.uri, "version": opened.current_version(),
                                "embedder": chosen.name}

        def lookup(ids: Sequence[str]) -> dict[str, Chunk]:
            found = {i: corpus[i] for i in ids if i in corpus}
            if opened is not None:
                found.update(opened.get([i for i in ids if i not in found]))
            for r in (r for p in piped for r in p.retrievers.values()):
                if isinstance(r, SupportsChunks):
                    found.update(r.chunks([i for i in ids if i not in found]))
            return found

        pool = build_pool(qs, systems, depth, judged=judged, chunks=lookup)
    finally:
        if opened is not None:
            opened.close()
        for p in piped:
            p.close()
    for name, ranking in systems.items():
        sources[name]["hash"] = canonical_hash({q: r[:depth] for q, r in ranking.items()})
    provenance = {
        "queries": {"path": str(queries),
                    "hash": canonical_hash([[q.id, q.text, list(q.expected)] for q in qs])},
        "judgments": [str(j) for j in judgments], "depth": depth, "systems": sources,
        "pool": pool.summary(),
    }
    return pool, provenance


def _searched(opened: list[Pipeline], spec: PipelineSpec, base_dir: Path,
              qs: Sequence[PoolQuery], depth: int, embedder: str | None) -> PipelineRun:
    """The run of the pipeline ``spec`` over the queries, at ``depth``; the opened pipeline is
    added to ``opened``, for the caller to close."""
    opened.append(Pipeline.from_spec(spec, base_dir=base_dir, embedder=embedder))
    return opened[-1].search([q.text for q in qs], depth)


def _ids(qs: Sequence[PoolQuery], per_query: Sequence[Sequence[Hit]]) -> Rankings:
    return {q.id: [c for c, _ in hits] for q, hits in zip(qs, per_query)}


def write_pool(path: str | os.PathLike[str], pool: Pool, provenance: dict[str, Any]) -> Path:
    """Write the judging queue and its provenance sidecar (``QUEUE.provenance.json``), each whole.
    Returns the sidecar's path."""
    import json

    from recallwatch._files import write_atomic
    from recallwatch.formats.judging import write_queue
    from recallwatch.judgments.judgments import provenance_path

    write_queue(path, pool.items)
    sidecar = provenance_path(path)
    write_atomic(sidecar, json.dumps(provenance, indent=2, ensure_ascii=False) + "\n")
    return sidecar
