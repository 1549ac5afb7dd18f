"""Building a variant once: its corpus (re-chunked, with its corpus variant files) and, for dense
retrieval, its LanceDB table embedded with the variant's model. Both are cached under
``OUT/cache/`` by the hash of what they are made of, so a rerun of a plan builds only what
changed and two variants that share a corpus or an index share the build.

A build is complete only when its ``done.json`` is written, last and atomically: a build that was
interrupted is built again, never read half-made.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch._hashing import canonical_hash
from recallwatch.experiment.plan import Plan, VariantSpec
from recallwatch.records import Chunk

__all__ = ["Build", "build_keys", "build_variant", "read_chunks"]

_DONE = "done.json"


@dataclass(frozen=True)
class Build:
    """Where a built variant lives and what building it cost."""

    corpus_key: str
    corpus_file: Path  # the variant's chunks, as a corpus file (JSONL)
    index_key: str | None  # None: no dense retrieval
    store_uri: str | None  # lancedb://… with the variant's search settings
    built: tuple[str, ...]  # what this call built ("corpus", "index"); the rest were cache hits
    ingest_seconds: float | None  # of the index build, whenever it was built
    store_bytes: int | None  # the LanceDB table on disk
    chunks: int

    def to_dict(self) -> dict[str, Any]:
        return {"corpus_key": self.corpus_key[:12],
                "index_key": None if self.index_key is None else self.index_key[:12],
                "built": list(self.built), "chunks": self.chunks}


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def build_keys(plan: Plan, variant: VariantSpec) -> tuple[str, str | None]:
    """The content hashes of the variant's corpus and (dense) index: the files' bytes, the
    chunking, the embedder and the index build settings."""
    corpus_key = canonical_hash({
        "files": [_file_hash(p) for p in (*plan.corpus, *variant.corpus)],
        "chunking": None if variant.chunking is None else variant.chunking.describe(),
    })
    if not variant.dense:
        return corpus_key, None
    return corpus_key, canonical_hash({"corpus": corpus_key, "embedder": variant.embedder,
                                       "index": variant.build_index()})


def read_chunks(plan: Plan, variant: VariantSpec) -> list[Chunk]:
    """The variant's chunks: the plan's corpus files, then its corpus variant files (a later
    chunk replaces an earlier one with the same id), re-chunked if it says so."""
    from recallwatch.formats.corpus import read_corpus
    from recallwatch.ops.chunking import rechunk

    by_id: dict[str, Chunk] = {}
    for path in (*plan.corpus, *variant.corpus):
        for chunk in read_corpus(path, on_error="raise").chunks:
            by_id[chunk.id] = chunk
    chunks = list(by_id.values())
    return chunks if variant.chunking is None else rechunk(chunks, variant.chunking)


def build_variant(plan: Plan, variant: VariantSpec, cache: Path) -> Build:
    """Build (or find in ``cache``) the variant's corpus and index."""
    from recallwatch.formats.corpus import write_corpus

    corpus_key, index_key = build_keys(plan, variant)
    built: list[str] = []
    corpus_dir = cache / f"corpus-{corpus_key[:16]}"
    corpus_file = corpus_dir / "chunks.jsonl"
    if not (corpus_dir / _DONE).is_file():
        chunks = read_chunks(plan, variant)
        _fresh(corpus_dir)
        write_corpus(chunks, corpus_file)
        _done(corpus_dir, {"key": corpus_key, "chunks": len(chunks)})
        built.append("corpus")
    n_chunks = int(json.loads((corpus_dir / _DONE).read_text(encoding="utf-8"))["chunks"])
    if index_key is None:
        return Build(corpus_key, corpus_file, None, None, tuple(built), None, None, n_chunks)
    index_dir = cache / f"index-{index_key[:16]}"
    if not (index_dir / _DONE).is_file():
        seconds = _ingest(corpus_file, index_dir, variant)
        _done(index_dir, {"key": index_key, "ingest_seconds": seconds})
        built.append("index")
    done = json.loads((index_dir / _DONE).read_text(encoding="utf-8"))
    params = "".join(f"&{k}={v}" for k, v in sorted(variant.index.items()))
    uri = f"lancedb://{(index_dir / 'db').as_posix()}?table=chunks{params}"
    size = sum(f.stat().st_size for f in (index_dir / "db").rglob("*") if f.is_file())
    return Build(corpus_key, corpus_file, index_key, uri, tuple(built),
                 float(done["ingest_seconds"]), size, n_chunks)


def _ingest(corpus_file: Path, index_dir: Path, variant: VariantSpec) -> float:
    from recallwatch.embedders import embedder_from_spec
    from recallwatch.ops.ingest import ingest
    from recallwatch.stores import open_store

    _fresh(index_dir)
    params = "".join(f"&{k}={v}" for k, v in sorted(variant.build_index().items()))
    start = time.perf_counter()
    store = open_store(f"lancedb://{(index_dir / 'db').as_posix()}?table=chunks{params}",
                       create=True)
    try:
        ingest(corpus_file, store, embedder_from_spec(variant.embedder),
               embedder_spec=variant.embedder, strict=True)
    finally:
        store.close()
    return time.perf_counter() - start


def _fresh(folder: Path) -> None:
    """An empty folder: what an interrupted build left there is thrown away."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)


def _done(folder: Path, record: dict[str, Any]) -> None:
    tmp = folder / f"{_DONE}.tmp"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(folder / _DONE)
