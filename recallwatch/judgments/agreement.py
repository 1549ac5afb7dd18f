"""Agreement between two sets of graded labels: confusion matrix and Cohen's weighted kappa.

The one implementation in recallwatch: judgments from click models, from an LLM judge and from
several human assessors are all compared with it.

Cohen's kappa is agreement corrected for chance: 1 is perfect agreement, 0 is what two raters
who label at random with the same label frequencies would reach, below 0 is worse than that.
*Weighted* kappa (Cohen 1968) counts near misses on an ordered scale as partial agreement: with
``K`` categories ordered by value, observed proportions ``O[i, j]`` and chance proportions
``E[i, j] = O[i, ·] O[·, j]``, and disagreement weights ``w[i, j] = |i − j|`` (linear) or
``(i − j)²`` (quadratic),

    kappa = 1 − Σ w O / Σ w E.

Unweighted kappa uses ``w[i, j] = 1`` whenever ``i ≠ j``. Its interval is a percentile
bootstrap over the items (seeded, so the same labels give the same interval): kappa on a few
dozen items is uncertain, and the interval says how much. Quadratic weights, the default, are
the usual choice for relevance grades 0–3 (confusing 0 with 3 costs nine times confusing 2
with 3). Kappa is undefined (NaN) when chance disagreement is zero, i.e. both raters used one
and the same category throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from recallwatch.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "Agreement", "Weights", "agreement", "confusion_matrix", "kappa_interval", "weighted_kappa",
]

Weights = Literal["quadratic", "linear", "unweighted"]
WEIGHTS: tuple[Weights, ...] = get_args(Weights)


def _labels(a: npt.ArrayLike, b: npt.ArrayLike,
            categories: Sequence[int] | None) -> tuple[np.ndarray, np.ndarray, list[int]]:
    import numpy as np

    x = np.asarray(a)
    y = np.asarray(b)
    if x.ndim != 1 or y.ndim != 1 or x.size != y.size:
        raise InputError(field="labels", expected="two 1-D sequences of the same length",
                         found=f"<shapes {x.shape} and {y.shape}>")
    if x.size == 0:
        raise InputError(field="labels", expected="at least one labelled pair in common",
                         found="<none>")
    for arr in (x, y):
        whole = np.issubdtype(arr.dtype, np.integer) or (
            np.issubdtype(arr.dtype, np.floating) and bool(np.all(arr == np.round(arr))))
        if not whole:
            raise InputError(field="labels", expected="integer grades",
                                 found=f"<values of type {arr.dtype}>")
    x = x.astype(np.int64)
    y = y.astype(np.int64)
    cats = sorted(set(x.tolist()) | set(y.tolist())) if categories is None else list(categories)
    if len(set(cats)) != len(cats):
        raise UsageError(f"categories must be distinct, got {cats}")
    unknown = sorted((set(x.tolist()) | set(y.tolist())) - set(cats))
    if unknown:
        raise InputError(field="labels", expected=f"grades among {cats}", found=unknown[0])
    return x, y, sorted(cats)


def confusion_matrix(a: npt.ArrayLike, b: npt.ArrayLike, *,
                     categories: Sequence[int] | None = None) -> np.ndarray:
    """Counts ``C[i, j]`` of items labelled ``categories[i]`` by ``a`` and ``categories[j]`` by
    ``b`` (categories default to every grade either uses, ascending)."""
    import numpy as np

    x, y, cats = _labels(a, b, categories)
    index = {c: i for i, c in enumerate(cats)}
    xi = np.array([index[v] for v in x.tolist()], dtype=np.int64)
    yi = np.array([index[v] for v in y.tolist()], dtype=np.int64)
    k = len(cats)
    return np.bincount(xi * k + yi, minlength=k * k).reshape(k, k)


def _disagreement_weights(k: int, weights: Weights) -> np.ndarray:
    import numpy as np

    if weights not in WEIGHTS:
        raise UsageError(f"unknown kappa weights {weights!r}; valid: {', '.join(WEIGHTS)}")
    i, j = np.indices((k, k))
    distance: np.ndarray = np.abs(i - j).astype(np.float64)
    if weights == "quadratic":
        distance = distance * distance
    elif weights == "unweighted":
        distance = np.minimum(distance, 1.0)
    return distance


def _kappas(counts: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kappa of each confusion matrix in ``counts`` (shape [..., K, K]); NaN where undefined."""
    import numpy as np

    observed = counts / counts.sum(axis=(-2, -1), keepdims=True)
    expected = observed.sum(axis=-1)[..., :, None] * observed.sum(axis=-2)[..., None, :]
    chance = (w * expected).sum(axis=(-2, -1))
    disagreement = (w * observed).sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(chance > 0.0, 1.0 - disagreement / np.where(chance > 0, chance, 1.0),
                        np.nan)


def _kappa_from_confusion(counts: np.ndarray, weights: Weights) -> float:
    return float(_kappas(counts, _disagreement_weights(counts.shape[0], weights)))


def weighted_kappa(a: npt.ArrayLike, b: npt.ArrayLike, *, weights: Weights = "quadratic",
                   categories: Sequence[int] | None = None) -> float:
    """Cohen's (weighted) kappa between two raters' grades of the same items, in order."""
    return _kappa_from_confusion(confusion_matrix(a, b, categories=categories), weights)


@dataclass(frozen=True)
class Agreement:
    """How two raters agree on ``n`` items: kappa, raw agreement and the confusion matrix
    (rows: ``rater_a``'s grades, columns: ``rater_b``'s)."""

    n: int
    kappa: float
    weights: Weights
    exact: float  # share of items with the same grade
    categories: list[int]
    confusion: list[list[int]]
    rater_a: str = "a"
    rater_b: str = "b"
    ci: tuple[float, float] | None = None  # bootstrap interval of kappa
    ci_level: float = 0.95

    def to_dict(self) -> dict[str, Any]:
        import math

        def num(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {"pairs": self.n, "kappa": num(self.kappa),
                "ci": None if self.ci is None else [num(self.ci[0]), num(self.ci[1])],
                "ci_level": self.ci_level, "weights": self.weights,
                "exact_agreement": self.exact,
                "categories": self.categories, "rows": self.rater_a, "columns": self.rater_b,
                "confusion": self.confusion}


def kappa_interval(a: npt.ArrayLike, b: npt.ArrayLike, *, weights: Weights = "quadratic",
                   categories: Sequence[int] | None = None, level: float = 0.95,
                   n_resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of weighted kappa, items resampled with replacement.
    Resamples where kappa is undefined are left out; (NaN, NaN) if all are."""
    import numpy as np

    if not 0.0 < level < 1.0:
        raise UsageError(f"the interval level must be strictly between 0 and 1, got {level}")
    x, y, cats = _labels(a, b, categories)
    index = {c: i for i, c in enumerate(cats)}
    k = len(cats)
    cell = np.array([index[u] * k + index[v] for u, v in zip(x.tolist(), y.tolist())])
    rng = np.random.default_rng(seed)
    w = _disagreement_weights(k, weights)
    values = []
    for start in range(0, n_resamples, 500):  # blocks bound the memory of the resample matrix
        draws = rng.integers(0, cell.size, (min(500, n_resamples - start), cell.size))
        picked = cell[draws]
        counts = np.zeros((picked.shape[0], k * k))
        np.add.at(counts, (np.arange(picked.shape[0])[:, None], picked), 1.0)
        values.append(_kappas(counts.reshape(-1, k, k), w))
    kappas = np.concatenate(values)
    kappas = kappas[np.isfinite(kappas)]
    if kappas.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(kappas, [tail, 1.0 - tail])
    return float(low), float(high)


def agreement(a: npt.ArrayLike, b: npt.ArrayLike, *, weights: Weights = "quadratic",
              categories: Sequence[int] | None = None, rater_a: str = "a",
              rater_b: str = "b", level: float = 0.95, seed: int = 0) -> Agreement:
    """Kappa (with its bootstrap interval), exact agreement and confusion matrix of two raters'
    grades of the same items."""
    import numpy as np

    x, y, cats = _labels(a, b, categories)
    counts = confusion_matrix(x, y, categories=cats)
    ci = kappa_interval(x, y, weights=weights, categories=cats, level=level, seed=seed)
    return Agreement(n=int(x.size), kappa=_kappa_from_confusion(counts, weights),
                     weights=weights, exact=float(np.mean(x == y)), categories=cats,
                     confusion=counts.tolist(), rater_a=rater_a, rater_b=rater_b, ci=ci,
                     ci_level=level)
