"""Freshness: does a search put the newest valid version of a fact above its older versions, and
how old are the results it returns?

A knowledge base that keeps dated chunks (``valid_from``, optionally ``valid_to``) often holds
several versions of one fact: the 2024 fee table and the 2025 one. Here a **version** is
simple and needs no extra data: the chunks of one document (``doc_id``) that share a
``valid_from`` are one version of it. On the as-of date (the gate's run date):

* the **newest valid version** of a document is its chunks with the latest ``valid_from`` among
  the chunks valid that day (``valid_from`` on or before it, ``valid_to`` absent or on or after
  it);
* its **older versions** are its chunks with an earlier ``valid_from`` (still valid or not);
* a document is **versioned** when it has both. Chunks without a ``valid_from`` are no version.

For a query and a versioned document some version of which is in the top K, the search is
**fresh** when a chunk of the newest valid version is in the top K and no chunk of an older
version ranks above it. A document none of whose versions reached the top K is a recall
failure, not a freshness one: it is counted apart (``unreached``). Which documents a query is
checked on is the caller's *scope*: the gate takes the documents of the query's expected
chunks (what the golden set says the question is about); the monitor, which has no expected
chunks, the documents its probes' top K reach. A query is fresh when it is fresh on each of its
versioned documents it reached, and **freshness** is the share of fresh queries among the
queries that reached at least one versioned document.

The **age** of a top-K result is the days from its ``valid_from`` to the as-of date; the run
reports the median age over every dated top-K result that is valid that day, and counts the
top-K results already expired (``valid_to`` before the as-of date) and not yet valid. Without a
single dated chunk nothing is measured, and the result says so instead of giving a number.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from recallwatch.acceptance.model import Check, QueryResult, Reason
from recallwatch.records import Chunk

__all__ = ["NOT_DATED", "DocFreshness", "Versions", "freshness_check", "freshness_line",
           "gate_freshness", "measure_freshness", "query_freshness", "top_k_freshness",
           "versions_of"]

NOT_DATED = "no dated chunks: freshness not measured"
NOT_VERSIONED = ("no {what} reaches a document with more than one dated version: the "
                 "newest-first share is not measured")
NOT_REACHED = ("no version of a fact with dated versions reached the top K (a recall "
               "failure): the newest-first share is not measured")
Scope = Literal["expected", "top_k"]
# The stale queries a result keeps as its evidence (the count is always whole).
_SHOWN = 20


@dataclass(frozen=True)
class Versions:
    """One document's dated chunks on the as-of date: the newest valid version and the chunks of
    every older one."""

    doc_id: str
    newest: date | None  # valid_from of the newest version valid on the as-of date
    newest_ids: frozenset[str]
    older: Mapping[str, date]  # chunk id -> valid_from, for each chunk of an older version

    @property
    def versioned(self) -> bool:
        return self.newest is not None and bool(self.older)


def _valid(c: Chunk, as_of: date) -> bool:
    return (c.valid_from is not None and c.valid_from <= as_of
            and (c.valid_to is None or c.valid_to >= as_of))


def versions_of(doc_id: str, chunks: Iterable[Chunk], as_of: date) -> Versions:
    """The versions of document ``doc_id`` among ``chunks`` (its chunks) on ``as_of``."""
    dated = [c for c in chunks if c.doc_id == doc_id and c.valid_from is not None]
    valid = [c for c in dated if _valid(c, as_of)]
    if not valid:
        return Versions(doc_id, None, frozenset(), {})
    newest = max(c.valid_from for c in valid if c.valid_from is not None)
    return Versions(doc_id, newest,
                    frozenset(c.id for c in valid if c.valid_from == newest),
                    {c.id: c.valid_from for c in dated
                     if c.valid_from is not None and c.valid_from < newest})


@dataclass(frozen=True)
class DocFreshness:
    """One versioned document in one query's top K: where its newest valid version and its
    best-ranked older version stand (1-based ranks; None: not in the top K)."""

    doc_id: str
    newest_from: date
    newest_id: str | None
    newest_rank: int | None
    older_id: str | None
    older_from: date | None
    older_rank: int | None

    @property
    def reached(self) -> bool:
        """A version of the document is in the top K."""
        return self.newest_rank is not None or self.older_rank is not None

    @property
    def fresh(self) -> bool:
        return self.newest_rank is not None and (
            self.older_rank is None or self.newest_rank < self.older_rank)

    def words(self, k: int) -> str:
        """Why it is stale (or that it is fresh), for a report."""
        newest = (f"the newest version (valid from {self.newest_from.isoformat()}) "
                  + (f"{self.newest_id} at rank {self.newest_rank}" if self.newest_rank
                     else f"is not in the top {k}"))
        if self.older_rank is None:
            return f"document {self.doc_id}: {newest}, no older version in the top {k}"
        older = (f"older version {self.older_id} (valid from "
                 f"{self.older_from.isoformat() if self.older_from else '?'}) at rank "
                 f"{self.older_rank}")
        return f"document {self.doc_id}: {older}, {newest}"

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "fresh": self.fresh,
                "newest_from": self.newest_from.isoformat(), "newest_id": self.newest_id,
                "newest_rank": self.newest_rank, "older_id": self.older_id,
                "older_from": None if self.older_from is None else self.older_from.isoformat(),
                "older_rank": self.older_rank}


def _doc_freshness(top: Sequence[str], v: Versions, newest_from: date) -> DocFreshness:
    newest = next(((r, cid) for r, cid in enumerate(top, 1) if cid in v.newest_ids), None)
    older = next(((r, cid) for r, cid in enumerate(top, 1) if cid in v.older), None)
    return DocFreshness(v.doc_id, newest_from, None if newest is None else newest[1],
                        None if newest is None else newest[0],
                        None if older is None else older[1],
                        None if older is None else v.older[older[1]],
                        None if older is None else older[0])


def query_freshness(top: Sequence[str], doc_ids: Iterable[str],
                    versions: Mapping[str, Versions]) -> list[DocFreshness]:
    """Each versioned document of ``doc_ids`` as ranked by the top K ``top`` (ids in rank
    order); empty when none is versioned."""
    return [_doc_freshness(top, v, v.newest) for d in dict.fromkeys(doc_ids)
            if (v := versions.get(d)) is not None and v.newest is not None and v.older]


def _ages(dates: Iterable[tuple[date | None, date | None]], as_of: date) -> dict[str, Any]:
    """The top-K results' ages in days (valid ones), and how many are expired or not yet
    valid."""
    import numpy as np

    ages: list[int] = []
    expired = future = undated = 0
    for valid_from, valid_to in dates:
        if valid_from is None:
            undated += 1
        elif valid_from > as_of:
            future += 1
        elif valid_to is not None and valid_to < as_of:
            expired += 1
        else:
            ages.append((as_of - valid_from).days)
    return {"dated": len(ages) + expired + future, "undated": undated,
            "valid": len(ages), "expired": expired, "not_yet_valid": future,
            "median_age_days": float(np.median(ages)) if ages else None,
            "oldest_age_days": max(ages) if ages else None}


def measure_freshness(per_query: Sequence[tuple[str, list[DocFreshness]]],
                      top_dates: Iterable[tuple[date | None, date | None]], *, as_of: date,
                      k: int, scope: Scope) -> dict[str, Any]:
    """The run's freshness from each query's versioned documents (``per_query``: query id and
    :func:`query_freshness`) and the dates of every top-K result (``(valid_from, valid_to)``,
    one per result). ``measured`` is False, with ``note`` saying why, when no chunk is dated."""
    results = _ages(top_dates, as_of)
    unreached = [qid for qid, docs in per_query if docs and not any(d.reached for d in docs)]
    checked = [(qid, [d for d in docs if d.reached]) for qid, docs in per_query
               if any(d.reached for d in docs)]
    out: dict[str, Any] = {"measured": bool(results["dated"] or checked or unreached),
                           "as_of": as_of.isoformat(), "scope": scope, "k": k,
                           "unreached": unreached}
    if not out["measured"]:
        return {**out, "note": NOT_DATED, "share": None, "queries": 0, "fresh": 0,
                "stale": [], "stale_queries": [], "results": results}
    stale = [(qid, docs) for qid, docs in checked if not all(d.fresh for d in docs)]
    share = (len(checked) - len(stale)) / len(checked) if checked else None
    what = "expected chunk" if scope == "expected" else "top-K result"
    note = None if checked else (NOT_REACHED if unreached else NOT_VERSIONED.format(what=what))
    return {**out, "note": note,
            "share": share, "queries": len(checked), "fresh": len(checked) - len(stale),
            "stale": [{"query": qid, "documents": [d.to_dict() for d in docs if not d.fresh],
                       "why": "; ".join(d.words(k) for d in docs if not d.fresh)}
                      for qid, docs in stale[:_SHOWN]],
            "stale_queries": [qid for qid, _ in stale], "results": results}


# -- the gate ------------------------------------------------------------------------------------

Dates = Mapping[str, tuple[date | None, date | None]]


def gate_freshness(scored: Sequence[QueryResult], expected: Mapping[str, Chunk], dates: Dates,
                   siblings: Callable[[Sequence[str]], list[Chunk]], as_of: date
                   ) -> dict[str, Any]:
    """The gate's freshness: each query checked on the documents of its expected chunks
    (``expected``: the expected chunks read), the top-K results' ages from ``dates`` (chunk id
    -> (valid_from, valid_to) of every dated chunk shown), the documents' versions read with
    ``siblings`` (only for documents an expected chunk of which is dated)."""
    doc_of = {cid: c.doc_id for cid, c in expected.items()
              if c.doc_id is not None and c.valid_from is not None}
    versions = _versions(sorted(set(doc_of.values())), siblings, as_of)
    per_query = [(q.id, query_freshness([cid for cid, _ in q.top],
                                        [doc_of[h.id] for h in q.expected if h.id in doc_of],
                                        versions)) for q in scored]
    top_dates = [dates.get(cid, (None, None)) for q in scored for cid, _ in q.top]
    k = max((q.top_k for q in scored), default=0)
    return measure_freshness(per_query, top_dates, as_of=as_of, k=k, scope="expected")


def _versions(docs: Sequence[str], siblings: Callable[[Sequence[str]], list[Chunk]],
              as_of: date) -> dict[str, Versions]:
    """Each document's versions, its chunks read in one call."""
    by_doc: dict[str, list[Chunk]] = {}
    for c in siblings(docs) if docs else []:
        by_doc.setdefault(c.doc_id or "", []).append(c)
    return {d: versions_of(d, by_doc.get(d, ()), as_of) for d in docs}


def top_k_freshness(tops: Sequence[tuple[str, Sequence[str]]], chunks: Mapping[str, Chunk],
                    siblings: Callable[[Sequence[str]], list[Chunk]], as_of: date, k: int
                    ) -> dict[str, Any]:
    """Freshness without expected chunks (the monitor's probes): each query (id, top-K ids)
    checked on the documents its top K reaches; ``chunks`` holds the top-K chunks."""
    doc_of = {cid: c.doc_id for cid, c in chunks.items()
              if c.doc_id is not None and c.valid_from is not None}
    versions = _versions(sorted(set(doc_of.values())), siblings, as_of)
    per_query = [(qid, query_freshness(top, [doc_of[c] for c in top if c in doc_of], versions))
                 for qid, top in tops]
    top_dates = [(c.valid_from, c.valid_to) if (c := chunks.get(cid)) is not None
                 else (None, None) for _, top in tops for cid in top]
    return measure_freshness(per_query, top_dates, as_of=as_of, k=k, scope="top_k")


def freshness_check(figures: Mapping[str, Any] | None, limit: float | None
                    ) -> tuple[list[Reason], list[Check]]:
    """The policy's ``min_freshness``: a STOP reason naming the stale queries when the share is
    under it; "not applied" when nothing could be measured."""
    if limit is None:
        return [], []
    share = None if figures is None else figures.get("share")
    if figures is None or share is None:
        why = NOT_DATED if figures is None else figures.get("note") or NOT_DATED
        return [], [Check("min_freshness", "freshness", "not applied",
                          f"{why} (min_freshness {limit:g})", {"limit": limit})]
    n, fresh = figures["queries"], figures["fresh"]
    values = {"value": share, "limit": limit, "queries": n, "fresh": fresh,
              "as_of": figures["as_of"]}
    if share + 1e-12 >= limit:
        return [], [Check("min_freshness", "freshness", "pass",
                          f"freshness {share:.3f} >= {limit:g} ({fresh} of {n} queries)",
                          values)]
    shown = "; ".join(f"{s['query']} ({s['why']})" for s in figures["stale"][:8])
    message = (f"freshness {share:.3f} is below {limit:g}: {n - fresh} of {n} queries whose "
               f"facts have dated versions do not rank the newest valid one (as of "
               f"{figures['as_of']}) above the older ones: {shown}")
    return ([Reason("min_freshness", message, tuple(figures.get("stale_queries") or ()))],
            [Check("min_freshness", "freshness", "stop", message, values)])


def freshness_line(figures: Mapping[str, Any]) -> str:
    """The run's freshness in one line for every report; never a number without dates."""
    if not figures.get("measured"):
        return f"freshness: {figures.get('note') or NOT_DATED}"
    parts = []
    if figures.get("share") is not None:
        whose = ("queries", "of their facts") if figures.get("scope") == "expected" else (
            "probes", "of each document their top k reaches")
        parts.append(f"{figures['fresh']} of {figures['queries']} {whose[0]} rank the newest "
                     f"valid version {whose[1]} above the older ones ({figures['share']:.3f})")
    elif figures.get("note"):
        parts.append(str(figures["note"]))
    n = len(figures.get("unreached") or ())
    if n:
        parts.append(f"{n} quer{'y' if n == 1 else 'ies'} with no version of the fact in the "
                     "top K (not counted: a recall failure)")
    r = figures["results"]
    if r["median_age_days"] is not None:
        parts.append(f"the top-{figures['k']} results' median age {r['median_age_days']:g} days "
                     f"(oldest {r['oldest_age_days']}) over {r['valid']} dated valid results")
    extra = [f"{r['expired']} expired" if r["expired"] else "",
             f"{r['not_yet_valid']} not yet valid" if r["not_yet_valid"] else "",
             f"{r['undated']} undated" if r["undated"] else ""]
    if any(extra):
        parts.append("of the top-K results " + ", ".join(e for e in extra if e))
    return f"freshness as of {figures['as_of']}: " + "; ".join(parts)
