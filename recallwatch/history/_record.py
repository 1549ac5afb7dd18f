"""What the gate calls after a complete run: compare with both baselines, then record."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch._redact import redact
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import RecallwatchError, StoreError
from recallwatch.history._store import BaselinesMoved, History
from recallwatch.history.compare import compare_runs
from recallwatch.stores.base import VectorStore

if TYPE_CHECKING:  # the retrieval code (numpy) loads only when a gate runs
    from recallwatch.acceptance.gate import FindBaseline
    from recallwatch.acceptance.retrieve import LatencyBaseline

__all__ = ["baselines", "compare_with_baselines", "ingested_since", "latency_baseline",
           "record_gate_run"]


def baselines(history: History, result: GateResult, *,
              before_seq: int | None = None) -> tuple[GateResult | None, GateResult | None]:
    """(previous run of the same dataset name, last ACCEPT of the same dataset and policy hash),
    both earlier than ``before_seq`` (default: everything recorded)."""
    prev_id, acc_id = history.baseline_ids(result, before_seq=before_seq)
    previous = history.load(prev_id) if prev_id else None
    accepted = history.load(acc_id) if acc_id else None
    return previous, accepted


def compare_with_baselines(history: History, result: GateResult, *,
                           store: VectorStore | None = None, before_seq: int | None = None,
                           cache: dict[str, list[str] | None] | None = None) -> dict[str, Any]:
    """The ``comparison`` of a run: ``{"previous": C | None, "last_accepted": C | None}``.
    ``cache`` keeps ``store.ids_since`` answers by version across calls."""
    previous, accepted = baselines(history, result, before_seq=before_seq)
    since_cache = {} if cache is None else cache
    out: dict[str, Any] = {}
    for key, base in (("previous", previous), ("last_accepted", accepted)):
        if base is None:
            out[key] = None
            continue
        since, note = ingested_since(base, store, since_cache)
        c = compare_runs(base, result, ingested_since=since)
        if note:
            c["details"].append(note)
        out[key] = c
    return out


def ingested_since(base: GateResult, store: VectorStore | None,
                   cache: dict[str, list[str] | None]) -> tuple[list[str] | None, str | None]:
    """``store.ids_since(base's index version)`` when ``base`` ran on this same store."""
    if store is None:
        return None, None
    version = base.store.get("version")
    base_uri = base.store.get("uri")
    if version is None or base_uri is None:
        return None, None
    if redact(str(base_uri)) != redact(store.uri):
        return None, (f"run {base.run_id} ran on another store ({redact(str(base_uri))}): "
                      "what was ingested since is unknown")
    key = str(version)
    if key not in cache:
        try:
            cache[key] = list(store.ids_since(key))
        except StoreError as exc:
            cache[key] = None
            return None, f"cannot list what was ingested since v{key}: {exc}"
    return cache[key], None


def latency_baseline(history_path: str | Path) -> FindBaseline:
    """What the gate calls to time the baseline's index beside the candidate's: with the open
    store, the golden set's and the policy's hashes, the last accepted run of both, and a
    read-only view of the index version it searched, when that version can still be read: on
    this same store, or on the store the run searched (opened by its recorded URI, when that
    holds no redacted password) if it was built with the same embedder. None otherwise: the cost
    rule then compares the stored timings of the two runs, with the load factor."""
    def find(store: VectorStore, dataset_hash: str, policy_hash: str) -> LatencyBaseline | None:
        with History(history_path) as history:
            run_id = history.last_accepted(dataset_hash, policy_hash)
            base = history.load(run_id) if run_id is not None else None
        if base is None:
            return None
        uri, version = base.store.get("uri"), base.store.get("version")
        if uri is None or version is None:
            return None
        from recallwatch.acceptance.retrieve import LatencyBaseline

        owner = None
        try:
            if redact(str(uri)) != redact(store.uri):
                if "***" in str(uri):  # its password was not recorded: it cannot be reopened
                    return None
                owner = _same_space(str(uri), store)
                if owner is None:
                    return None
            view = (owner or store).checkout(str(version))
        except RecallwatchError:  # gone, cleaned up, unreachable, or without versions
            if owner is not None:
                owner.close()
            return None
        return LatencyBaseline(base.run_id, str(version), view, owner)

    return find


def _same_space(uri: str, store: VectorStore) -> VectorStore | None:
    """The store at ``uri``, opened to read, when its vectors were built with the embedder that
    built ``store``'s (the query vectors then fit both); None when they were not."""
    from recallwatch.embedders.base import FINGERPRINT_META_KEY
    from recallwatch.stores import open_store

    mine = store.get_meta(FINGERPRINT_META_KEY)
    if mine is None:
        return None
    other = open_store(uri)
    if other.get_meta(FINGERPRINT_META_KEY) != mine:
        other.close()
        return None
    return other


def record_gate_run(result: GateResult, history_path: str | Path, *,
                    store: VectorStore | None = None) -> GateResult:
    """Compare ``result`` with the previous run and the last accepted run of its golden set and
    policy, record it (one transaction) in the history at ``history_path``, and return it with
    its ``comparison`` attached.

    ``store`` is the live store the run searched; with it, regressions name the chunks ingested
    since the baseline's index version that now outrank the expected ones.
    """
    with History(history_path) as history:
        # First try: compare outside the write lock (listing a store's changes can take a
        # while), and write only if no concurrent run changed the baselines meanwhile. If one
        # did, compare again while holding the lock, so the stored comparison is always against
        # the runs recorded just before this one.
        since_cache: dict[str, list[str] | None] = {}
        comparison = compare_with_baselines(history, result, store=store, cache=since_cache)
        compared = _judged(history, replace(result, comparison=comparison))
        used = tuple((comparison[k] or {}).get("run_id") for k in ("previous", "last_accepted"))
        try:
            history.record(compared, expect_baselines=(used[0], used[1]))
        except BaselinesMoved:
            compared = history.record_computed(
                lambda: _judged(history, replace(result, comparison=compare_with_baselines(
                    history, result, store=store, cache=since_cache))),
                run_id=result.run_id)
    return compared


def _judged(history: History, result: GateResult) -> GateResult:
    """The policy's limits against the last accepted run (max_drop, max_cost_increase), applied
    before the run is recorded, so the history holds the verdict the gate answered."""
    if not result.policy.get("max_drop") and result.policy.get("max_cost_increase") is None:
        return result
    from recallwatch.acceptance.limits import (
        against_baseline,  # numpy and the stats: only when used
    )

    accepted = (result.comparison or {}).get("last_accepted")
    base = history.load(accepted["run_id"]) if accepted else None
    return against_baseline(result, base)
