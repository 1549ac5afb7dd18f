"""The noise rule in words: what it counts, why it fired on a query, and when a golden set's labels
are too sparse for it to measure anything.

The rule: at most ``floor(ceiling × K)`` of a query's top K results may score below the worst-
scoring chunk the query expects. It reads such a result as irrelevant, so it presumes the query
lists every relevant chunk (or that the others were judged). A query that lists 2 expected chunks
with K = 10 leaves 8 results below them even when the index ranks them first: unless those results
were judged, the count says nothing about the index.
"""

from __future__ import annotations

from collections.abc import Sequence

from recallwatch.acceptance.model import Check, QueryResult

__all__ = ["RULE_WORDS", "noise_explanation", "sparse_labels_check"]

RULE_WORDS = ("the noise rule allows at most a set share of a query's top K (the noise ceiling) to "
              "score below the worst-scoring chunk the query expects: such results are taken as "
              "irrelevant chunks filling what the reader of the results sees")
_JUDGE = ("judge each query's top K (`recallwatch label pool`, then `recallwatch label serve`) and "
          "pass the judgments with --judgments, or list every relevant chunk in `expected`")


def _span(values: Sequence[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def sparse_labels_check(queries: Sequence[QueryResult], judged: bool) -> Check | None:
    """A ``noise`` check "not applied" naming the queries whose labels were too sparse for the
    noise rule (None when there is none): what they list, why the rule cannot tell anything
    there, and how to make it measure."""
    unmeasured = [q for q in queries if not q.noise_measured]
    if not unmeasured:
        return None
    n, total = len(unmeasured), len(queries)
    ks = sorted({q.top_k for q in unmeasured})
    k = str(ks[0]) if len(ks) == 1 else "K"
    listed = [len(q.expected) for q in unmeasured]
    below = [q.top_k - len(q.expected) for q in unmeasured]
    ids = ", ".join(q.id for q in unmeasured[:8]) + (", …" if n > 8 else "")
    message = (
        f"noise rule not measured on {n} of {total} {_plural(total, 'query', 'queries')} "
        f"({ids}): {_plural(n, 'it lists', 'they list')} {_span(listed)} expected "
        f"chunk{'' if max(listed) == 1 else 's'} with K = {k}, so even when the index ranks them "
        f"first the other {_span(below)} results of the top {k} score below them, and nobody "
        "said whether those are relevant"
        + (" (the judgments given do not cover them)" if judged else "")
        + f". {RULE_WORDS[0].upper()}{RULE_WORDS[1:]}; it needs to know which results are "
        f"irrelevant: {_JUDGE}. Until then these queries are judged on recall alone "
        "(policy `noise_unlisted: irrelevant` counts every unlisted result as noise instead)")
    figures = {"queries": [q.id for q in unmeasured], "n": n, "of": total,
               "expected_listed": sorted(set(listed))}
    return Check("noise", "noise rule", "not applied", message, figures)


def noise_explanation(q: QueryResult) -> str:
    """Why the noise rule failed query ``q``: what it counted, against which chunk, what the
    ceiling allows, and what to do."""
    worst = min((h for h in q.expected if h.score is not None), key=lambda h: h.score or 0.0,
                default=None)
    against = ("its worst expected chunk" if worst is None else
               f"{worst.id} (score {worst.score:.4f}, "
               + (f"rank {worst.rank})" if worst.rank else "beyond the search depth)")
               + ", the expected chunk least similar to the query")
    judged = q.noise - q.noise_unjudged
    text = (f"{q.noise} of the top {q.top_k} results score below {against}; the noise ceiling "
            f"{q.noise_ceiling:.2f} allows {q.allowed_noise} (recall is {q.recall:.3f}, a "
            "separate rule). The rule takes a result scoring below every expected chunk as "
            "irrelevant")
    if judged:
        text += f"; {judged} of these {_plural(judged, 'was', 'were')} judged not relevant"
    if q.labels_sparse and q.noise_unjudged:
        n = len(q.expected)
        text += (f". This query lists {n} expected chunk{'' if n == 1 else 's'}: even an ideal "
                 f"ranking leaves {q.top_k - n} results below {_plural(n, 'it', 'them')}; if "
                 f"some are relevant, {_JUDGE}")
    return (text + " — fix: make generic descriptions specific, split chunks that mix topics, "
            "tighten loose facets; or, if this domain's ceiling was never calibrated, calibrate it "
            "on a run with enough healthy queries (`recallwatch ops calibrate-noise`)")
