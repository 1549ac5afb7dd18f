"""Simulated users with known relevance and known position bias, seeded.

Everything the online tools claim is checked here against a truth that real logs never reveal:
each (query, document) pair has a true grade 0–3, each grade a known click probability, each
rank a known chance of being looked at. A click model must recover the grades' order from the
clicks alone; an A/B test or an interleaving experiment must find the better of two rankers whose
difference is known. The same seed gives the same log.

User models (``user=``):

- ``"pbm"``: the user looks at rank r with probability ``examination[r]`` (default ``1 / r``)
  and clicks a looked-at result with probability ``ATTRACTIVENESS[grade]``; looks and clicks are
  independent across ranks.
- ``"cascade"``: the dynamic Bayesian network's user reads from the top; clicks an attractive
  result, is then satisfied with probability ``SATISFACTION[grade]`` and stops; otherwise goes on
  to the next result with probability ``persistence``.
- ``"cm"``: the cascade model's user reads from the top, never gives up, and stops at the first
  click (the cascade user with satisfaction 1 and persistence 1); results below it are never
  seen.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import numpy as np

from recallwatch.errors import UsageError

__all__ = [
    "ATTRACTIVENESS",
    "SATISFACTION",
    "Collection",
    "EncodedBatch",
    "UserModel",
    "make_collection",
    "simulate_ab_log",
    "simulate_batches",
    "simulate_clicks",
    "simulate_interleaved_log",
    "simulate_log",
]

Array = np.ndarray[Any, Any]
UserModel = Literal["pbm", "cascade", "cm"]

#: P(click | looked at) by true grade 0, 1, 2, 3.
ATTRACTIVENESS = np.array([0.05, 0.2, 0.5, 0.85])
#: P(satisfied, stop | clicked) by true grade (cascade user).
SATISFACTION = np.array([0.05, 0.2, 0.5, 0.8])
#: Share of documents of each grade 0, 1, 2, 3 in a simulated pool.
GRADE_SHARES = (0.5, 0.25, 0.15, 0.1)


@dataclass(frozen=True)
class Collection:
    """``grades[q, j]``: the true grade of document j of query q (ids ``q{q}``, ``q{q}-d{j}``).

    ``bias[q, j]`` is a fixed score offset the simulated production ranker adds to document j
    of query q (mostly small, a few large: results the ranker systematically over- or
    under-rates, which is what makes raw click-through rates misleading)."""

    grades: Array  # int64[Q, D]
    bias: Array  # float64[Q, D]

    @property
    def n_queries(self) -> int:
        return int(self.grades.shape[0])

    @property
    def docs_per_query(self) -> int:
        return int(self.grades.shape[1])

    def query_id(self, q: int) -> str:
        return f"q{q}"

    def doc_id(self, q: int, j: int) -> str:
        return f"q{q}-d{j}"

    def qrels(self) -> dict[str, dict[str, int]]:
        """The true grades as a qrels mapping {query id: {document id: grade}}."""
        return {self.query_id(q): {self.doc_id(q, j): int(g) for j, g in enumerate(row)}
                for q, row in enumerate(self.grades.tolist())}

    def ranking(self, noise: float, seed: int) -> Array:
        """A fixed ranker: documents of each query by ``grade + bias + noise·N(0, 1)``,
        descending. Less noise, better ranker. int64[Q, D] of document indexes."""
        rng = np.random.default_rng(seed)
        score = self.grades + self.bias + noise * rng.standard_normal(self.grades.shape)
        return np.argsort(-score, axis=1, kind="stable")


def make_collection(n_queries: int, docs_per_query: int = 20, *, seed: int = 0,
                    bias_scale: float = 1.5) -> Collection:
    """A pool of ``docs_per_query`` graded documents per query (grades drawn with
    ``GRADE_SHARES``), with ranker biases of scale ``bias_scale``."""
    if n_queries < 1 or docs_per_query < 1:
        raise UsageError("a simulated collection needs at least one query and one document")
    rng = np.random.default_rng(seed)
    grades = rng.choice(4, size=(n_queries, docs_per_query), p=GRADE_SHARES)
    # a Laplace offset: most documents almost unbiased, some strongly pushed up or down
    bias = bias_scale * rng.laplace(0.0, 0.5, size=grades.shape)
    return Collection(grades.astype(np.int64), bias)


def examination_by_rank(k: int, eta: float = 1.0) -> Array:
    """The known position bias: P(look at rank r) = 1 / r**eta, r = 1..k."""
    return 1.0 / np.arange(1, k + 1, dtype=np.float64) ** eta


def simulate_clicks(grades: Array, rng: np.random.Generator, *, user: UserModel = "pbm",
                    examination: Array | None = None, persistence: float = 0.9,
                    attractiveness: Array | None = None) -> Array:
    """Clicks of simulated users on lists of true grades int[B, K] (-1 = empty slot): bool[B, K].

    ``attractiveness``: P(click | looked at) by grade 0–3 (default :data:`ATTRACTIVENESS`).
    Vectorised over the B impressions (the cascade user loops over the K ranks)."""
    grades = np.asarray(grades)
    b, k = grades.shape
    valid = grades >= 0
    by_grade = _attractiveness(attractiveness)
    attract = np.where(valid, by_grade[np.clip(grades, 0, 3)], 0.0)
    if user == "pbm":
        exam = examination_by_rank(k) if examination is None else np.asarray(examination)[:k]
        return rng.random((b, k)) < attract * exam
    if user not in ("cascade", "cm"):
        raise UsageError(f"unknown simulated user {user!r}; valid: cascade, cm, pbm")
    satisfaction = SATISFACTION if user == "cascade" else np.ones(4)
    if user == "cm":
        persistence = 1.0
    satisfy = np.where(valid, satisfaction[np.clip(grades, 0, 3)], 0.0)
    clicks = np.zeros((b, k), dtype=bool)
    active = np.ones(b, dtype=bool)
    draws = rng.random((3, b, k))
    for r in range(k):
        clicked = active & (draws[0, :, r] < attract[:, r])
        clicks[:, r] = clicked
        satisfied = clicked & (draws[1, :, r] < satisfy[:, r])
        active = active & ~satisfied & (draws[2, :, r] < persistence)
    return clicks


def _attractiveness(values: Array | None) -> Array:
    if values is None:
        return ATTRACTIVENESS
    out = np.asarray(values, dtype=np.float64)
    if out.shape != (4,) or not np.all((out >= 0.0) & (out <= 1.0)):
        raise UsageError(f"attractiveness: expected four probabilities (grades 0, 1, 2, 3), "
                         f"found {values!r}")
    return out


@dataclass(frozen=True)
class EncodedBatch:
    """Impressions already integer-encoded, for ``ClickCounter.add_encoded``: query index int[B],
    document code ``q * docs_per_query + j`` int[B, K], clicks bool[B, K]."""

    queries: Array
    docs: Array
    clicks: Array


def _shown(collection: Collection, queries: Array, k: int, noise: float,
           rng: np.random.Generator) -> Array:
    """The production ranker's top k for each impression: grade + bias + fresh noise, so one
    query's list varies from impression to impression (as real rankers' do, with freshness,
    personalisation and index updates) and the same document is seen at several ranks."""
    score = (collection.grades[queries] + collection.bias[queries]
             + noise * rng.standard_normal((queries.size, collection.docs_per_query)))
    return np.argsort(-score, axis=1, kind="stable")[:, :k]


def simulate_batches(collection: Collection, n_impressions: int, *, k: int = 10,
                     user: UserModel = "pbm", noise: float = 1.0, seed: int = 0,
                     batch_size: int = 100_000, persistence: float = 0.9,
                     attractiveness: Array | None = None) -> Iterator[EncodedBatch]:
    """``n_impressions`` simulated impressions (uniform over queries) as encoded batches: a
    generator, so ten million impressions never exist in memory at once. ``attractiveness``
    replaces :data:`ATTRACTIVENESS` (P(click | looked at) by grade)."""
    if k > collection.docs_per_query:
        raise UsageError(f"k={k} exceeds the {collection.docs_per_query} documents per query")
    rng = np.random.default_rng(seed)
    d = collection.docs_per_query
    done = 0
    while done < n_impressions:
        b = min(batch_size, n_impressions - done)
        queries = rng.integers(0, collection.n_queries, b)
        shown = _shown(collection, queries, k, noise, rng)
        grades = np.take_along_axis(collection.grades[queries], shown, axis=1)
        clicks = simulate_clicks(grades, rng, user=user, persistence=persistence,
                                 attractiveness=attractiveness)
        yield EncodedBatch(queries, queries[:, None] * d + shown, clicks)
        done += b


def simulate_log(collection: Collection, n_impressions: int, *, k: int = 10,
                 user: UserModel = "pbm", noise: float = 1.0, seed: int = 0,
                 start: datetime | None = None, attractiveness: Array | None = None,
                 ) -> Iterator[dict[str, Any]]:
    """The same impressions as :func:`simulate_batches`, as interaction-log records (dicts
    ready for one JSON line each), one impression per second from ``start``."""
    t0 = start or datetime(2025, 1, 1, tzinfo=UTC)
    i = 0
    for batch in simulate_batches(collection, n_impressions, k=k, user=user, noise=noise,
                                  seed=seed, batch_size=10_000, attractiveness=attractiveness):
        d = collection.docs_per_query
        for q, docs, clicks in zip(batch.queries.tolist(), batch.docs.tolist(),
                                   batch.clicks.tolist()):
            ids = [collection.doc_id(q, code - q * d) for code in docs]
            ts = t0 + timedelta(seconds=i)
            yield {
                "query_id": collection.query_id(q),
                "ts": _iso(ts),
                "shown": [{"id": doc} for doc in ids],
                "clicks": [{"id": doc, "ts": _iso(ts + timedelta(seconds=2 + 2 * r))}
                           for r, (doc, hit) in enumerate(zip(ids, clicks)) if hit],
            }
            i += 1


def simulate_ab_log(
    collection: Collection, ranking_a: Array, ranking_b: Array, n_users: int, *, k: int = 10,
    user: UserModel = "cascade", seed: int = 0, split: float = 0.5,
    impressions_per_user: float = 3.0, start: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """An A/B log: each user is assigned variant A (share ``split``) or B and issues 1 +
    Poisson(``impressions_per_user`` - 1) searches, each in its own session, over uniformly drawn
    queries; A shows ``ranking_a``'s top k, B ``ranking_b``'s. Clicks follow ``user``; time to a
    click grows with its rank; a satisfied click converts with probability 0.3; latency is
    log-normal around 40 ms (B 10 % slower)."""
    rng = np.random.default_rng(seed)
    t0 = start or datetime(2025, 1, 1, tzinfo=UTC)
    extra = max(impressions_per_user - 1.0, 0.0)
    tick = 0
    for u in range(n_users):
        variant = "A" if rng.random() < split else "B"
        ranking = ranking_a if variant == "A" else ranking_b
        n = 1 + int(rng.poisson(extra))
        queries = rng.integers(0, collection.n_queries, n)
        shown = ranking[queries, :k]
        grades = np.take_along_axis(collection.grades[queries], shown, axis=1)
        clicks = simulate_clicks(grades, rng, user=user)
        for s in range(n):
            q = int(queries[s])
            ts = t0 + timedelta(seconds=37 * tick)
            tick += 1
            ranks = np.flatnonzero(clicks[s])
            best = int(grades[s][ranks].max()) if ranks.size else -1
            converted = bool(best >= 2 and rng.random() < 0.3)
            latency = float(np.exp(rng.normal(np.log(40.0 if variant == "A" else 44.0), 0.3)))
            yield {
                "query_id": collection.query_id(q), "ts": _iso(ts),
                "user": f"u{u}", "session": f"u{u}-s{s}", "variant": variant,
                "shown": [{"id": collection.doc_id(q, int(j))} for j in shown[s]],
                "clicks": [{"id": collection.doc_id(q, int(shown[s][r])),
                            "ts": _iso(ts + timedelta(seconds=1.5 + 1.2 * int(r))),
                            "dwell_ms": int(rng.integers(2_000, 90_000))} for r in ranks],
                "conversion": converted, "latency_ms": round(latency, 3),
            }


def simulate_interleaved_log(
    collection: Collection, ranking_a: Array, ranking_b: Array, n_impressions: int, *,
    k: int = 10, user: UserModel = "cascade", seed: int = 0, start: datetime | None = None,
) -> Iterator[dict[str, Any]]:
    """Team-draft interleaved impressions of two rankers over uniformly drawn queries, with
    ``team`` on every shown item and clicks from ``user``."""
    from recallwatch.online.interleave import team_draft

    rng = np.random.default_rng(seed)
    t0 = start or datetime(2025, 1, 1, tzinfo=UTC)
    for i in range(n_impressions):
        q = int(rng.integers(0, collection.n_queries))
        picks = team_draft(ranking_a[q].tolist(), ranking_b[q].tolist(), k, rng)
        grades = collection.grades[q][[p.id for p in picks]][None, :]
        clicks = simulate_clicks(grades, rng, user=user)[0]
        ts = t0 + timedelta(seconds=i)
        yield {
            "query_id": collection.query_id(q), "ts": _iso(ts), "session": f"s{i}",
            "shown": [{"id": collection.doc_id(q, p.id), "team": p.team} for p in picks],
            "clicks": [{"id": collection.doc_id(q, picks[r].id),
                        "ts": _iso(ts + timedelta(seconds=2 + r))}
                       for r in np.flatnonzero(clicks).tolist()],
        }


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="milliseconds").replace("+00:00", "Z")
