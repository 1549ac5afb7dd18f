"""Building a variant once: its corpus (re-chunked, with its corpus variant files) and, for dense
retrieval, its LanceDB table embedded with the variant's model. Both are cached under
``OUT/cache/`` by the hash of what they are made of, so a rerun of a plan builds only what
changed and two variants that share a corpus or an index share the build.

A build is complete only when its ``done.json`` is written, last and atomically: a build that was
interrupted is built again, never read half-made. ``done.json`` records what the build made —
the chunks file's SHA-256 and size; the index's files, each with its SHA-256, and its table's
row count and version — and a build read from the cache is checked against it first. An entry
that does not match (a file changed, removed or added; a damaged record; a table LanceDB cannot
open) is built again, and the :class:`Build` says so in ``notes``; one that cannot be removed to
be rebuilt is an error that says to delete the cache.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recallwatch._hashing import canonical_hash
from recallwatch.errors import UsageError
from recallwatch.experiment.plan import Plan, VariantSpec
from recallwatch.records import Chunk

__all__ = ["FORMAT", "Build", "build_corpus", "build_index", "build_keys", "build_variant",
           "read_chunks"]

_DONE = "done.json"
_CHUNKS = "chunks.jsonl"
#: the layout of done.json; an entry recorded in another layout is built again
FORMAT = 2
_Record = dict[str, Any]


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
    # the cache entries that did not match their record and were built again, in words
    notes: tuple[str, ...] = ()
    corpus_sha256: str = ""  # of the chunks file

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
    corpus = build_corpus(plan, variant, cache)
    return corpus if not variant.dense else build_index(plan, variant, cache, corpus)


def build_corpus(plan: Plan, variant: VariantSpec, cache: Path) -> Build:
    """The variant's chunks as a corpus file: from the cache when its record matches it."""
    from recallwatch.formats.corpus import write_corpus

    key = build_keys(plan, variant)[0]
    folder = cache / f"corpus-{key[:16]}"
    record, problem = _cached(folder, lambda r: _corpus_problem(folder, key, r))
    built: tuple[str, ...] = ()
    if record is None:
        chunks = read_chunks(plan, variant)
        _fresh(folder, cache)
        write_corpus(chunks, folder / _CHUNKS)
        record = {"format": FORMAT, "key": key, "chunks": len(chunks),
                  "bytes": (folder / _CHUNKS).stat().st_size,
                  "sha256": _file_hash(folder / _CHUNKS)}
        _done(folder, record)
        built = ("corpus",)
    return Build(key, folder / _CHUNKS, None, None, built, None, None, int(record["chunks"]),
                 _notes("chunks", variant, folder, problem), str(record["sha256"]))


def build_index(plan: Plan, variant: VariantSpec, cache: Path, corpus: Build,
                show_progress: bool = False) -> Build:
    """The variant's LanceDB table, built from ``corpus`` (its :func:`build_corpus`): from the
    cache when its record matches it."""
    index_key = build_keys(plan, variant)[1]
    if index_key is None:
        raise UsageError(f"variant {variant.name!r} has no dense retrieval: it has no index")
    folder = cache / f"index-{index_key[:16]}"
    search = "".join(f"&{k}={v}" for k, v in sorted(variant.index.items()))
    uri = f"lancedb://{(folder / 'db').as_posix()}?table=chunks{search}"
    record, problem = _cached(
        folder, lambda r: _index_problem(folder, index_key, corpus.corpus_sha256, uri, r))
    built = corpus.built
    if record is None:
        _fresh(folder, cache)
        record = {"key": index_key, "corpus_sha256": corpus.corpus_sha256,
                  **_ingest(corpus.corpus_file, folder, variant, show_progress)}
        _done(folder, record)
        built = (*built, "index")
    size = sum(f.stat().st_size for f in (folder / "db").rglob("*") if f.is_file())
    return Build(corpus.corpus_key, corpus.corpus_file, index_key, uri, built,
                 float(record["ingest_seconds"]), size, corpus.chunks,
                 (*corpus.notes, *_notes("index", variant, folder, problem)),
                 corpus.corpus_sha256)


def _ingest(corpus_file: Path, index_dir: Path, variant: VariantSpec,
            show_progress: bool) -> _Record:
    """Embed the chunks into a new table; what its record holds about it."""
    from recallwatch.embedders import embedder_from_spec
    from recallwatch.ops.ingest import IngestSettings, ingest
    from recallwatch.stores import open_store

    params = "".join(f"&{k}={v}" for k, v in sorted(variant.build_index().items()))
    start = time.perf_counter()
    store = open_store(f"lancedb://{(index_dir / 'db').as_posix()}?table=chunks{params}",
                       create=True)
    try:
        ingest(corpus_file, store, embedder_from_spec(variant.embedder),
               IngestSettings(strict=True, show_progress=show_progress),
               embedder_spec=variant.embedder)
        rows, version = store.count(), store.current_version()
    finally:
        store.close()
    return {"format": FORMAT, "ingest_seconds": time.perf_counter() - start, "rows": rows,
            "version": str(version), "files": _tree(index_dir / "db")}


# -- checking what the cache holds ---------------------------------------------------------------

def _cached(folder: Path, problem_of: Callable[[_Record], str | None]
            ) -> tuple[_Record | None, str | None]:
    """The entry's record when the entry matches it; else (None, why), or (None, None) when it
    was never completed (an interrupted build is built again without a word)."""
    done = folder / _DONE
    if not done.exists() and not done.is_symlink():
        return None, None
    try:
        record = json.loads(done.read_bytes())
    except (OSError, ValueError) as exc:
        return None, f"its record {_DONE} cannot be read ({exc})"
    if not isinstance(record, dict):
        return None, f"its record {_DONE} is not a JSON object"
    if record.get("format") != FORMAT:
        return None, (f"its record {_DONE} was written by an earlier recallwatch, without the "
                      "content hashes it is checked against now")
    return (None, problem) if (problem := problem_of(record)) else (record, None)


def _corpus_problem(folder: Path, key: str, record: _Record) -> str | None:
    if record.get("key") != key:
        return f"its record {_DONE} names another build"
    if not isinstance(record.get("chunks"), int) or not isinstance(record.get("sha256"), str) \
            or not isinstance(record.get("bytes"), int):
        return f"its record {_DONE} lacks the chunk count, size or SHA-256"
    path = folder / _CHUNKS
    if not path.is_file():
        return f"{_CHUNKS} is missing"
    size = path.stat().st_size
    found = _file_hash(path)
    if size != record["bytes"] or found != record["sha256"]:
        return (f"{_CHUNKS} changed since it was built ({record['bytes']:,} bytes with SHA-256 "
                f"{record['sha256'][:12]}… recorded, {size:,} bytes with {found[:12]}… found)")
    return None


def _index_problem(folder: Path, key: str, corpus_sha256: str, uri: str,
                   record: _Record) -> str | None:
    if record.get("key") != key:
        return f"its record {_DONE} names another build"
    files, rows = record.get("files"), record.get("rows")
    if not isinstance(files, dict) or not isinstance(rows, int) \
            or not isinstance(record.get("ingest_seconds"), (int, float)):
        return f"its record {_DONE} lacks the files, row count or ingest time"
    if record.get("corpus_sha256") != corpus_sha256:
        return "it was built from other chunks than the cached corpus holds"
    changed = _tree_changes(files, _tree(folder / "db"))
    if changed:
        return changed
    return _table_problem(uri, rows, str(record.get("version")))


def _table_problem(uri: str, rows: int, version: str) -> str | None:
    """Whether LanceDB opens the table and finds the rows and the version recorded."""
    from recallwatch.stores import open_store

    try:
        store = open_store(uri)
        try:
            found_rows, found_version = store.count(), str(store.current_version())
        finally:
            store.close()
    except Exception as exc:  # whatever the engine raises on damaged files
        return f"LanceDB cannot read its table ({type(exc).__name__}: {exc})"
    if (found_rows, found_version) != (rows, version):
        return (f"its table holds {found_rows:,} rows at version {found_version}, and "
                f"{rows:,} rows at version {version} were recorded")
    return None


def _tree(root: Path) -> dict[str, str]:
    """Each file under ``root`` (its path from there) and its SHA-256; lock files, which hold no
    data, left out."""
    if not root.is_dir():
        return {}
    return {f.relative_to(root).as_posix(): _file_hash(f) for f in sorted(root.rglob("*"))
            if f.is_file() and f.suffix != ".lock"}


def _tree_changes(recorded: dict[str, Any], found: dict[str, str]) -> str | None:
    parts = []
    for what, names in (("missing", [n for n in recorded if n not in found]),
                        ("changed", [n for n in recorded if n in found
                                     and found[n] != recorded[n]]),
                        ("not in the record", [n for n in found if n not in recorded])):
        if names:
            more = f" and {len(names) - 3} more" if len(names) > 3 else ""
            parts.append(f"{len(names)} file(s) {what} ({', '.join(names[:3])}{more})")
    return "; ".join(parts) or None


def _notes(what: str, variant: VariantSpec, folder: Path, problem: str | None
           ) -> tuple[str, ...]:
    if problem is None:
        return ()
    return (f"the cached {what} of {variant.name} ({folder}) did not match what was built: "
            f"{problem}; built again",)


# -- writing an entry -----------------------------------------------------------------------------

def _fresh(folder: Path, cache: Path) -> None:
    """An empty folder: what an interrupted or damaged build left there is thrown away."""
    try:
        if folder.is_symlink() or folder.is_file():
            folder.unlink()
        elif folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"cannot rebuild the cache entry {folder}: {exc.strerror or exc} "
                         f"(delete {cache} and run the experiment again)") from None


def _done(folder: Path, record: _Record) -> None:
    tmp = folder / f"{_DONE}.tmp"
    tmp.write_text(json.dumps(record), encoding="utf-8")
    tmp.replace(folder / _DONE)
