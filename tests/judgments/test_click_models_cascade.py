"""The cascade family fitted on users simulated under each model's own assumptions (fixed seeds):
DBN by EM and the cascade model recover their users' parameters, DBN's EM reaches the maximum of
a likelihood written here independently (a forward pass over each impression, optimised by
scipy), and DBN ranks better than raw click-through rate on cascade users."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, logit
from scipy.stats import kendalltau

from recallwatch.judgments.click_models import ClickCounter, ClickCounts, fit
from recallwatch.online.simulate import (
    ATTRACTIVENESS,
    SATISFACTION,
    make_collection,
    simulate_batches,
)


@functools.cache
def _simulated(user: str, n: int, seed: int, queries: int = 40,
               persistence: float = 0.9) -> tuple[ClickCounts, np.ndarray, list[np.ndarray]]:
    col = make_collection(queries, 15, seed=seed, bias_scale=3.0)
    counter = ClickCounter(tails=True)
    batches = list(simulate_batches(col, n, user=user, seed=seed + 100,  # type: ignore[arg-type]
                                    persistence=persistence))
    for b in batches:
        counter.add_encoded(b.queries, b.docs, b.clicks)
    c = counter.counts()
    true = col.grades[c.pair_query, c.pair_doc - c.pair_query * col.docs_per_query]
    return c, true, [np.concatenate([b.docs for b in batches]),
                     np.concatenate([b.clicks for b in batches])]


def test_dbn_recovers_its_own_users_parameters() -> None:
    c, true, _ = _simulated("cascade", 30_000, 3)
    f = fit(c, "dbn")
    assert f.converged
    # the continuation of the simulated users is 0.9
    assert f.parameters["gamma"] == pytest.approx(0.9, abs=0.02)
    a, s = f.parameters["attractiveness"], f.parameters["satisfaction"]
    well_seen = f.effective_n >= 100
    for grade in range(4):
        mask = well_seen & (true == grade)
        assert a[mask].mean() == pytest.approx(ATTRACTIVENESS[grade], abs=0.03), grade
    for grade in (1, 2, 3):  # grade 0 is almost never clicked: its satisfaction barely observed
        mask = (f.parameters["satisfaction_evidence"] >= 50) & (true == grade)
        assert s[mask].mean() == pytest.approx(SATISFACTION[grade], abs=0.05), grade
    trace = np.array(f.log_likelihood_trace)
    assert np.all(np.diff(trace) >= -1e-9 * np.abs(trace[:-1]))
    assert np.all(f.ci_low <= f.relevance) and np.all(f.relevance <= f.ci_high)


def test_cascade_model_recovers_its_own_users_attractiveness() -> None:
    c, true, _ = _simulated("cm", 30_000, 4)
    f = fit(c, "cm")
    assert c.clicks_after_first == 0  # its users click once at most
    well_seen = f.effective_n >= 100
    for grade in range(4):
        mask = well_seen & (true == grade)
        assert f.relevance[mask].mean() == pytest.approx(ATTRACTIVENESS[grade], abs=0.03), grade
    # on these users the DBN finds satisfaction 1 wherever it can see it
    d = fit(c, "dbn")
    seen = d.parameters["satisfaction_evidence"] >= 30
    assert np.all(d.parameters["satisfaction"][seen] > 0.9)


def _forward_log_likelihood(docs: np.ndarray, clicks: np.ndarray, a: np.ndarray, s: np.ndarray,
                            gamma: float) -> float:
    """The DBN's probability of each impression's clicks, by a forward pass over two states
    (still reading / stopped), written from the model's definition, not from recallwatch's."""
    total = 0.0
    for row, hits in zip(docs.tolist(), clicks.tolist()):
        reading, stopped = 1.0, 0.0
        for doc, hit in zip(row, hits):
            if doc < 0:
                break
            if hit:
                p = reading * a[doc]
                leave = s[doc] + (1 - s[doc]) * (1 - gamma)
                reading, stopped = p * (1 - s[doc]) * gamma, p * leave
            else:
                reading, stopped = reading * (1 - a[doc]) * gamma, stopped + reading * (
                    (1 - a[doc]) * (1 - gamma))
        total += np.log(reading + stopped)
    return float(total)


def test_dbn_em_reaches_the_maximum_of_an_independent_likelihood() -> None:
    c, _, (docs, clicks) = _simulated("cascade", 600, 5, queries=2)
    f = fit(c, "dbn", tol=1e-10, max_iter=20_000)
    # pair codes: the simulator's document codes map to recallwatch's pair ids
    code_to_pair = {int(d): i for i, d in enumerate(c.pair_doc.tolist())}
    pairs = np.vectorize(lambda d: code_to_pair.get(int(d), -1))(docs)
    a, s, g = f.parameters["attractiveness"], f.parameters["satisfaction"], f.parameters["gamma"]
    ours = _forward_log_likelihood(pairs, clicks, a, s, g)
    assert ours == pytest.approx(f.log_likelihood, abs=1e-6)
    # no direction improves on EM's fixed point (pairs whose satisfaction is unobservable
    # do not enter the likelihood, so they are held where EM left them)
    p = c.n_pairs

    def negative(x: np.ndarray) -> float:
        return -_forward_log_likelihood(pairs, clicks, expit(x[:p]), expit(x[p:2 * p]),
                                        float(expit(x[2 * p])))

    start = logit(np.clip(np.concatenate([a, s, [g]]), 1e-6, 1 - 1e-6))
    best = minimize(negative, start, method="L-BFGS-B", options={"maxiter": 40})
    assert -best.fun <= ours + 1e-3


@pytest.mark.parametrize("seed", [0, 1])
def test_dbn_ranks_better_than_click_through_rate_on_cascade_users(seed: int) -> None:
    c, true, _ = _simulated("cascade", 40_000, seed, queries=50)
    dbn = fit(c, "dbn")
    labelled = (c.impressions >= 10) & (dbn.effective_n >= 5)  # what `online clicks` labels
    tau = {m: float(kendalltau(f.relevance[labelled], true[labelled]).statistic)
           for m, f in (("dctr", fit(c, "dctr")), ("dbn", dbn))}
    assert tau["dbn"] > tau["dctr"] + 0.02, tau
