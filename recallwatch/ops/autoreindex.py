"""The operation loop: a reindex the monitor or an ingestion triggers by itself, verified first.

Two triggers call :func:`auto_reindex`:

* ``recallwatch ops monitor --reindex-below FLOOR``: the live index's recall on the probes fell
  under ``FLOOR``;
* an ingestion that left more than :data:`REBUILD_UNINDEXED_SHARE` of the rows outside the ANN
  index (those rows are scanned exactly meanwhile: correct, only slower).

Either way the rebuild is :func:`recallwatch.ops.reindex.reindex`: the new index is built while
the current one keeps serving, measured on probes against exact search, and switched in
atomically only when it reaches the floor and is not worse than the live index beyond the
tolerance (``max_recall_loss``, with the interval of the difference in the reason); a new index
that fails either is never switched in.

A guard allows one automatic reindex per store per window (default 24 hours), counted from the
last *attempt*, switched or not: a store whose new indexes keep failing the floor must not be
rebuilt on every monitor run. The attempt is written to the store's metadata before the build
starts, so a run killed mid-build still counts. Every attempt, skipped ones included, says why.

The adapters without native versions (pgvector, Qdrant, Milvus Lite, Chroma, index files) reindex
by copying *production* into a new version: a store with no production version yet (never
promoted), or whose current version is not production (ungated writes), is skipped with that
reason, before any attempt is counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import InputError
from recallwatch.ops.probes import ProbeSet
from recallwatch.ops.reindex import DEFAULT_MAX_RECALL_LOSS, ReindexResult, reindex
from recallwatch.stores.base import (
    SupportsContentHashes,
    SupportsIndexInspection,
    SupportsReindex,
    SupportsVectors,
)

if TYPE_CHECKING:
    from recallwatch.history import History
    from recallwatch.ops.recall import ExactSearch
    from recallwatch.stores.base import VectorStore

__all__ = [
    "AUTO_REINDEX_META_KEY",
    "DEFAULT_WINDOW",
    "REBUILD_UNINDEXED_SHARE",
    "AutoReindex",
    "auto_reindex",
    "index_needs_rebuild",
    "row_probes",
]

AUTO_REINDEX_META_KEY = "auto_reindex"  # the last automatic attempt: {"at", "trigger", ...}
DEFAULT_WINDOW = timedelta(hours=24)
# An ingestion rebuilds the index when more than this share of the rows is outside it.
REBUILD_UNINDEXED_SHARE = 0.2
ROW_PROBES = 100  # stored rows used as probes when no probe set is given (ingestion)


@dataclass(frozen=True)
class AutoReindex:
    """What an automatic trigger did: ``result`` is None when the guard or the store skipped it."""

    trigger: str  # "monitor" or "ingest"
    why: str  # what triggered it, with the figures
    result: ReindexResult | None
    skipped: str | None  # why nothing was built

    @property
    def switched(self) -> bool:
        return self.result is not None and self.result.switched

    def summary(self) -> str:
        if self.result is None:
            return f"automatic reindex ({self.why}): skipped, {self.skipped}"
        return f"automatic reindex ({self.why}): {self.result.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"trigger": self.trigger, "why": self.why, "switched": self.switched,
                "skipped": self.skipped,
                "result": None if self.result is None else self.result.to_dict()}


def index_needs_rebuild(store: VectorStore) -> str | None:
    """Why an ingestion should rebuild the store's ANN index (too many rows outside it), else
    None. Stores that cannot describe or rebuild their index never need it here."""
    if not (isinstance(store, SupportsIndexInspection) and isinstance(store, SupportsReindex)):
        return None
    state = store.index_state()
    if state is None:
        return None
    rows = state.indexed_rows + state.unindexed_rows
    if rows == 0 or state.unindexed_rows <= REBUILD_UNINDEXED_SHARE * rows:
        return None
    if state.indexed_rows == 0:
        # The engine could not train an index on so few rows (LanceDB's IVF_PQ wants 256 per
        # list) and scans them all: a rebuild now would leave them out again.
        return None
    return (f"{state.unindexed_rows} of {rows} rows ({state.unindexed_rows / rows:.0%}) are "
            f"outside the index, more than {REBUILD_UNINDEXED_SHARE:.0%}")


def row_probes(store: VectorStore, n: int = ROW_PROBES, seed: int = 0) -> ProbeSet | None:
    """``n`` stored vectors drawn with ``seed``, as a vector probe set: how an ingestion verifies
    a rebuilt index when it has no probe set (recall against exact search on the store's own
    rows). None when the store cannot list or return its vectors."""
    if not (isinstance(store, SupportsContentHashes) and isinstance(store, SupportsVectors)):
        return None
    ids = sorted(store.content_hashes())
    if not ids:
        return None
    rng = np.random.default_rng(seed)
    picked = sorted(rng.choice(len(ids), size=min(n, len(ids)), replace=False).tolist())
    vectors = np.asarray(store.vectors([ids[i] for i in picked]), dtype=np.float32)
    return ProbeSet(name="stored-rows", version=str(store.current_version()), vectors=vectors,
                    source=f"{len(picked)} stored rows (seed {seed})")


def auto_reindex(
    store: VectorStore, probes: ProbeSet, *, trigger: str, why: str, k: int = 10,
    floor: float = 0.95, window: timedelta = DEFAULT_WINDOW, history: History | None = None,
    now: datetime | None = None, vectors: np.ndarray | None = None,
    exact: ExactSearch | None = None, max_recall_loss: float | None = DEFAULT_MAX_RECALL_LOSS,
) -> AutoReindex:
    """Reindex ``store`` unless one was attempted within ``window``; the new index is switched
    in only when its recall@k on ``probes`` reaches ``floor`` and is not lower than the live
    index's by more than ``max_recall_loss`` (:func:`recallwatch.ops.reindex.reindex`).
    ``vectors``: the probes already embedded (the monitor has them), so they are not embedded
    twice; ``exact``: the exact search recall is measured against (default the store's own)."""
    if window < timedelta(0):
        raise InputError(field="window", expected="a duration of 0 or more", found=str(window))
    now = now or datetime.now(UTC)
    if not isinstance(store, SupportsReindex):
        return AutoReindex(trigger, why, None, f"{store.uri} cannot build a new index beside the "
                           "live one (no versions)")
    # Checked before the attempt is written: a store that cannot be reindexed yet (no index to
    # rebuild, no production version) says why on every run, and holds no guard for a build
    # that never started.
    problem = store.reindex_problem()
    if problem is not None:
        return AutoReindex(trigger, why, None, problem)
    last = store.get_meta(AUTO_REINDEX_META_KEY)
    if isinstance(last, dict) and last.get("at"):
        since = now - datetime.fromisoformat(str(last["at"]))
        if since < window:
            return AutoReindex(trigger, why, None,
                               f"one was already attempted at {last['at']} ({last.get('trigger')}"
                               f", {last.get('outcome', 'unfinished')}); at most one per "
                               f"{_hours(window)}")
    if trigger == "ingest":
        hopeless = _cannot_pass(store, probes, k, floor, vectors, exact)
        if hopeless is not None:
            return AutoReindex(trigger, why, None, hopeless)
    attempt = {"at": now.isoformat(timespec="seconds"), "trigger": trigger, "why": why}
    store.set_meta(AUTO_REINDEX_META_KEY, attempt)  # before the build: a kill still counts
    result = reindex(store, probes, k=k, floor=floor, history=history,
                     trigger={"trigger": trigger, "why": why}, vectors=vectors, exact=exact,
                     max_recall_loss=max_recall_loss)
    store.set_meta(AUTO_REINDEX_META_KEY,
                   {**attempt, "outcome": "switched" if result.switched else "refused",
                    "version": result.version, "recall": result.recall_candidate})
    return AutoReindex(trigger, why, result, None)


def _cannot_pass(store: VectorStore, probes: ProbeSet, k: int, floor: float,
                 vectors: np.ndarray | None, exact: ExactSearch | None) -> str | None:
    """Why a rebuild cannot reach ``floor``, measured before it is built (None when it may).

    The live search finds the rows outside the index exactly; a rebuilt index puts them in the
    approximate search with the same settings, so its recall is not expected to be higher than
    the live one. A live recall under the floor means the rebuild would be thrown away."""
    from recallwatch.ops.recall import probe_vectors, recall_vs_exact

    if vectors is None:
        vectors, _ = probe_vectors(probes, store)
    # one live search for every probe: the rows outside the index are scanned once, not per probe
    live = float(recall_vs_exact(store, vectors, k, exact=exact, batched=True)[0].mean())
    if live >= floor:
        return None
    return (f"not rebuilt: recall@{k} of the live search is {live:.3f} with the rows outside "
            f"the index searched exactly, under the floor {floor:g}; a rebuilt index with the "
            "same settings would be refused at that floor. Raise the index's search settings "
            "(nprobes, ef, refine_factor in the store URI) or lower the floor (--floor)")


def _hours(window: timedelta) -> str:
    hours = window.total_seconds() / 3600
    return f"{hours:g} hour" + ("" if hours == 1 else "s")
