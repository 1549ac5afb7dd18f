"""Join a run with its qrels and rank it, once, for every measure.

The result keeps only what every supported measure depends on: for each query, the rank of each
retrieved document whose grade is >= 1. Judged non-relevant and unjudged documents still take
their rank (they push relevant ones down) but need no row of their own. Ranking follows trec_eval:
score descending, then document id descending (byte order, as ``strcmp``).

Most run files are already written in that order, so the common case costs a few linear passes;
only an out-of-order run pays for a sort. A run whose queries come in blocks (the usual file) is
joined on a grid, one row per query (:mod:`recallwatch.metrics._keys`): each relevant judgment is
looked up in its query's row only, and only rows out of order are sorted. Other runs take the
general path (dictionary codes, one global sort); both give the same ranking, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from recallwatch.formats.arrow import from_numpy, to_numpy
from recallwatch.metrics._data import uniform_blocks
from recallwatch.metrics._keys import PAD, Blocks

if TYPE_CHECKING:
    from recallwatch.metrics._data import Qrels, Run
    from recallwatch.metrics._types import Dcg

__all__ = ["Others", "Ranking", "rank_run"]

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Others:
    """Retrieved documents judged with a grade <= 0, grouped by query, in rank order (a grade
    < 0 marks a document pooled but not judged, as trec_eval reads it)."""

    qidx: Array
    rank: Array
    grade: Array
    graded: Array  # float64 per query: qrels entries with a grade >= 0, retrieved or not


@dataclass
class Ranking:
    """Retrieved documents with grade >= 1, grouped by query, in rank order within each query."""

    n_queries: int
    qidx: Array  # evaluated-query index of each row
    rank: Array  # 1-based rank of the document in its query's ranking
    grade: Array  # its judged grade (>= 1)
    judged_qidx: Array  # every qrels entry with grade >= 1: its query index ...
    judged_grade: Array  # ... and its grade (ideal rankings and |rel| come from these)
    num_ret: Array  # float64: documents retrieved per query (0 for a query absent from the run)
    # retrieved documents judged with a grade <= 0 (negative ones included), in rank order within
    # each query; None unless rank_run was asked for them (``judged=True``)
    other: Others | None = None
    _cache: dict[tuple[Any, ...], Array] = field(default_factory=dict, repr=False)

    def _cached(self, key: tuple[Any, ...], compute: Any) -> Array:
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def per_query(self, qidx: Array, weights: Array | None = None) -> Array:
        """Sum ``weights`` (or count rows) per query, as float64 over all evaluated queries."""
        return np.bincount(qidx, weights=weights, minlength=self.n_queries).astype(np.float64)

    def num_rel(self, rel: int) -> Array:
        """|rel|: judged documents with grade >= rel, per query (retrieved or not)."""
        return self._cached(
            ("num_rel", rel),
            lambda: self.per_query(self.judged_qidx[self.judged_grade >= rel]),
        )

    def relevant(self, rel: int, cutoff: int | None = None) -> tuple[Array, Array]:
        """(query index, rank) of retrieved documents with grade >= rel and rank <= cutoff."""

        def compute() -> Array:
            keep = self.grade >= rel
            if cutoff is not None:
                keep &= self.rank <= cutoff
            return np.flatnonzero(keep)

        rows = self._cached(("relevant", rel, cutoff), compute)
        return self.qidx[rows], self.rank[rows]

    def count(self, rel: int, cutoff: int | None = None) -> Array:
        """Relevant documents retrieved at rank <= cutoff, per query."""
        return self._cached(
            ("count", rel, cutoff), lambda: self.per_query(self.relevant(rel, cutoff)[0])
        )

    def first_rank(self, rel: int) -> Array:
        """Rank of the first relevant document per query; 0 where none was retrieved."""

        def compute() -> Array:
            qidx, rank = self.relevant(rel)
            first = _block_starts(qidx)
            out = np.zeros(self.n_queries, dtype=np.float64)
            out[qidx[first]] = rank[first]
            return out

        return self._cached(("first_rank", rel), compute)

    def precision_sum(self, rel: int, cutoff: int | None) -> Array:
        """Sum over relevant retrieved documents (rank <= cutoff) of precision at their rank."""

        def compute() -> Array:
            qidx, rank = self.relevant(rel, cutoff)
            starts = np.flatnonzero(_block_starts(qidx))
            lengths = np.diff(np.append(starts, len(qidx)))
            # position among the query's relevant documents = relevant retrieved so far
            so_far = np.arange(1, len(qidx) + 1) - np.repeat(starts, lengths)
            return self.per_query(qidx, so_far / rank)

        return self._cached(("precision_sum", rel, cutoff), compute)

    def dcg(self, cutoff: int | None, dcg: Dcg) -> Array:
        def compute() -> Array:
            qidx, rank = self.relevant(1, cutoff)
            rows = self._cache[("relevant", 1, cutoff)]
            return self.per_query(qidx, _gain(self.grade[rows], dcg) / np.log2(rank + 1.0))

        return self._cached(("dcg", cutoff, dcg), compute)

    def ideal_dcg(self, cutoff: int | None, dcg: Dcg) -> Array:
        """DCG of the ideal ranking: all judged documents by grade, best first (trec_eval)."""

        def compute() -> Array:
            order = np.lexsort((-self.judged_grade, self.judged_qidx))
            qidx, grade = self.judged_qidx[order], self.judged_grade[order]
            starts = np.flatnonzero(_block_starts(qidx))
            lengths = np.diff(np.append(starts, len(qidx)))
            rank = np.arange(1, len(qidx) + 1) - np.repeat(starts, lengths)
            keep = slice(None) if cutoff is None else rank <= cutoff
            return self.per_query(qidx[keep], _gain(grade[keep], dcg) / np.log2(rank[keep] + 1.0))

        return self._cached(("ideal_dcg", cutoff, dcg), compute)


def _gain(grade: Array, dcg: Dcg) -> Array:
    g = grade.astype(np.float64)
    return g if dcg == "log2" else np.exp2(g) - 1.0


def _block_starts(qidx: Array) -> Array:
    """True at the first row of each query's contiguous block."""
    starts = np.ones(len(qidx), dtype=bool)
    np.not_equal(qidx[1:], qidx[:-1], out=starts[1:])
    return starts


def safe_divide(numerator: Array, denominator: Array) -> Array:
    """numerator / denominator, 0 where the denominator is 0 (a query with no relevant document)."""
    out = np.zeros_like(numerator, dtype=np.float64)
    np.divide(numerator, denominator, out=out, where=denominator > 0)
    return out


@dataclass(frozen=True)
class Joined:
    """The outcome of :func:`rank_run`."""

    ranking: Ranking
    query_ids: list[str]
    missing_from_run: list[str]
    not_judged: list[str]


def rank_run(qrels: Qrels, run: Run, *, general: bool = False, judged: bool = False) -> Joined:
    """Join ``run`` with ``qrels`` and rank it (``general``: skip the grid path, for tests;
    ``judged``: also rank the retrieved documents judged with a grade <= 0, ``Ranking.other``)."""
    if run.grid is not None and not general:
        return _rank_grid(qrels, run, run.grid, judged)
    return _rank_general(qrels, run, judged)


def _split(qrels: Qrels, qidx: Array, rank: Array, grade: Array, judged: bool, *,
           ordered: bool = False) -> tuple[tuple[Array, Array, Array], Others | None]:
    """Rows in rank order within contiguous query blocks (sorted unless already ``ordered``),
    split into grade >= 1 and (when ``judged``) grade <= 0."""
    if not ordered:
        order = np.lexsort((rank, qidx))
        qidx, rank, grade = qidx[order], rank[order], grade[order]
    qidx, rank, grade = (a.astype(np.int64) for a in (qidx, rank, grade))
    relevant = grade >= 1
    main = (qidx[relevant], rank[relevant], grade[relevant])
    if not judged:
        return main, None
    graded = np.bincount(qrels.query_index[qrels.grades >= 0], minlength=len(qrels.query_names))
    other = Others(qidx[~relevant], rank[~relevant], grade[~relevant], graded.astype(np.float64))
    return main, other


def _rank_grid(qrels: Qrels, run: Run, blocks: Blocks, judged: bool) -> Joined:
    names = qrels.query_names
    n_queries = len(names)
    block_query = _index_in(blocks.names, qrels.sorted_query_dictionary)  # -1: not judged
    judged_block = block_query >= 0
    not_judged = sorted(blocks.names.take(from_numpy(np.flatnonzero(~judged_block))).to_pylist())
    query_block = np.full(n_queries, -1, dtype=np.int64)
    query_block[block_query[judged_block]] = np.flatnonzero(judged_block)
    missing = [names[i] for i in np.flatnonzero(query_block < 0)]

    relevant = np.arange(len(qrels.grades)) if judged else np.flatnonzero(qrels.grades >= 1)
    qidx = qrels.query_index[relevant]
    block = query_block[qidx]
    wanted = run.doc_keys.lookup(qrels.doc_ids.take(from_numpy(relevant)))
    column = _find_in_rows([blocks.grid(w, PAD) for w in run.doc_keys.words], block, wanted)
    hit = column >= 0
    qidx, block, column = qidx[hit], block[hit], column[hit]
    grade = qrels.grades[relevant][hit]
    rank = column + 1 if run.preordered else _grid_ranks(run, blocks, block, column)
    (qidx, rank, grade), other = _split(qrels, qidx, rank, grade, judged)
    num_ret = np.where(query_block >= 0, blocks.widths[query_block], 0).astype(np.float64)
    positive = qrels.grades >= 1
    ranking = Ranking(
        n_queries=n_queries,
        qidx=qidx,
        rank=rank,
        grade=grade,
        judged_qidx=qrels.query_index[positive],
        judged_grade=qrels.grades[positive],
        num_ret=num_ret,
        other=other,
    )
    return Joined(ranking, names, missing, not_judged)


_FIND_CELLS = 1 << 18  # grid cells compared per step of _find_in_rows (stays in cache)


def _find_in_rows(grid: list[Array], rows: Array, keys: tuple[Array, ...]) -> Array:
    """The column of ``keys[i]`` in grid row ``rows[i]``; -1 where absent or the row is -1."""
    out = np.full(len(rows), -1, dtype=np.int64)
    todo = np.flatnonzero(rows >= 0)
    step = max(1, _FIND_CELLS // max(grid[0].shape[1], 1))
    for start in range(0, len(todo), step):
        sel = todo[start:start + step]
        at = rows[sel]
        equal = grid[0][at] == keys[0][sel, None]
        for words, key in zip(grid[1:], keys[1:], strict=True):
            equal &= words[at] == key[sel, None]
        found = equal.any(axis=1)
        out[sel[found]] = equal[found].argmax(axis=1)
    return out


def _grid_ranks(run: Run, blocks: Blocks, block: Array, column: Array) -> Array:
    """1-based trec_eval rank of the rows at (block, column): the column itself, +1, in blocks
    already in order (score descending, then document id descending); sorted otherwise."""
    scores = blocks.grid(run.scores, -np.inf)
    wrong = scores[:, 1:] > scores[:, :-1]
    ties = scores[:, 1:] == scores[:, :-1]
    if blocks.valid is not None:
        ties &= blocks.valid[:, 1:]
    ordered: tuple[Array, ...] = ()
    if ties.any():
        ordered = run.doc_keys.ordered()  # only now: for coded ids it sorts the dictionary
        tie_block, tie_col = np.nonzero(ties)
        first = blocks.starts[tie_block] + tie_col
        misordered = ~_greater(ordered, first, first + 1)
        wrong[tie_block[misordered], tie_col[misordered]] = True
    unsorted = np.flatnonzero(wrong.any(axis=1))
    rank = column + 1
    if len(unsorted) == 0:
        return rank
    if not ordered:
        ordered = run.doc_keys.ordered()
    cells = blocks.starts[unsorted][:, None] + np.arange(blocks.width)
    inside = np.arange(blocks.width)[None, :] < blocks.widths[unsorted][:, None]
    cells = np.where(inside, cells, 0)
    # descending document id: ascending complement; padding (score -inf) sorts last
    sort_keys = [np.where(inside, ~words[cells], PAD) for words in reversed(ordered)]
    sort_keys.append(-scores[unsorted])
    by_rank = np.lexsort(sort_keys, axis=-1)
    rank_of = np.empty_like(by_rank)
    np.put_along_axis(rank_of, by_rank, np.arange(1, blocks.width + 1)[None, :], axis=-1)
    slot = np.full(len(blocks), -1, dtype=np.int64)
    slot[unsorted] = np.arange(len(unsorted))
    moved = slot[block] >= 0
    rank[moved] = rank_of[slot[block[moved]], column[moved]]
    return rank


def _greater(words: tuple[Array, ...], a: Array, b: Array) -> Array:
    """Whether the id at row ``a`` sorts after the id at row ``b`` (lexicographic on words)."""
    greater = np.zeros(len(a), dtype=bool)
    equal = np.ones(len(a), dtype=bool)
    for w in words:
        wa, wb = w[a], w[b]
        greater |= equal & (wa > wb)
        equal &= wa == wb
    return greater


def _rank_general(qrels: Qrels, run: Run, judged: bool) -> Joined:
    names = qrels.query_names
    n_queries = len(names)
    # run query code -> evaluated query index (-1: not judged)
    run_to_eval = _index_in(run.query_dictionary, qrels.sorted_query_dictionary)
    run_names = run.query_dictionary.to_pylist()
    not_judged = sorted(run_names[i] for i in np.flatnonzero(run_to_eval < 0))
    present = np.zeros(n_queries, dtype=bool)
    present[run_to_eval[run_to_eval >= 0]] = True
    missing = [names[i] for i in np.flatnonzero(~present)]

    qidx = run_to_eval[run.query_codes]
    doc = run.doc_codes
    scores = run.scores
    if not_judged:
        keep = qidx >= 0
        qidx, doc, scores = qidx[keep], doc[keep], scores[keep]

    grade, in_qrels = _grades(qrels, run, qidx, doc)
    order = _rank_order(run, qidx, scores, doc, int(present.sum()))
    if order is not None:
        qidx, grade, in_qrels = qidx[order], grade[order], in_qrels[order]
    # rank within each query block: row position minus the block's first row
    starts = np.flatnonzero(_block_starts(qidx))
    rows = np.flatnonzero(in_qrels if judged else grade >= 1)
    block_of_row = np.searchsorted(starts, rows, side="right") - 1
    rank = rows - starts[block_of_row] + 1
    (r_qidx, r_rank, r_grade), other = _split(qrels, qidx[rows], rank, grade[rows],
                                                 judged, ordered=True)

    positive = qrels.grades >= 1
    ranking = Ranking(
        n_queries=n_queries,
        qidx=r_qidx,
        rank=r_rank,
        grade=r_grade,
        judged_qidx=qrels.query_index[positive],
        judged_grade=qrels.grades[positive],
        num_ret=np.bincount(qidx, minlength=n_queries).astype(np.float64),
        other=other,
    )
    return Joined(ranking, names, missing, not_judged)


def _index_in(values: pa.Array, value_set: pa.Array) -> Array:
    """Position of each of ``values`` in ``value_set``, -1 where absent (one hash pass)."""
    found = pc.index_in(values, value_set=value_set)
    out: Array = to_numpy(found, fill=-1).astype(np.int64)
    return out


def _grades(qrels: Qrels, run: Run, qidx: Array, doc: Array) -> tuple[Array, Array]:
    """The judged grade of each run row (0 when unjudged), and whether the row is judged."""
    run_doc_to_qrels = _index_in(run.doc_dictionary, qrels.doc_dictionary)
    qdoc = run_doc_to_qrels[doc]
    grade = np.zeros(len(qidx), dtype=np.int64)
    in_qrels = np.zeros(len(qidx), dtype=bool)
    matched = np.flatnonzero(qdoc >= 0)
    if len(matched) == 0:
        return grade, in_qrels
    width = np.int64(len(qrels.doc_dictionary))
    keys = qidx[matched] * width + qdoc[matched]
    qrels_keys, qrels_grades = qrels.sorted_keys
    pos = np.searchsorted(qrels_keys, keys)
    pos[pos == len(qrels_keys)] = 0
    hit = qrels_keys[pos] == keys
    grade[matched[hit]] = qrels_grades[pos[hit]]
    in_qrels[matched[hit]] = True
    return grade, in_qrels


def _rank_order(run: Run, qidx: Array, scores: Array, doc: Array, n_present: int) -> Array | None:
    """The permutation that puts rows in trec_eval order, or None when they already are."""
    if len(qidx) < 2:
        return None
    if run.preordered:
        return None
    same = qidx[1:] == qidx[:-1]
    grouped = int(len(same) - np.count_nonzero(same)) + 1 == n_present
    if grouped:
        ahead, behind = scores[:-1], scores[1:]
        if not (same & (behind > ahead)).any():
            ties = np.flatnonzero(same & (behind == ahead))
            if len(ties) == 0:
                return None
            order = run.doc_order  # only now: it sorts the distinct document ids
            if (order[doc[ties]] > order[doc[ties + 1]]).all():
                return None
    width = uniform_blocks(qidx) if grouped else None
    if width is not None:
        # one small sort per query, as rows of a 2-D array
        within = np.lexsort(
            (-run.doc_order[doc].reshape(-1, width), -scores.reshape(-1, width)), axis=-1
        )
        blocks: Array = (within + (np.arange(len(within)) * width)[:, None]).ravel()
        return blocks
    return np.lexsort((-run.doc_order[doc], -scores, qidx))
