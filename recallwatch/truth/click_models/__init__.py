"""Click models: interaction logs turned into relevance estimates per (query, document) pair.

    >>> from recallwatch.truth.click_models import ClickCounter, fit
    >>> counter = ClickCounter(); counter.add(InteractionLog("clicks.jsonl"))
    >>> result = fit(counter.counts(), "pbm")

Models, one per module: ``dctr`` (click-through rate, no position correction), ``pbm``
(position-based model, EM), ``ubm`` (user browsing model, EM), ``dbn`` (simplified dynamic
Bayesian network, closed form). docs/online.md explains each and its update equations.
"""

from __future__ import annotations

from typing import Literal, Protocol

from recallwatch._registry import Registry
from recallwatch.truth.click_models._counts import ClickCounter, ClickCounts, ClickRecord
from recallwatch.truth.click_models._fit import ClickModelFit, wilson_interval

__all__ = [
    "CLICK_MODELS",
    "ClickCounter",
    "ClickCounts",
    "ClickModelFit",
    "ClickRecord",
    "ModelName",
    "fit",
    "wilson_interval",
]

ModelName = Literal["dctr", "pbm", "ubm", "dbn"]


class _Fitter(Protocol):
    def __call__(self, counts: ClickCounts, *, level: float = ..., max_iter: int = ...,
                 tol: float = ...) -> ClickModelFit: ...


CLICK_MODELS: Registry[_Fitter] = Registry("click model")
CLICK_MODELS.register("dctr", "recallwatch.truth.click_models.dctr:fit",
                      description="click-through rate of the pair (no position correction)")
CLICK_MODELS.register("pbm", "recallwatch.truth.click_models.pbm:fit",
                      description="position-based model, EM")
CLICK_MODELS.register("ubm", "recallwatch.truth.click_models.ubm:fit",
                      description="user browsing model (cascade family), EM")
CLICK_MODELS.register("dbn", "recallwatch.truth.click_models.dbn:fit",
                      description="simplified dynamic Bayesian network (γ = 1), closed form")


def fit(counts: ClickCounts, model: str = "pbm", *, level: float = 0.95, max_iter: int = 1000,
        tol: float = 1e-4) -> ClickModelFit:
    """Fit the named click model to the counts. ``max_iter``/``tol`` bound the EM models (PBM,
    UBM); the closed-form ones ignore them. An unknown name lists the valid ones."""
    from recallwatch.errors import UsageError

    if not 0.0 < level < 1.0:
        raise UsageError(f"the interval level must be strictly between 0 and 1, got {level}")
    if max_iter < 1 or not tol >= 0.0:
        raise UsageError(f"max_iter must be >= 1 and tol >= 0, got {max_iter} and {tol}")
    return CLICK_MODELS.get(model)(counts, level=level, max_iter=max_iter, tol=tol)
