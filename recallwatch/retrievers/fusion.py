"""Fusion: several retrievers' ranked lists for a query combined into one.

The methods and score normalisations are ranx's (``ranx.fuse``), with the same names for the
normalisations and the same results; the methods are named as in the literature:

* ``rrf`` — reciprocal rank fusion: a chunk scores ``1 / (k + rank)`` in each list it is in,
  summed over the lists; only ranks count, not scores (``k`` damps the top ranks, default 60).
* ``combsum`` — the sum of a chunk's (normalised) scores over the lists (0 where it is absent).
* ``combmnz`` — that sum times the number of lists the chunk is in (rewards agreement).
* ``combmax`` — the chunk's best (normalised) score in any list.
* ``wsum`` — a weighted sum: each list's scores times its weight, summed.

Scores from different retrievers are on different scales (a cosine similarity, a BM25 score), so
the comb methods and wsum first normalise each list, per query:

* ``min-max`` — ``(s - min) / (max - min)``: the best becomes 1, the worst 0.
* ``max`` — ``s / max``.
* ``sum`` — ``(s - min) / (sum - min * n)``: the scores above the worst, as shares.
* ``zmuv`` — zero mean, unit variance: ``(s - mean) / standard deviation``.
* ``rank`` — ``1 - (rank - 1) / n``: the scores are replaced by the position.
* ``borda`` — Borda points over every chunk any list returned for the query:
  ``1 - (rank - 1) / candidates``; a chunk a list did not return gets that list's average
  leftover points, ``0.5 - (n - 1) / (2 * candidates)``.

Edge cases follow ranx: a denominator below 1e-9 becomes 1e-9 (one hit, or all scores equal,
normalises to 0 under min-max); a query a list has no hits for contributes nothing; rrf reads only
ranks (a normalisation other than borda leaves them as they are; borda is refused). Ties in the
fused score (frequent with rrf: rank 1 in one list and 2 in the other, and the reverse) are ordered
by chunk id, descending, as the measures and trec_eval rank a run file
(:func:`recallwatch.vectors.measured_tie_order`): a fused list scored as it stands and its run file
evaluated give the same numbers. One departure: ranx's combmax counts a chunk a list did not return
as scoring -1e9 there, so a chunk whose scores are all below -1e9 (``max`` normalisation of a list
of negative scores divides by 1e-9) fuses to -1e9, tied with every other such chunk; here it fuses
to its best score, whatever its value.

Weights (wsum) are finite numbers >= 0, at least one above 0: a negative weight would turn a
list's order upside down, and nan or inf make every fused score nan or inf.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch._registry import suggest
from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit
from recallwatch.vectors import ties_as_measured

if TYPE_CHECKING:
    from recallwatch.metrics import Run

__all__ = ["METHODS", "NORMS", "SCORE_METHODS", "fuse", "fuse_runs", "normalize"]

METHODS = ("rrf", "combsum", "combmnz", "combmax", "wsum")
SCORE_METHODS = ("combsum", "combmnz", "combmax", "wsum")  # those that read scores: normalised
NORMS = ("min-max", "max", "sum", "zmuv", "rank", "borda")
_EPS = 1e-9

Scores = dict[str, float]  # one query's hits, in rank order (a dict keeps insertion order)


def fuse(runs: Mapping[str, Sequence[Sequence[Hit]]], *, method: str, norm: str | None = None,
         k: int = 60, weights: Mapping[str, float] | None = None) -> list[list[Hit]]:
    """The fused ranked list of every query (each at most as long as the union of its hits).

    ``runs`` maps a retriever's name to its lists, one per query, all for the same queries in the
    same order. ``norm`` applies before fusing (None: none); ``k`` is rrf's constant;
    ``weights`` (wsum only) gives every run's weight by name."""
    check_method(method, norm)
    names = list(runs)
    if not names:
        raise UsageError("fusion needs at least one retriever's results")
    counts = {len(runs[n]) for n in names}
    if len(counts) != 1:
        raise UsageError(f"the retrievers answered different numbers of queries: "
                         f"{ {n: len(runs[n]) for n in names} }")
    w: list[float] = []
    if method == "wsum":
        w = check_weights(weights, names)
    elif weights:
        raise UsageError(f"weights apply to wsum only, not to {method}")
    if method == "rrf" and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise UsageError(f"rrf's k must be a whole number >= 0, found {k!r}")
    n_queries = counts.pop()
    out = []
    for q in range(n_queries):
        lists = [dict(runs[n][q]) for n in names]
        if norm is not None:
            lists = normalize(lists, norm)
        out.append(_fuse_one(lists, method, k, w))
    return out


def fuse_runs(runs: Sequence[Any] | Mapping[str, Any], *, method: str = "rrf",
              norm: str | None = "default", k: int = 60,
              weights: Sequence[float] | Mapping[str, float] | None = None) -> Run:
    """Runs in, one run out: :func:`fuse` per query, with a pipeline file's methods,
    normalisations and defaults (``norm``: min-max for the comb methods and wsum, none for rrf;
    None: none). ``runs``: a list of runs, or a mapping name -> run (each a :class:`Run`, a
    ``{query_id: {doc_id: score}}`` dict, a DataFrame or a run file's path); ``weights``
    (wsum): one per run, in order, or by name. A query some runs lack takes what the others
    give; the fused run keeps each query's fused order (ties: the order first met)."""
    from recallwatch.metrics import Run

    named = _named_runs(runs)
    if norm == "default":
        norm = "min-max" if method in SCORE_METHODS else None
    if weights is not None and not isinstance(weights, Mapping):
        if isinstance(weights, str) or len(weights) != len(named):
            raise UsageError(f"weights: expected one per run ({len(named)}), in order, or a "
                             f"mapping by name ({', '.join(named)}); found {weights!r}")
        weights = dict(zip(named, weights, strict=True))
    ranked = {name: run.to_dict() for name, run in named.items()}
    queries = list(dict.fromkeys(q for lists in ranked.values() for q in lists))
    per_query = {name: [list(lists.get(q, {}).items()) for q in queries]
                 for name, lists in ranked.items()}
    fused = fuse(per_query, method=method, norm=norm, k=k, weights=weights)
    ids = {q: [c for c, _ in hits] for q, hits in zip(queries, fused, strict=True)}
    scores = [s for hits in fused for _, s in hits]
    return Run.from_ranked(ids, scores=scores)


def _named_runs(runs: Sequence[Any] | Mapping[str, Any]) -> dict[str, Run]:
    """Each run by name: the mapping's keys, else 1, 2, … in the order given."""
    from recallwatch.metrics import Run

    if isinstance(runs, Mapping):
        named = {str(name): Run.of(run) for name, run in runs.items()}
    elif isinstance(runs, Sequence) and not isinstance(runs, str):
        named = {str(i): Run.of(run) for i, run in enumerate(runs, start=1)}
    else:
        raise UsageError(f"runs: expected a list of runs or a mapping name -> run; found "
                         f"{type(runs).__name__}")
    if not named:
        raise UsageError("runs: give at least one run to fuse")
    return named


def check_method(method: str, norm: str | None) -> None:
    if method not in METHODS:
        raise UsageError(f"unknown fusion method {method!r}{suggest(method, list(METHODS))}; "
                         f"valid: {', '.join(METHODS)}")
    if norm is not None and norm not in NORMS:
        raise UsageError(f"unknown normalisation {norm!r}{suggest(norm, list(NORMS))}; "
                         f"valid: {', '.join(NORMS)}")
    if method == "rrf" and norm == "borda":
        # borda adds every candidate to every list, so the lists' ranks (all rrf reads) are lost
        raise UsageError("rrf reads only ranks, and borda gives every list every candidate: "
                         "use borda with combsum, combmnz, combmax or wsum, or rrf without norm")


def check_weights(weights: Mapping[str, object] | None, names: Sequence[str]) -> list[float]:
    """Every run's weight, in ``names`` order. Each is a finite number >= 0 and at least one is
    above 0 (a negative weight turns a list upside down, and nan or inf make every fused score
    nan or inf); a missing or unknown name, or a weight that is not one, is a UsageError naming
    it and its value."""
    if not weights:
        raise UsageError(f"wsum needs weights: give one per retriever ({', '.join(names)})")
    unknown = [n for n in weights if n not in names]
    if unknown:
        raise UsageError(f"weights name unknown retriever(s) {', '.join(map(repr, unknown))}"
                         f"{suggest(unknown[0], list(names))}; retrievers: {', '.join(names)}")
    missing = [n for n in names if n not in weights]
    if missing:
        raise UsageError(f"wsum needs a weight for every retriever; missing: {', '.join(missing)}")
    for n in names:
        w = weights[n]
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
                or w < 0:
            raise UsageError(f"the weight of {n!r} must be a finite number >= 0, found {w!r}")
    out = [float(weights[n]) for n in names]  # type: ignore[arg-type]  # numbers, checked above
    if not any(out):
        raise UsageError(f"the weights are all 0 ({', '.join(names)}): give at least one "
                         "retriever a weight above 0")
    return out


def normalize(lists: list[Scores], norm: str) -> list[Scores]:
    """One query's lists, each normalised (``borda`` looks at all the lists together)."""
    if norm == "borda":
        candidates = len({c for hits in lists for c in hits})
        return [_borda(hits, lists, candidates) for hits in lists]
    return [_NORMS[norm](hits) for hits in lists]


def _min_max(hits: Scores) -> Scores:
    if not hits:
        return {}
    lo, hi = min(hits.values()), max(hits.values())
    d = max(hi - lo, _EPS)
    return {c: (s - lo) / d for c, s in hits.items()}


def _max(hits: Scores) -> Scores:
    if not hits:
        return {}
    d = max(max(hits.values()), _EPS)
    return {c: s / d for c, s in hits.items()}


def _sum(hits: Scores) -> Scores:
    if not hits:
        return {}
    lo = min(hits.values())
    d = max(sum(hits.values()) - lo * len(hits), _EPS)
    return {c: (s - lo) / d for c, s in hits.items()}


def _zmuv(hits: Scores) -> Scores:
    if not hits:
        return {}
    values = np.fromiter(hits.values(), dtype=np.float64)
    mean, d = float(np.mean(values)), max(float(np.std(values)), _EPS)
    return {c: (s - mean) / d for c, s in hits.items()}


def _rank(hits: Scores) -> Scores:
    n = len(hits)
    return {c: 1 - i / n for i, c in enumerate(hits)}


def _borda(hits: Scores, lists: list[Scores], candidates: int) -> Scores:
    n = len(hits)
    position = {c: i for i, c in enumerate(hits)}
    absent = 0.5 - (n - 1) / (2 * candidates) if candidates else 0.0
    every = dict.fromkeys(c for other in lists for c in other)  # the candidates, first-met order
    return {c: (1 - position[c] / candidates) if c in position else absent for c in every}


_NORMS = {"min-max": _min_max, "max": _max, "sum": _sum, "zmuv": _zmuv, "rank": _rank}


def _fuse_one(lists: list[Scores], method: str, k: int, weights: list[float]) -> list[Hit]:
    fused: dict[str, float] = {}
    if method == "rrf":
        for hits in lists:
            for i, c in enumerate(hits):
                fused[c] = fused.get(c, 0.0) + 1 / (k + i + 1)
    elif method == "combmax":
        for hits in lists:
            for c, s in hits.items():
                fused[c] = max(fused[c], s) if c in fused else s  # no floor: any value
    else:
        order = dict.fromkeys(c for hits in lists for c in hits)
        for c in order:
            present = [(i, hits[c]) for i, hits in enumerate(lists) if c in hits]
            if method == "combsum":
                fused[c] = sum(s for _, s in present)
            elif method == "combmnz":
                fused[c] = sum(s for _, s in present) * len(present)
            else:  # wsum
                fused[c] = sum(weights[i] * s for i, s in present)
    return ties_as_measured(sorted(fused.items(), key=lambda item: -item[1]))
