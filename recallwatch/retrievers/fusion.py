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

Every query is fused at once, on flat numpy arrays (one entry per hit, then one per distinct
chunk of a query): the results are those of fusing each query alone, to the last bit (sums are
added in list order, as Python's ``sum``; zmuv takes each list's ``np.mean`` and ``np.std``). A
list that names a chunk twice keeps it once, at its first rank with its last score, as a dict
made from the list would. Fused scores are Python floats.
"""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, pairwise
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch._registry import suggest
from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit

if TYPE_CHECKING:
    from recallwatch.metrics import Run

__all__ = ["METHODS", "NORMS", "SCORE_METHODS", "fuse", "fuse_runs", "normalize"]

METHODS = ("rrf", "combsum", "combmnz", "combmax", "wsum")
SCORE_METHODS = ("combsum", "combmnz", "combmax", "wsum")  # those that read scores: normalised
NORMS = ("min-max", "max", "sum", "zmuv", "rank", "borda")
_EPS = 1e-9

Scores = dict[str, float]  # one query's hits, in rank order (a dict keeps insertion order)
Array = np.ndarray[Any, Any]


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
    with _collector_paused():
        hits = _Hits.build([runs[n] for n in names], counts.pop(), scores=method != "rrf")
        return _rank(hits, _combine(hits, method, norm, k, w))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off: fusion makes millions of lists and pairs, none in a cycle,
    and each collection would walk them and the caller's lists again."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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
    check_method("combsum", norm)
    h = _Hits.build([[list(hits.items())] for hits in lists], 1)
    if norm == "borda":
        chunks = h.ids_of(np.arange(h.chunks))
        return [dict(zip(chunks, row)) for row in _borda(h).tolist()]
    values = _normalized(h, norm).tolist()
    ids = h.ids_of(h.chunk)
    return [dict(zip(ids[a:b], values[a:b])) for a, b in pairwise(h.starts.tolist())]


@dataclass(frozen=True)
class _Hits:
    """Every query's lists as flat arrays, computed on all queries at once: the hits query after
    query, each query's lists in the order given, each list in rank order. A chunk a list holds
    twice is kept once, at its first rank with its last score (as a dict made from the list)."""

    queries: int
    lists: int  # per query
    ids: list[Any]  # per hit (as given, repeats included): its chunk id
    where: Array  # per chunk (each query's distinct chunks in first-met order, query after
    # query): the hit in ``ids`` where its query first met it
    first: Array  # query q's chunks are [first[q], first[q + 1])
    starts: Array  # list (q, r)'s hits are [starts[q * lists + r], starts[q * lists + r + 1])
    chunk: Array  # per hit: its chunk
    col: Array  # per hit: its list's place among its query's lists (r)
    score: Array  # per hit: its score, float64

    @classmethod
    def build(cls, columns: Sequence[Sequence[Sequence[Hit]]], queries: int, *,
              scores: bool = True) -> _Hits:
        """From one sequence of lists per retriever (all of ``queries`` lists); without the
        scores (an empty ``score``) when they are not read."""
        lists = list(chain.from_iterable(zip(*columns)))  # query-major: q0's lists, q1's, …
        lens = np.fromiter(map(len, lists), np.int64, count=len(lists))
        hits = list(chain.from_iterable(lists))
        ids = list(map(itemgetter(0), hits))
        score = (np.fromiter(map(itemgetter(1), hits), np.float64, count=len(hits)) if scores
                 else np.empty(0))
        by_query = np.zeros(queries + 1, np.int64)
        np.cumsum(lens.reshape(queries, len(columns)).sum(axis=1), out=by_query[1:])
        first_hit = _first_hits(ids, by_query.tolist())
        new = first_hit == np.arange(len(ids))  # the hit where its query first met its chunk
        seen = np.zeros(len(ids) + 1, np.int64)
        np.cumsum(new, out=seen[1:])
        chunk = (seen[1:] - 1)[first_hit]
        col = np.repeat(np.tile(np.arange(len(columns)), queries), lens)
        h = cls(queries, len(columns), ids, np.flatnonzero(new), seen[by_query], _offsets(lens),
                chunk, col, score)
        return h._once() if h.present().sum() < len(ids) else h

    @property
    def chunks(self) -> int:
        return len(self.where)

    def ids_of(self, chunks: Array) -> list[Any]:
        """The ids of these chunks."""
        return list(map(self.ids.__getitem__, self.where[chunks].tolist()))

    def present(self) -> Array:
        """(lists, chunks): whether list r of its query holds the chunk."""
        out = np.zeros((self.lists, self.chunks), bool)
        out[self.col, self.chunk] = True
        return out

    def lens(self) -> Array:
        lens: Array = np.diff(self.starts)
        return lens

    def position(self) -> Array:
        """Per hit: its rank in its list, from 0."""
        rank: Array = np.arange(len(self.chunk)) - np.repeat(self.starts[:-1], self.lens())
        return rank

    def matrix(self, values: Array, absent: float) -> Array:
        """(lists, chunks): each hit's value, ``absent`` where a list lacks the chunk."""
        out = np.full((self.lists, self.chunks), absent)
        out[self.col, self.chunk] = values
        return out

    def _once(self) -> _Hits:
        """Without repeats of a chunk in one list: first rank, last score."""
        key = self.chunk * self.lists + self.col
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        head = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        tail = np.r_[head[1:], len(order)] - 1
        keep = np.zeros(len(key), bool)
        keep[order[head]] = True
        score = self.score.copy()
        if len(score):
            score[order[head]] = self.score[order[tail]]
            score = score[keep]
        lens = np.bincount(np.repeat(np.arange(len(self.starts) - 1), self.lens())[keep],
                           minlength=len(self.starts) - 1)
        return _Hits(self.queries, self.lists, self.ids, self.where, self.first, _offsets(lens),
                     self.chunk[keep], self.col[keep], score)


def _offsets(lens: Array) -> Array:
    out = np.zeros(len(lens) + 1, np.int64)
    np.cumsum(lens, out=out[1:])
    return out


def _first_hits(ids: list[Any], bounds: list[int]) -> Array:
    """Per hit: the index of the first hit of its query with the same chunk (one small dict per
    query, so a chunk is the same chunk by Python's equality, as in a dict). Counted within each
    query, so the counts are mostly Python's cached small integers."""
    def seen() -> Callable[[Any, int], int]:
        first: dict[Any, int] = {}
        return first.setdefault

    firsts: Iterator[int] = chain.from_iterable(
        map(seen(), ids[a:b], range(b - a)) for a, b in pairwise(bounds))
    within = np.fromiter(firsts, np.int64, count=len(ids))
    starts = np.asarray(bounds, dtype=np.int64)
    out: Array = within + np.repeat(starts[:-1], np.diff(starts))
    return out


def _normalized(h: _Hits, norm: str) -> Array:
    """Every hit's score normalised within its list (any norm but borda)."""
    lens, s = h.lens(), h.score
    if norm == "rank":
        rank: Array = 1 - h.position() / np.repeat(lens, lens)
        return rank
    full = lens > 0
    at, n = h.starts[:-1][full], lens[full]
    if not len(at):
        return s.copy()

    def each(v: Array) -> Array:  # a per-list value, repeated for each of the list's hits
        return np.repeat(v, n)

    if norm == "zmuv":
        mean, std = _mean_std(s, at, n)
        return (s - each(mean)) / each(np.maximum(std, _EPS))
    lo, hi = np.minimum.reduceat(s, at), np.maximum.reduceat(s, at)
    if norm == "max":
        return s / each(np.maximum(hi, _EPS))
    if norm == "min-max":
        return (s - each(lo)) / each(np.maximum(hi - lo, _EPS))
    # sum
    return (s - each(lo)) / each(np.maximum(_sums(s, at, n) - lo * n, _EPS))


def _sums(s: Array, at: Array, n: Array) -> Array:
    """Each list's sum, added in rank order (as Python's ``sum``), a rank at a time over the
    lists that long."""
    order = np.argsort(-n, kind="stable")
    longest_first, base = n[order], at[order]
    acc = s[base]
    for j in range(1, int(longest_first[0])):
        m = int(np.searchsorted(-longest_first, -j))  # the lists longer than j
        acc[:m] += s[base[:m] + j]
    out = np.empty_like(acc)
    out[order] = acc
    return out


def _mean_std(s: Array, at: Array, n: Array) -> tuple[Array, Array]:
    """Each list's ``np.mean`` and ``np.std``, to the last bit: the lists of one length as the
    rows of a matrix (numpy sums a row as it sums a list alone; ``np.add.reduceat`` does not)."""
    mean, std = np.empty(len(n)), np.empty(len(n))
    for length in np.unique(n).tolist():
        rows = np.flatnonzero(n == length)
        matrix = s[at[rows, None] + np.arange(length)]
        mean[rows], std[rows] = matrix.mean(axis=1), matrix.std(axis=1)
    return mean, std


def _borda(h: _Hits) -> Array:
    """(lists, chunks): every chunk of the query in every list, ``1 - (rank - 1) / candidates``
    where the list holds it, ``0.5 - (n - 1) / (2 * candidates)`` where it does not."""
    candidates = np.diff(h.first)
    lens = h.lens().reshape(h.queries, h.lists)
    c = np.maximum(candidates, 1)[:, None]  # a query without candidates has no chunk to score
    absent = 0.5 - (lens - 1) / (2 * c)
    out = np.repeat(absent, candidates, axis=0).T.copy()
    per_list = np.repeat(candidates, h.lists)
    out[h.col, h.chunk] = 1 - h.position() / np.repeat(per_list, h.lens())
    return out


def _combine(h: _Hits, method: str, norm: str | None, k: int, weights: list[float]) -> Array:
    """Every chunk's fused score (aligned with ``h.chunks``)."""
    if norm == "borda":
        matrix = _borda(h)  # every list holds every chunk
    else:
        values = (1 / (k + h.position() + 1) if method == "rrf"  # ranks alone
                  else h.score if norm is None else _normalized(h, norm))
        matrix = h.matrix(values, -np.inf if method == "combmax" else 0.0)
    if method == "combmax":
        best: Array = matrix.max(axis=0)  # no floor: the best score in any list, any value
        return best
    scale = weights if method == "wsum" else [1.0] * h.lists
    fused: Array = scale[0] * matrix[0]
    for w, row in zip(scale[1:], matrix[1:]):
        fused += w * row  # in list order, as the sum over the lists (0 where absent)
    if method == "combmnz":
        fused *= h.lists if norm == "borda" else h.present().sum(axis=0)
    return fused


def _rank(h: _Hits, fused: Array) -> list[list[Hit]]:
    """Each query's chunks by fused score, best first, exact ties by id descending (as
    :func:`recallwatch.vectors.measured_tie_order` orders them)."""
    order = _by_score(fused, h.first)
    ids = np.array(h.ids, dtype=object)[h.where[order]]  # each chunk's id, in that order
    _ties_by_id_descending(h.first, fused[order], order, ids)
    listed, scores = ids.tolist(), fused[order].tolist()
    return [list(zip(listed[a:b], scores[a:b])) for a, b in pairwise(h.first.tolist())]


def _by_score(fused: Array, first: Array) -> Array:
    """The chunks query by query, each query's by fused score, best first."""
    queries = len(first) - 1
    if queries and len(fused) >= 16 * queries:  # long lists: a small sort per query is quicker
        bounds = first.tolist()
        negative = -fused
        return np.concatenate([np.arange(0), *(a + np.argsort(negative[a:b])
                                               for a, b in pairwise(bounds))])
    return np.lexsort((-fused, np.repeat(np.arange(queries), np.diff(first))))


def _ties_by_id_descending(first: Array, scores: Array, order: Array, ids: Array) -> None:
    """Reorders ``order`` and ``ids`` (the chunks ranked query by query, ``first`` their
    queries' bounds; ``scores`` theirs) in place so that each run of exactly equal scores in one
    query is by id descending. The ids are compared as Python compares them."""
    query = np.repeat(np.arange(len(first) - 1), np.diff(first))
    tie = (scores[1:] == scores[:-1]) & (query[1:] == query[:-1])  # i ties with i + 1
    if not tie.any():
        return
    head = np.flatnonzero(np.r_[tie, False] & ~np.r_[False, tie])  # where each run starts
    size = np.flatnonzero(np.r_[False, tie] & ~np.r_[tie, False]) - head + 1
    pairs = head[size == 2]  # most runs: one comparison each
    swap = pairs[np.less(ids[pairs], ids[pairs + 1])]
    order[swap], order[swap + 1] = order[swap + 1], order[swap]
    ids[swap], ids[swap + 1] = ids[swap + 1], ids[swap]
    for n in np.unique(size[size > 2]).tolist():  # the runs of one length as a matrix's rows
        rows = head[size == n][:, None] + np.arange(n)
        # an object array sorts by Python's comparisons: str by code point, as ``sorted``
        descending = np.take_along_axis(rows, np.argsort(ids[rows], axis=1)[:, ::-1], axis=1)
        order[rows], ids[rows] = order[descending], ids[descending]
