"""Ingestion: a corpus file into a vector store, in batches, idempotent and resumable.

* **Idempotent.** Every chunk carries a content hash; a chunk whose hash the store already holds is
  neither re-embedded nor re-written. Re-running the same ingestion writes nothing.
* **Resumable.** Chunks are committed in groups (``commit_every``); each commit is atomic in the
  store. A run killed at any point leaves whole groups behind, and the next run skips exactly those
  (same ids, same hashes): no duplicate id, no lost chunk.
* **Reported.** The ingestion report (added, updated, unchanged, deleted, rejected with reasons,
  timings) is stored in the store's metadata and returned.
* **Indexed, verified.** When an ingestion leaves more than a fifth of the rows outside the ANN
  index, the index is rebuilt through the verified reindex (:mod:`recallwatch.ops.autoreindex`):
  checked against exact search on a sample of stored rows, switched in only when it reaches the
  floor, at most once per day. The report says what happened (``index_rebuild``).
* **Gated.** A version produced by an ingestion that rejected records, or by one that did not
  finish, is *not promotable* until resolved: :func:`promotion_blockers` says why, and the history
  layer's promote refuses while it says anything. :func:`resolve_block` records a written reason
  to promote anyway; re-ingesting a fixed corpus makes a new, clean version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import numpy as np

from recallwatch._durations import span
from recallwatch._progress import progress
from recallwatch._redact import redact
from recallwatch.embedders.base import (
    FINGERPRINT_META_KEY,
    SPEC_META_KEY,
    Embedder,
    Fingerprint,
    check_fingerprint,
    fingerprint_of,
)
from recallwatch.errors import InputError, Interrupted, UsageError
from recallwatch.formats.corpus import Corpus, Rejection
from recallwatch.formats.corpus_vectors import CorpusVectors
from recallwatch.formats.duplicates import Duplicates
from recallwatch.ops._ingest_read import FileCorpus, GivenCorpus, Groups
from recallwatch.stores.base import (
    SupportsContentHashes,
    SupportsIndexBuildTime,
    SupportsSeal,
    VectorStore,
    update_meta,
)

if TYPE_CHECKING:
    from recallwatch.history import History

__all__ = [
    "BLOCKS_META_KEY",
    "IN_PROGRESS_META_KEY",
    "REPORTS_META_KEY",
    "IngestKeywords",
    "IngestReport",
    "IngestSettings",
    "RebuildSettings",
    "ingest",
    "ingest_settings",
    "promotion_blockers",
    "resolve_block",
]

REPORTS_META_KEY = "ingestions"  # list of report dicts, oldest first (the last _KEEP_REPORTS)
IN_PROGRESS_META_KEY = "ingestion_in_progress"  # set while an ingestion writes; cleared at the end
BLOCKS_META_KEY = "promotion_blocks"  # version -> {"reason", "rejected", "at", "resolved"?}
_KEEP_REPORTS = 50
_KEEP_REJECTIONS = 1000  # per stored report; the count is always exact
_KEEP_DUPLICATES = 100  # groups and pairs listed per report; the counts are always exact


@dataclass(frozen=True)
class RebuildSettings:
    """What an index rebuild that an ingestion triggers must show to be switched in: recall@10
    ``floor`` against exact search on stored rows and, with ``max_recall_loss``, no loss against
    the live search beyond it (the interval of the difference); at most one per
    ``window_hours``."""

    floor: float = 0.95
    max_recall_loss: float | None = None
    window_hours: float = 24.0


@dataclass(frozen=True)
class IngestSettings:
    """How an ingestion writes: ``batch_size`` texts per embedder call, ``commit_every`` chunks
    per store write, ``prune`` (delete stored chunks the corpus lacks), ``strict`` (the first bad
    record stops it before anything is written), ``show_progress`` (a bar on the terminal) and
    the checks of the index rebuild it may trigger (:class:`RebuildSettings`)."""

    batch_size: int = 256
    commit_every: int = 4096
    prune: bool = False
    strict: bool = False
    show_progress: bool = False
    rebuild: RebuildSettings = field(default_factory=RebuildSettings)

    def check(self) -> None:
        if self.batch_size < 1 or self.commit_every < 1:
            raise UsageError(f"batch_size and commit_every must be at least 1, found "
                             f"{self.batch_size} and {self.commit_every}")


class IngestKeywords(TypedDict, total=False):
    """:class:`IngestSettings` as loose keywords of :func:`ingest` (its earlier form)."""

    batch_size: int
    commit_every: int
    prune: bool
    strict: bool
    show_progress: bool
    verify_floor: float
    verify_max_recall_loss: float | None
    rebuild_window_hours: float


def ingest_settings(settings: IngestSettings | None = None,
                    **keywords: Unpack[IngestKeywords]) -> IngestSettings:
    """``settings`` (default: :class:`IngestSettings`'s defaults) with each keyword given put in
    its place."""
    base = settings or IngestSettings()
    kw: dict[str, Any] = dict(keywords)
    rebuild = {field_: kw.pop(name) for name, field_ in (
        ("verify_floor", "floor"), ("verify_max_recall_loss", "max_recall_loss"),
        ("rebuild_window_hours", "window_hours")) if name in kw}
    return replace(base, **kw, rebuild=replace(base.rebuild, **rebuild))


@dataclass
class IngestReport:
    corpus: str
    store: str
    embedder: dict[str, Any]
    version_before: str
    version: str  # the store version this ingestion produced (or found, if nothing changed)
    read: int  # records in the corpus file
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    resumed: bool = False  # an earlier run of an ingestion was interrupted before this one
    started_at: str = ""
    finished_at: str = ""
    # read, embed, write, index_build (the first ANN index a write built, not in write), index
    # (the automatic index check and rebuild), total
    seconds: dict[str, float] = field(default_factory=dict)
    # the automatic index rebuild this ingestion triggered (AutoReindex.to_dict()), if any
    index_rebuild: dict[str, Any] | None = None
    # chunks of the corpus with identical or nearly identical text (Duplicates), if any
    duplicates: Duplicates | None = None

    @property
    def accepted(self) -> int:
        return len(self.added) + len(self.updated) + self.unchanged

    @property
    def todo(self) -> int:
        """Chunks to embed and write: added or updated."""
        return len(self.added) + len(self.updated)

    @property
    def promotable(self) -> bool:
        return not self.rejected

    def to_dict(self, *, max_rejections: int | None = None) -> dict[str, Any]:
        out = asdict(self)
        out["duplicates"] = (None if self.duplicates is None
                             else self.duplicates.to_dict(limit=_KEEP_DUPLICATES))
        rejected = [r.to_dict() for r in self.rejected]
        out["rejected"] = rejected if max_rejections is None else rejected[:max_rejections]
        out["counts"] = {
            "read": self.read, "accepted": self.accepted, "added": len(self.added),
            "updated": len(self.updated), "unchanged": self.unchanged,
            "deleted": len(self.deleted), "rejected": len(self.rejected),
            "duplicates": 0 if self.duplicates is None else self.duplicates.exact_chunks,
            "near_duplicate_pairs": 0 if self.duplicates is None else len(self.duplicates.near),
        }
        out["promotable"] = self.promotable
        return out

    def summary(self) -> str:
        """A few lines for a terminal."""
        lines = [
            f"Ingested {self.corpus} into {self.store} (version {self.version_before} -> "
            f"{self.version}) with {Fingerprint.from_dict(self.embedder).short()}",
            f"  read {self.read}: accepted {self.accepted} (added {len(self.added)}, updated "
            f"{len(self.updated)}, unchanged {self.unchanged}), rejected {len(self.rejected)}"
            + (f", deleted {len(self.deleted)}" if self.deleted else ""),
        ]
        if self.resumed:
            lines.append("  resumed after an interrupted ingestion")
        s = self.seconds
        if s:
            written = len(self.added) + len(self.updated)
            busy = s.get("embed", 0.0) + s.get("write", 0.0)
            rate = f"; {written / busy:.0f} chunks/s embedded and written" if busy > 0 else ""
            # total also covers opening the model and the store, and the fingerprint
            index = "".join(f", {what} {s[key]:.2f}s" for key, what in (
                ("index_build", "index build"), ("index", "index check and rebuild"))
                if s.get(key, 0) >= 0.005)
            lines.append(f"  time {s.get('total', 0):.2f}s (read {s.get('read', 0):.2f}s, embed "
                         f"{s.get('embed', 0):.2f}s, write {s.get('write', 0):.2f}s{index}{rate})")
        if self.index_rebuild is not None:
            lines.append(f"  {self.index_rebuild['summary']}")
        if self.duplicates is not None:
            lines += [f"  warning: {line}" for line in self.duplicates.lines()]
        for r in self.rejected[:20]:
            lines.append(f"  rejected: {r.reason}")
        if len(self.rejected) > 20:
            lines.append(f"  … and {len(self.rejected) - 20} more rejected records")
        if self.rejected:
            lines.append(f"  version {self.version} is NOT promotable until the rejected records "
                         "are fixed and re-ingested (or the block is resolved in writing)")
        return "\n".join(lines)


def ingest(
    corpus: str | Path | Corpus,
    store: VectorStore,
    embedder: Embedder,
    settings: IngestSettings | None = None,
    *,
    embedder_spec: str | None = None,
    history: History | Callable[[], History | None] | None = None,
    embed_batches: Callable[[Iterable[list[str]]], Iterable[np.ndarray]] | None = None,
    vectors: Mapping[str, np.ndarray] | None = None,
    precomputed: bool = False,
    **keywords: Unpack[IngestKeywords],
) -> IngestReport:
    """Embed and write the chunks of ``corpus`` that the store does not hold as they are.

    ``settings`` (:class:`IngestSettings`) holds how it writes and the rebuild's checks; each
    may also be given as a keyword (``batch_size``, ``commit_every``, ``prune``, ``strict``,
    ``show_progress``, ``verify_floor``, ``verify_max_recall_loss``, ``rebuild_window_hours``),
    which replaces the one in ``settings``.
    ``batch_size`` texts go to the embedder per call; ``commit_every`` chunks per store write
    (what a kill can cost in re-embedding). ``prune`` deletes stored chunks absent from the corpus
    (a full sync); without it ingestion only adds and updates, so a fix file can be ingested alone.
    ``embedder_spec`` (e.g. ``"e5-small"``) is recorded so a gate can rebuild the same embedder.
    ``strict`` makes the first bad record an InputError before anything is written; otherwise
    bad records are rejected, listed in the report, and block the new version's promotion. A
    corpus with no valid record at all is an InputError either way.

    A corpus file is read twice as a stream, never whole: once to validate it and decide what to
    write, once to write it, a commit group at a time; memory follows ``commit_every``, plus a
    few hundred bytes per record (its id, content hash and line). A file that changes between
    the two reads is an InputError (the groups already committed are kept).

    An index rebuild this ingestion triggers must reach recall@10 ``verify_floor`` against exact
    search on stored rows to be switched in; with ``verify_max_recall_loss``, it must also not be
    lower than the live search's by more than that (the interval of the difference). By default
    that difference is reported but not held against the rebuild: the live search scans the rows
    outside the index exactly, so a rebuild that puts them in the index is expected to lose a
    little recall for its speed, and the floor is what guards it. The rebuild is
    recorded in ``history`` (a History, or a function opening one only when needed, so an
    ingestion that rebuilds nothing writes no history).

    ``embed_batches`` embeds elsewhere (e.g. :class:`recallwatch.scale.ray_engine.RayEmbedding`):
    it gets the batches as cut here, lazily (an iterable, read as it asks for them), and yields
    their vectors in order; writing stays here.
    ``vectors`` (chunk id -> vector) are precomputed ones: written as they are, nothing is
    embedded (``embedder`` is the one the queries will be embedded with, and is recorded).
    ``precomputed`` takes them from the corpus file itself (a ``vector`` field in each record,
    or the ``.npy`` beside it: :mod:`recallwatch.formats.corpus_vectors`), checked in the first
    read and each taken when its chunk is written.
    """
    s = ingest_settings(settings, **keywords)
    _check_arguments(corpus, s, vectors, precomputed)
    rebuild_window = span(s.rebuild.window_hours, "hours", "rebuild_window_hours")
    t_start, started = time.perf_counter(), _now()
    data, fingerprint = _read(corpus, embedder, embedder_spec, vectors, precomputed, s.strict)
    duplicates = data.duplicates.result()
    t_read = time.perf_counter() - t_start
    first = _check_fingerprint(store, fingerprint)
    report = _new_report(store, data, fingerprint, started,
                         duplicates if duplicates.exact or duplicates.near else None)
    write = _plan_writes(report, data, _stored_hashes(store, data.ids, full=s.prune), s.prune)
    _mark_start(store, report, fingerprint if first else None, embedder_spec)
    clock = _Clock(built=_build_seconds(store))  # a write may build the first index: shown apart
    if report.todo:
        _write_groups(store, report, data, write, clock, embedder=embedder,
                      batch_size=s.batch_size, commit_every=s.commit_every,
                      given=vectors is not None or precomputed, embed_batches=embed_batches,
                      dimension=fingerprint.dimension, show_progress=s.show_progress)
    if report.deleted:
        with clock.writing():
            store.delete(report.deleted)
    _finish(store, report, clock, t_start=t_start, t_read=t_read, floor=s.rebuild.floor,
            window=rebuild_window, history=history, max_recall_loss=s.rebuild.max_recall_loss)
    return report


def _check_arguments(corpus: str | Path | Corpus, settings: IngestSettings,
                     vectors: Mapping[str, np.ndarray] | None, precomputed: bool) -> None:
    settings.check()
    if precomputed and (vectors is not None or isinstance(corpus, Corpus)):
        raise UsageError("precomputed reads the vectors of a corpus file: give the file, and "
                         "no vectors")


def _read(corpus: str | Path | Corpus, embedder: Embedder, embedder_spec: str | None,
          vectors: Mapping[str, np.ndarray] | None, precomputed: bool, strict: bool
          ) -> tuple[FileCorpus | GivenCorpus, Fingerprint]:
    """Pass 1 over the corpus (validation, ids and hashes), and the embedder's fingerprint. A
    corpus with no valid record is an input error (exit 2), not a partial ingestion (exit 1)."""
    fingerprint = fingerprint_of(embedder) if precomputed else None  # the vectors' dimension
    data: FileCorpus | GivenCorpus
    if isinstance(corpus, Corpus):
        data = GivenCorpus(corpus, vectors)
    else:
        data = FileCorpus(Path(corpus), given=vectors, vectors=None if fingerprint is None else
                          CorpusVectors(Path(corpus), fingerprint.dimension, embedder=(
                              "the query embedder" if embedder_spec is None
                              else f"the embedder {embedder_spec}")))
    data.scan(strict=strict)
    if data.rejected and not data.ids:
        raise InputError(f"{data.rejected[0].reason} (all {len(data.rejected)} record(s) "
                         "rejected; nothing ingested)")
    return data, fingerprint_of(embedder) if fingerprint is None else fingerprint


def _check_fingerprint(store: VectorStore, fingerprint: Fingerprint) -> bool:
    """Check this embedder's fingerprint against the one the store records; True when the
    store records none yet (a new store)."""
    stored = store.get_meta(FINGERPRINT_META_KEY)
    check_fingerprint(None if stored is None else Fingerprint.from_dict(stored), fingerprint,
                      index=store.uri)
    return stored is None


def _new_report(store: VectorStore, data: FileCorpus | GivenCorpus, fingerprint: Fingerprint,
                started: str, duplicates: Duplicates | None) -> IngestReport:
    version = store.current_version()
    return IngestReport(
        corpus=data.source, store=store.uri, embedder=fingerprint.to_dict(),
        version_before=version, version=version, read=len(data.ids) + len(data.rejected),
        rejected=list(data.rejected), started_at=started,
        resumed=store.get_meta(IN_PROGRESS_META_KEY) is not None,
        duplicates=duplicates,
    )


def _plan_writes(report: IngestReport, data: FileCorpus | GivenCorpus, known: dict[str, str],
                 prune: bool) -> bytearray:
    """Each chunk added, updated or unchanged against the stored hashes (and, with ``prune``,
    the stored chunks the corpus no longer holds, to delete); 1 at the place of each chunk to
    write."""
    write = bytearray(len(data.ids))
    for k, (cid, chash) in enumerate(zip(data.ids, data.hashes, strict=True)):
        before = known.get(cid)
        if before is None:
            report.added.append(cid)
        elif before != chash:
            report.updated.append(cid)
        else:
            report.unchanged += 1
            continue
        write[k] = 1
    if prune:
        keep = set(data.ids) | {r.id for r in data.rejected if r.id}
        report.deleted = sorted(set(known) - keep)
    return write


def _mark_start(store: VectorStore, report: IngestReport, new_fingerprint: Fingerprint | None,
                embedder_spec: str | None) -> None:
    """Recorded before any chunk is written, so even a killed first run leaves an index that
    names its embedder, and a version an unfinished ingestion wrote is not promotable."""
    if new_fingerprint is not None:
        store.set_meta(FINGERPRINT_META_KEY, new_fingerprint.to_dict())
    if embedder_spec is not None:
        store.set_meta(SPEC_META_KEY, redact(embedder_spec))  # a stored spec keeps no secret
    if report.todo or report.deleted:
        store.set_meta(IN_PROGRESS_META_KEY, {"started_at": report.started_at,
                                              "corpus": report.corpus,
                                              "from_version": report.version_before})


@dataclass
class _Clock:
    """Seconds spent embedding and writing; ``built``: the store's index-build time before."""

    built: float
    embed: float = 0.0
    write: float = 0.0

    @contextmanager
    def writing(self) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.write += time.perf_counter() - t0


def _write_groups(store: VectorStore, report: IngestReport, data: FileCorpus | GivenCorpus,
                  write: bytearray, clock: _Clock, *, embedder: Embedder, batch_size: int,
                  commit_every: int, given: bool, dimension: int,
                  embed_batches: Callable[[Iterable[list[str]]], Iterable[np.ndarray]] | None,
                  show_progress: bool) -> None:
    """Pass 2: the chunks to write, embedded (unless ``given``) and committed a group at a
    time; a Ctrl-C says what the store kept."""
    todo = report.todo
    n_groups = -(-todo // commit_every)
    reader = data.written(write)
    # The batches are cut here, whoever embeds them: a text's vector can depend on its batch.
    groups = Groups(reader, commit_every, batch_size)
    stream = groups.given() if given else _vectors(embedder, groups.texts(), embed_batches)
    # closed when the ingestion stops, even half-way: a remote embedding ends with it
    committed = commits = 0
    try:
        with progress(todo, f"ingesting into {store.uri}",
                      enabled=show_progress) as advance, closing(reader), closing(stream):
            while True:
                t0 = time.perf_counter()
                first = next(stream, None)  # reads the next group's first batch
                if first is None:
                    break
                group = groups.take()
                block = np.empty((len(group), dimension), dtype=np.float32)
                for b in range(0, len(group), batch_size):
                    n = min(batch_size, len(group) - b)
                    block[b:b + n] = first if b == 0 else next(stream)
                    advance(n)
                clock.embed += time.perf_counter() - t0
                data.check_unchanged()  # nothing read after a change is written
                with clock.writing():
                    store.upsert([chunk for chunk, _ in group], block)
                committed, commits = committed + len(group), commits + 1
    except KeyboardInterrupt:
        raise Interrupted(_kept(store.uri, committed, todo, commits, n_groups)) from None


def _finish(store: VectorStore, report: IngestReport, clock: _Clock, *, t_start: float,
            t_read: float, floor: float, window: timedelta,
            history: History | Callable[[], History | None] | None,
            max_recall_loss: float | None) -> None:
    """Seal the version (adapters that build versions themselves: one completed ingestion,
    one version), check and maybe rebuild the index, time everything, and record the report."""
    if isinstance(store, SupportsSeal) and (report.todo or report.deleted):
        store.seal()
    report.version = store.current_version()
    t_build = _build_seconds(store) - clock.built
    t_index = 0.0
    if report.todo:
        t0 = time.perf_counter()
        report.index_rebuild = _rebuild_if_needed(store, floor, window, history, max_recall_loss)
        t_index = time.perf_counter() - t0
        report.version = store.current_version()
    report.finished_at = _now()
    report.seconds = {"read": t_read, "embed": clock.embed, "write": clock.write - t_build,
                      "index_build": t_build, "index": t_index,
                      "total": time.perf_counter() - t_start}
    _record(store, report)


def _build_seconds(store: VectorStore) -> float:
    return store.index_build_seconds() if isinstance(store, SupportsIndexBuildTime) else 0.0


def _kept(store: str, committed: int, todo: int, commits: int, groups: int) -> str:
    """What an interrupted ingestion leaves, and how to finish it."""
    return (f"ingestion into {store} interrupted: {committed:,} of the {todo:,} chunks to write "
            f"were committed ({commits} of {groups} commit(s)); the store keeps them, and its "
            "new version is not promotable until an ingestion completes. Run the same ingest "
            "again to finish: the chunks already committed are skipped")


def _rebuild_if_needed(store: VectorStore, floor: float, window: timedelta,
                       history: History | Callable[[], History | None] | None,
                       max_recall_loss: float | None) -> dict[str, Any] | None:
    from recallwatch.ops.autoreindex import auto_reindex, index_needs_rebuild, row_probes

    why = index_needs_rebuild(store)
    probes = None if why is None else row_probes(store)
    if why is None or probes is None:
        return None
    hist = history() if callable(history) else history
    done = auto_reindex(store, probes, trigger="ingest", why=why, floor=floor,
                        window=window, history=hist, max_recall_loss=max_recall_loss)
    return {**done.to_dict(), "summary": done.summary()}


def _vectors(
    embedder: Embedder, batches: Iterator[list[str]],
    embed_batches: Callable[[Iterable[list[str]]], Iterable[np.ndarray]] | None,
) -> Generator[np.ndarray, None, None]:
    if embed_batches is not None:
        yield from embed_batches(batches)
    else:
        for texts in batches:
            yield embedder.embed_documents(texts)


def promotion_blockers(store: VectorStore, version: str) -> list[str]:
    """Why ``version`` must not be promoted (empty when it may be)."""
    reasons = []
    block = (store.get_meta(BLOCKS_META_KEY) or {}).get(str(version))
    if block is not None and not block.get("resolved"):
        reasons.append(block["reason"])
    running = store.get_meta(IN_PROGRESS_META_KEY)
    if running is not None and _after(version, running.get("from_version")):
        reasons.append(
            f"version {version} was written by an ingestion of {running.get('corpus')} that "
            f"started at {running.get('started_at')} and has not finished: rerun it to complete"
        )
    return reasons


def resolve_block(store: VectorStore, version: str, note: str) -> None:
    """Record a written reason to promote ``version`` despite its rejected records."""
    if not note.strip():
        raise UsageError("resolving a promotion block needs a written reason")
    resolved = {"note": note, "at": _now()}

    def resolve(stored: dict[str, Any] | None) -> dict[str, Any]:
        blocks = dict(stored or {})
        if str(version) not in blocks:
            raise UsageError(f"version {version} of {store.uri} has no promotion block to "
                             "resolve")
        blocks[str(version)] = {**blocks[str(version)], "resolved": resolved}
        return blocks

    update_meta(store, BLOCKS_META_KEY, resolve)


def _record(store: VectorStore, report: IngestReport) -> None:
    entry = report.to_dict(max_rejections=_KEEP_REJECTIONS)
    # Id lists can be the whole corpus: the stored report keeps counts and a sample.
    for key in ("added", "updated", "deleted"):
        entry[key] = entry[key][:_KEEP_REJECTIONS]
    update_meta(store, REPORTS_META_KEY,
                lambda reports: [*(reports or []), entry][-_KEEP_REPORTS:])
    if report.rejected:
        block = {
            "reason": f"the ingestion of {report.corpus} at {report.finished_at} rejected "
                      f"{len(report.rejected)} record(s): {report.rejected[0].reason}"
                      + (" …" if len(report.rejected) > 1 else ""),
            "rejected": len(report.rejected), "at": report.finished_at,
        }
        update_meta(store, BLOCKS_META_KEY,
                    lambda blocks: {**(blocks or {}), report.version: block})
    # Cleared last: a kill before this line leaves the versions written so far blocked.
    store.set_meta(IN_PROGRESS_META_KEY, None)


def _stored_hashes(store: VectorStore, ids: Sequence[str], *, full: bool) -> dict[str, str]:
    """id -> content hash of the stored chunks among ``ids`` (all stored chunks when ``full``)."""
    if isinstance(store, SupportsContentHashes):  # a one-column scan
        hashes = store.content_hashes()
        if full:
            return hashes
        wanted = set(ids)
        return {i: h for i, h in hashes.items() if i in wanted}
    chunks = store.chunks() if full else list(store.get(ids).values())
    return {c.id: c.content_hash for c in chunks}


def _after(version: str, start: object) -> bool:
    try:
        return int(version) > int(str(start))
    except ValueError:  # non-numeric versions: cannot order them, so block to be safe
        return True


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
