"""Promote an index version to production only when the history and the store both allow it.

A version may be promoted when

1. the history holds an ACCEPTed gate run of the current golden set (dataset hash) and policy
   (policy hash) on exactly this store URI and this index version;
2. no later gate run of that golden set and policy on the same version says STOP (the newest
   word on a version is the one that counts);
3. the ingestion that produced the version left no unresolved rejection and did not stop half
   way (:func:`recallwatch.ops.ingest.promotion_blockers`).

A version a switched ``recallwatch ops reindex`` created holds the content of the version it was
rebuilt from (checked: equal content hashes, or an index-only commit on LanceDB) and was verified
against exact search before the switch; it has no gate run of its own. When it has none of this
golden set and policy, it **inherits** the verdicts of that version (following a chain of
reindexes), and a note says so; once it is gated itself, its own runs decide.

Otherwise nothing changes in the store and every missing condition is named.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: importing recallwatch.ops stays light
    from recallwatch.history import History, RunSummary
    from recallwatch.stores.base import VectorStore

__all__ = ["PromoteDecision", "check_promotion", "promote"]


@dataclass(frozen=True)
class PromoteDecision:
    store: str  # redacted URI
    version: str
    dataset_hash: str
    policy_hash: str
    accepted_run: str | None  # the ACCEPT run that allows it
    missing: tuple[str, ...] = ()  # what is missing; empty when the version may be promoted
    promoted: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def allowed(self) -> bool:
        return not self.missing

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "allowed": self.allowed}


def check_promotion(history: History, store: VectorStore, *, version: str | None,
                    dataset_hash: str | None, policy_hash: str | None) -> PromoteDecision:
    """Decide whether ``version`` (default: the store's current version) may be promoted.

    ``dataset_hash``/``policy_hash`` identify the current golden set and policy; when either is
    None it is taken from the latest gate run recorded on this store (and a note says so).
    """
    from recallwatch.ops.ingest import promotion_blockers

    uri = store.uri
    version = str(version) if version is not None else store.current_version()
    notes: list[str] = []
    if dataset_hash is None or policy_hash is None:
        latest = history.latest_on_store(uri)
        if latest is None:
            return PromoteDecision(
                uri, version, dataset_hash or "", policy_hash or "", None,
                missing=(f"no gate run on {uri} in {history.location}: run `recallwatch gate "
                         f"GOLDEN --store {uri}` first (or name the golden set with --golden)",))
        if dataset_hash is None:
            dataset_hash = latest.dataset_hash
            notes.append(f"golden set taken from the latest gate run on this store "
                         f"({latest.run_id}: {latest.dataset_name} v{latest.dataset_version})")
        if policy_hash is None:
            policy_hash = latest.policy_hash
            notes.append(f"policy taken from the latest gate run on this store ({latest.run_id})")

    missing: list[str] = []
    gated = _gated_version(history, store, version, dataset_hash, policy_hash)
    if gated != version:
        notes.append(f"version {version} was created by a verified reindex of version {gated} "
                     f"(same content, new index) and has no gate run of its own: it inherits "
                     f"the gate runs of version {gated}")
    runs = history.runs_on(uri, gated, dataset_hash=dataset_hash, policy_hash=policy_hash)
    accepted = next((r for r in runs if r.verdict == "ACCEPT"), None)
    if accepted is None:
        missing.append(_no_accept(history, uri, version, dataset_hash, policy_hash, runs))
    elif runs[0].verdict != "ACCEPT":
        missing.append(f"the latest gate run of this golden set and policy on version {version}, "
                       f"{runs[0].run_id}, is STOP (after ACCEPT {accepted.run_id}): the newest "
                       "verdict stands; fix and rerun the gate")
    for v in dict.fromkeys((version, gated)):
        missing += [f"ingestion: {reason}" for reason in promotion_blockers(store, v)]
    return PromoteDecision(uri, version, dataset_hash, policy_hash,
                           accepted.run_id if accepted else None, tuple(missing),
                           notes=tuple(notes))


def _gated_version(history: History, store: VectorStore, version: str, dataset_hash: str,
                   policy_hash: str) -> str:
    """The version whose gate runs decide for ``version``: itself, unless it has none and a
    switched reindex created it from another version (then that one, recursively)."""
    from recallwatch.ops.reindex import reindexed_from

    seen, step = {version}, version
    while not history.runs_on(store.uri, step, dataset_hash=dataset_hash,
                              policy_hash=policy_hash):
        parent = reindexed_from(store, step)
        if parent is None or parent in seen:
            return version  # nothing in the chain was gated: report on the version asked
        seen.add(parent)
        step = parent
    return step


def _no_accept(history: History, uri: str, version: str, dataset_hash: str, policy_hash: str,
               runs: list[RunSummary]) -> str:
    """Name precisely what is missing: no run at all, only STOPs, or runs of another golden set
    or policy on this version."""
    head = (f"no ACCEPTed gate run of golden set #{dataset_hash[:12]} with policy "
            f"#{policy_hash[:12]} on {uri} version {version}")
    if runs:
        return f"{head} (its {len(runs)} run(s) there say STOP, latest {runs[0].run_id})"
    others = history.runs_on(uri, version)
    if others:
        r = others[0]
        what = []
        if r.dataset_hash != dataset_hash:
            what.append(f"golden set #{r.dataset_hash[:12]} ({r.dataset_name} "
                        f"v{r.dataset_version})")
        if r.policy_hash != policy_hash:
            what.append(f"policy #{r.policy_hash[:12]}")
        return f"{head} (version {version} was gated with another {' and '.join(what)}: " \
               f"run {r.run_id})"
    latest = history.latest_on_store(uri)
    if latest is not None:
        return (f"{head} (the store's latest gate run, {latest.run_id}, was on version "
                f"{latest.index_version}: gate version {version} before promoting it)")
    return f"{head} (no gate run on this store at all)"


def promote(history: History, store: VectorStore, *, version: str | None = None,
            dataset_hash: str | None = None, policy_hash: str | None = None) -> PromoteDecision:
    """Check, and promote with ``store.promote`` only when allowed. The decision is recorded in
    the history (a ``promote`` monitor record), allowed or refused."""
    from dataclasses import replace

    decision = check_promotion(history, store, version=version, dataset_hash=dataset_hash,
                               policy_hash=policy_hash)
    if decision.allowed:
        store.promote(decision.version)
        decision = replace(decision, promoted=True)
    history.record_monitor_run("promote", decision.to_dict(), store_uri=decision.store,
                               index_version=decision.version,
                               status="promoted" if decision.promoted else "refused")
    return decision
