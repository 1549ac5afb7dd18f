"""Is the golden set going stale? Two checks, each with its figures; a warning, never a verdict.

* **History**: how many consecutive runs of this dataset (this one included) used exactly this
  golden set (same content hash), and how much the corpus (the store's chunk count) grew since
  the first of them. Stale when the set is unchanged for ``unchanged_runs`` runs while the
  corpus grew by ``corpus_growth`` or more: new content that no query was written for.
* **Query log** (optional): the log's queries and the set's queries are embedded (with the
  run's embedder); the *centroid distance* is 1 − cosine between their mean directions (the
  log weighted by how often each text was asked). The log's distinct texts are grouped into
  ``topics`` clusters (spherical k-means, seeded); a topic is *covered* when at least one
  golden query is nearer its centre than any other topic's and at least as near as the least
  typical tenth of the topic's own queries, and the *topic coverage* is the
  share of the log's askings that fall in covered topics. Stale when the distance exceeds
  ``max_centroid_distance`` or the coverage falls below ``min_topic_coverage``; the uncovered
  topics are named by their most asked query.

At most :data:`MAX_LOG_TEXTS` distinct log texts are embedded (the most asked): the centroid
and the topics of a large log are those of what is asked most.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.vectors import normalise

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.embedders.base import Embedder
    from recallwatch.formats.golden import GoldenSet
    from recallwatch.formats.policy import StalenessSettings
    from recallwatch.history import History

__all__ = ["MAX_LOG_TEXTS", "check_staleness", "history_figures", "log_figures",
           "spherical_kmeans", "warnings_of"]

MAX_LOG_TEXTS = 5_000
_SEED = 0  # topics are a description of the log, not a random draw: one fixed seed


def history_figures(history: History, result: GateResult,
                    settings: StalenessSettings) -> dict[str, Any]:
    """Runs of this golden set in a row (``result`` included, recorded or not) and the corpus
    growth since the first of them."""
    name = result.dataset.get("name", "")
    earlier = [r for r in history.runs(dataset=name) if r.run_id != result.run_id]
    streak = []
    for r in earlier:  # newest first
        if r.dataset_hash != result.dataset_hash:
            break
        streak.append(r)
    first = streak[-1] if streak else None
    then = None
    if first is not None:
        then = history.load(first.run_id).store.get("count")
    now = result.store.get("count")
    growth = (now - then) / then if isinstance(now, int) and isinstance(then, int) and then \
        else None
    runs = len(streak) + 1
    stale = (runs >= settings.unchanged_runs and growth is not None
             and growth >= settings.corpus_growth)
    return {"unchanged_runs": runs, "since_run": first.run_id if first else result.run_id,
            "since": first.created_at if first else result.created_at,
            "corpus_then": then if first else now, "corpus_now": now,
            "corpus_growth": growth if first else 0.0 if now is not None else None,
            "stale": stale}


def spherical_kmeans(x: np.ndarray, weights: np.ndarray, k: int, *, seed: int = _SEED,
                     iterations: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """(centres, assignment) of unit vectors ``x`` into ``k`` clusters by cosine, weighted;
    k-means++ seeding. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    n = len(x)
    k = min(k, n)
    p = weights / weights.sum()
    centres = [x[rng.choice(n, p=p)]]
    for _ in range(1, k):
        d = np.clip(1.0 - np.max(x @ np.asarray(centres).T, axis=1), 0.0, None) * weights
        if d.sum() <= 0:
            break
        centres.append(x[rng.choice(n, p=d / d.sum())])
    c = np.asarray(centres)
    assign = np.argmax(x @ c.T, axis=1)
    for _ in range(iterations):
        new = np.zeros_like(c)
        np.add.at(new, assign, x * weights[:, None])
        empty = ~new.any(axis=1)
        new[empty] = c[empty]
        c = normalise(new)
        again = np.argmax(x @ c.T, axis=1)
        if np.array_equal(again, assign):
            break
        assign = again
    return c, assign


def log_figures(log: str | Path, golden: GoldenSet, embedder: Embedder,
                settings: StalenessSettings) -> dict[str, Any]:
    """Centroid distance and topic coverage between a query log and the golden set."""
    from recallwatch.judgments.sample import read_query_log

    qlog = read_query_log(log)
    texts: dict[str, int] = {}
    for (text, _), n in qlog.counts.items():
        texts[text] = texts.get(text, 0) + n
    ranked = sorted(texts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LOG_TEXTS]
    log_texts = [t for t, _ in ranked]
    weights = np.asarray([n for _, n in ranked], np.float64)
    lv = normalise(np.asarray(embedder.embed_queries(log_texts), np.float64))
    gv = normalise(np.asarray(embedder.embed_queries([q.text for q in golden.queries]),
                              np.float64))
    log_centre = (lv * weights[:, None]).sum(axis=0)
    golden_centre = gv.sum(axis=0)
    distance = 1.0 - float(normalise(log_centre[None])[0] @ normalise(golden_centre[None])[0])
    centres, assign = spherical_kmeans(lv, weights, settings.topics)
    # A golden query covers the topic nearest to it when it is at least as close to the centre
    # as the least typical tenth of the topic's own queries (else every topic "nearest" to some
    # unrelated golden query would count as covered).
    own = np.einsum("ij,ij->i", lv, centres[assign])
    floor = np.asarray([np.quantile(own[assign == t], 0.1) if (assign == t).any() else 1.0
                        for t in range(len(centres))])
    sims = gv @ centres.T
    nearest = np.argmax(sims, axis=1)
    covered = {int(t) for g, t in enumerate(nearest) if sims[g, t] >= floor[t]}
    share = np.bincount(assign, weights=weights, minlength=len(centres)) / weights.sum()
    coverage = float(sum(share[t] for t in covered))
    uncovered = []
    for t in sorted(set(range(len(centres))) - covered, key=lambda t: -share[t]):
        members = np.flatnonzero(assign == t)
        top = members[np.argmax(weights[members])]
        uncovered.append({"example": log_texts[top], "share": float(share[t])})
    stale = (distance > settings.max_centroid_distance
             or coverage < settings.min_topic_coverage)
    return {"path": str(log), "sha256": qlog.sha256, "askings": qlog.asked,
            "distinct_texts": len(texts), "embedded_texts": len(log_texts),
            "centroid_distance": distance, "topics": len(centres),
            "topics_covered": len(covered), "topic_coverage": coverage,
            "uncovered_topics": uncovered, "stale": stale}


def check_staleness(result: GateResult, golden: GoldenSet | None, settings: StalenessSettings,
                    *, history: History | None = None, log: str | Path | None = None,
                    embedder: Embedder | None = None) -> dict[str, Any]:
    """The ``staleness`` object of a gate result: the figures of each check that could run
    (``golden`` is needed only with a ``log``)."""
    out: dict[str, Any] = {"settings": settings.to_dict(), "history": None, "log": None}
    if history is not None:
        out["history"] = history_figures(history, result, settings)
    if log is not None:
        if golden is None:
            raise UsageError("the staleness of a query log is judged against its golden set: "
                             "give the golden set")
        if embedder is None:
            from recallwatch.embedders import get_embedder

            embedder = get_embedder()
        out["log"] = log_figures(log, golden, embedder, settings)
    out["stale"] = any((out[k] or {}).get("stale") for k in ("history", "log"))
    return out


def warnings_of(staleness: dict[str, Any]) -> list[str]:
    """The gate's warning lines for a stale set, each with its figures."""
    s = staleness["settings"]
    lines = []
    h = staleness.get("history")
    if h and h["stale"]:
        lines.append(
            f"stale golden set: unchanged for {h['unchanged_runs']} runs (since run "
            f"{h['since_run']}) while the corpus grew {h['corpus_growth']:.0%} "
            f"({h['corpus_then']} -> {h['corpus_now']} chunks; warns from "
            f"{s['unchanged_runs']} runs and {s['corpus_growth']:.0%}): sample new queries "
            "(`recallwatch golden sample`)")
    lg = staleness.get("log")
    if lg and lg["stale"]:
        missing = "; ".join(f"\"{u['example']}\" ({u['share']:.0%})"
                            for u in lg["uncovered_topics"][:3])
        lines.append(
            f"golden set drifting from the query log {lg['path']}: centroid distance "
            f"{lg['centroid_distance']:.3f} (warns above {s['max_centroid_distance']:.3f}), "
            f"topic coverage {lg['topic_coverage']:.0%} of askings in {lg['topics_covered']} of "
            f"{lg['topics']} topics (warns below {s['min_topic_coverage']:.0%})"
            + (f"; most asked uncovered: {missing}" if missing else ""))
    return lines
