"""A Beta prior for sparse pairs, its strength chosen on held-out impressions.

A pair seen a handful of times gets an extreme estimate (two clicks in three looks reads as
0.67). A Beta prior adds pseudo-counts: ``m · μ`` pseudo-clicks and ``m · (1 − μ)`` pseudo-skips,
where ``μ`` is the log's mean relevance parameter (weighted by evidence) and ``m`` the prior's
strength in examinations. ``choose_prior`` fits the model on part of the log for each strength in
a grid and keeps the one whose estimates best predict the clicks of the impressions held out
(their log-likelihood); ``m = 0`` (no prior) is in the grid, so the prior is used only when it
predicts better.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models._counts import Array, ClickCounts
from recallwatch.judgments.click_models._fit import ClickModelFit, bernoulli_log_likelihood

__all__ = ["STRENGTHS", "PriorChoice", "choose_prior", "fitted_mean", "held_out_log_likelihood"]

#: Prior strengths tried, in pseudo-examinations.
STRENGTHS = (0.0, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
HELD_OUT_MODELS = ("dctr", "pbm", "ubm", "cm", "dbn")
_EPS = 1e-9


@dataclass(frozen=True)
class PriorChoice:
    """The strength kept, the prior mean, and the held-out log-likelihood of every strength."""

    strength: float
    mean: float
    held_out: dict[float, float] = field(default_factory=dict)

    @property
    def pseudo_counts(self) -> tuple[float, float] | None:
        if self.strength == 0.0:
            return None
        return self.strength * self.mean, self.strength * (1.0 - self.mean)

    def to_dict(self) -> dict[str, Any]:
        return {"strength": self.strength, "mean": round(self.mean, 6),
                "pseudo_counts": None if self.pseudo_counts is None
                else [round(x, 6) for x in self.pseudo_counts],
                "held_out_log_likelihood": {f"{k:g}": round(v, 3)
                                            for k, v in self.held_out.items()},
                "chosen_on": "held-out impressions (every fifth impression of the log)"}


def choose_prior(train: ClickCounts, held: ClickCounts, model: str,
                 strengths: tuple[float, ...] = STRENGTHS, **options: Any) -> PriorChoice:
    """Pick the prior strength whose fit on ``train`` best predicts ``held``'s clicks."""
    from recallwatch.judgments.click_models import fit

    if model not in HELD_OUT_MODELS:
        raise UsageError(f"a prior strength is chosen on held-out clicks for "
                         f"{', '.join(HELD_OUT_MODELS)}; {model} has no click likelihood to "
                         "predict them with: give the strength yourself")
    plain = fit(train, model, **options)
    mean = fitted_mean(plain)
    scores: dict[float, float] = {}
    for m in strengths:
        fitted = plain if m == 0.0 else fit(train, model, prior=(m * mean, m * (1.0 - mean)),
                                           **options)
        scores[m] = held_out_log_likelihood(fitted, held, mean)
    best = max(scores, key=lambda m: (scores[m], -m))
    return PriorChoice(best, mean, scores)


def fitted_mean(f: ClickModelFit) -> float:
    """The prior mean: the fit's per-pair parameter averaged with the pairs' evidence as
    weights, kept inside [0.001, 0.999]."""
    base = _base_parameter(f)
    weight = f.effective_n
    mean = float((base * weight).sum() / weight.sum()) if weight.sum() > 0 else 0.5
    return min(max(mean, 1e-3), 1.0 - 1e-3)


def _base_parameter(f: ClickModelFit) -> Array:
    """The per-pair parameter the prior acts on: attractiveness for the DBN, else relevance."""
    value = f.parameters.get("attractiveness")
    return np.asarray(value) if value is not None else np.asarray(f.relevance)


def held_out_log_likelihood(f: ClickModelFit, held: ClickCounts, mean: float) -> float:
    """The log-likelihood of ``held``'s clicks under ``f`` (pairs unseen in training take the
    prior mean)."""
    train = f.counts
    names = dict(zip(zip(*train.pair_labels()), range(train.n_pairs)))
    index = np.array([names.get(key, -1) for key in zip(*held.pair_labels())], dtype=np.int64)
    known = index >= 0

    def mapped(values: Array, default: float) -> Array:
        return np.where(known, np.asarray(values)[np.maximum(index, 0)], default)

    a = mapped(_base_parameter(f), mean)
    if f.model == "dbn":
        from recallwatch.judgments.click_models.dbn import objective_of

        s_mean = float(np.mean(f.parameters["satisfaction"])) if train.n_pairs else 0.5
        return objective_of(held, (a, mapped(f.parameters["satisfaction"], s_mean),
                                   float(f.parameters["gamma"])))
    if f.model == "cm":
        if held.cm_examined is None or held.cm_first is None:
            raise UsageError("held-out counts without first-click counts (use ClickCounter)")
        return _bernoulli(a, held.cm_first, held.cm_examined)
    if f.model == "dctr":
        return _bernoulli(a, held.clicks, held.impressions)
    exam = _examination(f, held)
    return _bernoulli(a[held.cell_pair] * exam, held.cell_c, held.cell_n)


def _examination(f: ClickModelFit, held: ClickCounts) -> Array:
    if f.model == "pbm":
        by_rank: Array = np.asarray(f.position_bias["examination_by_rank"]
                                    + [0.0] * held.max_rank)
        return np.asarray(by_rank[held.cell_rank - 1])
    table = {(row["rank"], row["previous_click"]): row["examination"]
             for row in f.position_bias["examination_by_rank_and_previous_click"]}
    return np.array([table.get((int(r), int(p)), 0.0)
                     for r, p in zip(held.cell_rank.tolist(), held.cell_prev.tolist())])


def _bernoulli(p: Array, clicks: Array, trials: Array) -> float:
    return bernoulli_log_likelihood(p, clicks, trials, eps=_EPS)
