"""Choosing fusion weights by grid search on the queries kept for tuning.

Every combination of weights on a grid (steps of ``step``, each weight from 0 to 1, summing to
1) fuses the retrievers' lists with ``wsum``; the one with the best mean recall@K over the
queries' expected chunks wins. Often a whole region of weightings ties for best; then the one
nearest the middle of that region is chosen, not one on its edge, where a small change in the
queries would tip the result. Only the lists of the queries given are read: the caller passes
the tune split's, never the test split's, so the figure the gate then reports on test is not
fitted to it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from recallwatch.errors import UsageError
from recallwatch.retrievers.base import Hit
from recallwatch.retrievers.fusion import fuse

__all__ = ["Tuned", "tune_weights", "weight_grid"]


@dataclass(frozen=True)
class Tuned:
    weights: dict[str, float]  # the chosen weights
    score: float  # their mean recall@K on the tuning queries
    queries: int  # how many queries they were chosen on
    tried: int  # how many combinations were tried
    k: int

    def to_dict(self) -> dict[str, object]:
        return {"weights": self.weights, "mean_recall": self.score, "queries": self.queries,
                "tried": self.tried, "top_k": self.k, "method": "wsum"}


def weight_grid(names: Sequence[str], step: float) -> Iterator[dict[str, float]]:
    """Every weighting of ``names`` on a grid of ``step``, weights summing to 1."""
    units = round(1 / step)
    if units < 1 or abs(units * step - 1) > 1e-9:
        raise UsageError(f"the weight step must divide 1 (0.1, 0.05, 0.25, …), found {step}")

    def split(n: int, left: int) -> Iterator[list[int]]:
        if n == 1:
            yield [left]
            return
        for first in range(left, -1, -1):
            for rest in split(n - 1, left - first):
                yield [first, *rest]

    for parts in split(len(names), units):
        yield {n: p / units for n, p in zip(names, parts)}


def tune_weights(runs: Mapping[str, Sequence[Sequence[Hit]]], expected: Sequence[Sequence[str]],
                 *, k: int, norm: str | None = "min-max", step: float = 0.1) -> Tuned:
    """The wsum weights with the best mean recall@``k`` of ``expected`` over these lists."""
    names = list(runs)
    if len(names) < 2:
        raise UsageError("tuning weights needs at least two retrievers")
    if not expected:
        raise UsageError("tuning weights needs at least one query with expected chunks")
    scored = []
    for weights in weight_grid(names, step):
        fused = fuse(runs, method="wsum", norm=norm, weights=weights)
        recalls = [sum(c in {h for h, _ in hits[:k]} for c in want) / len(want)
                   for hits, want in zip(fused, expected) if want]
        scored.append((sum(recalls) / len(recalls) if recalls else 0.0, weights))
    top = max(score for score, _ in scored)
    tied = [w for score, w in scored if score >= top - 1e-12]
    middle = {n: sum(w[n] for w in tied) / len(tied) for n in names}
    chosen = min(tied, key=lambda w: sum((w[n] - middle[n]) ** 2 for n in names))
    return Tuned(chosen, top, len(expected), len(scored), k)
