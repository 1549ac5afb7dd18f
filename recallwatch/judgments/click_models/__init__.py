"""Click models: interaction logs turned into relevance estimates per (query, document) pair.

    >>> from recallwatch.judgments.click_models import ClickCounter, fit
    >>> counter = ClickCounter(); counter.add(InteractionLog("clicks.jsonl"))
    >>> result = fit(counter.counts(), "pbm")

Models, one per module: ``dctr`` (click-through rate, no position correction), ``pbm``
(position-based model, EM), ``ubm`` (user browsing model, EM), ``cm`` (cascade model, closed
form), ``dbn`` (dynamic Bayesian network, EM, continuation estimated), ``sdbn`` (the DBN's
simplified closed form, biased when users read on after an unsatisfying click). docs/online.md
explains each and its update equations.
"""

from __future__ import annotations

from typing import Literal, Protocol

import numpy as np

from recallwatch._registry import Registry
from recallwatch.judgments.click_models._counts import ClickCounter, ClickCounts, ClickRecord
from recallwatch.judgments.click_models._fit import ClickModelFit, wilson_interval

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

ModelName = Literal["dctr", "pbm", "ubm", "cm", "dbn", "sdbn"]


class _Fitter(Protocol):
    def __call__(self, counts: ClickCounts, *, level: float = ..., max_iter: int = ...,
                 tol: float = ..., prior: tuple[float, float] | None = ...) -> ClickModelFit: ...


CLICK_MODELS: Registry[_Fitter] = Registry("click model")
CLICK_MODELS.register("dctr", "recallwatch.judgments.click_models.dctr:fit",
                      description="click-through rate of the pair (no position correction)")
CLICK_MODELS.register("pbm", "recallwatch.judgments.click_models.pbm:fit",
                      description="position-based model, EM")
CLICK_MODELS.register("ubm", "recallwatch.judgments.click_models.ubm:fit",
                      description="user browsing model (cascade family), EM")
CLICK_MODELS.register("cm", "recallwatch.judgments.click_models.cm:fit",
                      description="cascade model (stop at the first click), closed form")
CLICK_MODELS.register("dbn", "recallwatch.judgments.click_models.dbn:fit",
                      description="dynamic Bayesian network (continuation estimated), EM")
CLICK_MODELS.register("sdbn", "recallwatch.judgments.click_models.sdbn:fit",
                      description="simplified dynamic Bayesian network, closed form (biased "
                                  "when users read on after an unsatisfying click)")


def fit(counts: ClickCounts, model: str = "pbm", *, level: float = 0.95, max_iter: int = 1000,
        tol: float = 1e-4, prior: tuple[float, float] | None = None) -> ClickModelFit:
    """Fit the named click model to the counts. ``max_iter``/``tol`` bound the EM models (PBM,
    UBM, DBN); the closed-form ones ignore them. ``prior`` = (a0, b0) Beta pseudo-counts added
    to every pair's relevance parameter (see ``choose_prior``). An unknown name lists the valid
    ones."""
    from recallwatch.errors import UsageError

    if not 0.0 < level < 1.0:
        raise UsageError(f"the interval level must be strictly between 0 and 1, got {level}")
    if max_iter < 1 or not tol >= 0.0:
        raise UsageError(f"max_iter must be >= 1 and tol >= 0, got {max_iter} and {tol}")
    if prior is not None and not all(np.all(np.asarray(x) >= 0.0) for x in prior):
        raise UsageError("prior pseudo-counts must be >= 0")
    return CLICK_MODELS.get(model)(counts, level=level, max_iter=max_iter, tol=tol, prior=prior)
