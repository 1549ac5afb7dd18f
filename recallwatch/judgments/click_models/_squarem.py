"""SQUAREM (Varadhan & Roland 2008, scheme S3): EM steps extrapolated, the likelihood kept monotone.

Plain EM converges slowly when parameters trade off against each other (a result's appeal against
the chance it was looked at). Two EM steps give a direction, a longer step is taken along it and
followed by one more EM step, and the result is kept only if its likelihood is at least the
cycle's starting one, so the log-likelihood at the start of each cycle never decreases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recallwatch._progress import progress
from recallwatch.judgments.click_models._counts import Array

__all__ = ["Accelerated", "squarem"]


@dataclass(frozen=True)
class Accelerated:
    theta: Array
    trace: list[float]  # the objective at each cycle's start, then at the end
    evaluations: int  # EM steps taken
    converged: bool


def squarem(step: Callable[[Array], tuple[Array, float]], objective: Callable[[Array], float],
            theta: Array, *, max_iter: int, tol: float,
            project: Callable[[Array], Array]) -> Accelerated:
    """Iterate ``step`` (θ → (next θ, objective at θ)) with SQUAREM until no parameter moves by
    more than ``tol`` in a cycle or ``max_iter`` EM steps were taken. ``project`` brings an
    extrapolated θ back into the parameter space (clip to [0, 1], re-fix pinned values)."""
    trace: list[float] = []
    converged = False
    evaluations = 0
    # a bar over the steps allowed (a large log's fit; it ends early once converged)
    with progress(max_iter, f"fitting the click model (at most {max_iter:,} EM steps)"
                  ) as advance:
        while evaluations < max_iter:
            before = evaluations
            theta, ll, evaluations, moved = _cycle(step, objective, theta, max_iter,
                                                   evaluations, project)
            trace.append(ll)
            advance(evaluations - before)
            if moved < tol:
                converged = True
                break
    trace.append(objective(theta))
    return Accelerated(theta, trace, evaluations, converged)


def _cycle(step: Callable[[Array], tuple[Array, float]], objective: Callable[[Array], float],
           theta: Array, max_iter: int, evaluations: int, project: Callable[[Array], Array]
           ) -> tuple[Array, float, int, float]:
    """One SQUAREM cycle from ``theta``: the new θ, the objective at the cycle's start, the EM
    steps taken so far, and how far the largest parameter moved."""
    theta1, ll = step(theta)  # ll: the objective at the start of this cycle
    evaluations += 1
    candidate = theta1
    if evaluations < max_iter:
        theta2, _ = step(theta1)
        evaluations += 1
        candidate = theta2
        r = theta1 - theta
        v = theta2 - theta1 - r
        v_norm = math.sqrt(float((v * v).sum()))
        if v_norm > 0.0 and evaluations < max_iter:
            s = min(-1.0, -math.sqrt(float((r * r).sum())) / v_norm)
            jump = project(theta - 2.0 * s * r + s * s * v)
            stabilised, _ = step(jump)
            evaluations += 1
            # keep the extrapolation only if it did not lose likelihood; EM's own double
            # step never does, so the objective at each cycle's start never decreases
            if objective(stabilised) >= ll:
                candidate = stabilised
    moved = float(np.max(np.abs(candidate - theta), initial=0.0))
    return candidate, ll, evaluations, moved
