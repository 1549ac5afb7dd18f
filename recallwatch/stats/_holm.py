"""Holm–Bonferroni step-down correction of p-values tested together (e.g. one per measure)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from recallwatch.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["holm"]


def holm(pvalues: npt.ArrayLike) -> np.ndarray:
    """Holm-adjusted p-values, in the order given.

    With the raw p-values sorted ascending, ``p_(i)`` becomes ``max_{j <= i} min(1, (m - j + 1)
    p_(j))``. Rejecting every hypothesis whose adjusted p-value is at most alpha is exactly Holm's
    procedure at level alpha, which controls the family-wise error rate without assuming
    independence between the tests (measures on the same queries are strongly correlated).
    """
    import numpy as np

    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1:
        raise InputError(field="pvalues", expected="a 1-D sequence of p-values",
                         found=f"<an array of shape {p.shape}>")
    outside = np.flatnonzero(~((p >= 0.0) & (p <= 1.0)))
    if outside.size:
        raise InputError(record=f"position {int(outside[0])}", field="pvalues",
                         expected="a p-value in [0, 1]", found=float(p[outside[0]]))
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted
