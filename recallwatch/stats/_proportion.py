"""The interval of a proportion: Wilson's score interval, for rates of clicks, of searches that
found nothing, of decisions that went wrong."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy.typing as npt

__all__ = ["wilson_interval"]


def wilson_interval(successes: npt.ArrayLike, trials: npt.ArrayLike, level: float = 0.95
                    ) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """Two-sided Wilson score interval of a proportion (Wilson 1927), vectorised, closed form.

    ``successes`` may be fractional (effective counts). The interval always holds the estimate
    k / n, stays within [0, 1] and behaves near 0 and 1, where the textbook normal interval
    does not (Brown, Cai & DasGupta 2001 recommend it). Where ``trials`` is 0 it is [0, 1].
    """
    import numpy as np
    from scipy.special import ndtri

    n = np.asarray(trials, dtype=np.float64)
    k = np.clip(np.asarray(successes, dtype=np.float64), 0.0, n)
    z = float(ndtri(1.0 - (1.0 - level) / 2.0))
    safe = np.where(n > 0.0, n, 1.0)
    p = k / safe
    z2n = z * z / safe
    centre = (p + z2n / 2.0) / (1.0 + z2n)
    half = z * np.sqrt(p * (1.0 - p) / safe + z2n / (4.0 * safe)) / (1.0 + z2n)
    empty = n <= 0.0
    # the estimate bounds its own interval (rounding could leave 0 hits a low end of 4e-19)
    low = np.where(empty, 0.0, np.clip(np.minimum(centre - half, p), 0.0, 1.0))
    high = np.where(empty, 1.0, np.clip(np.maximum(centre + half, p), 0.0, 1.0))
    return low, high
