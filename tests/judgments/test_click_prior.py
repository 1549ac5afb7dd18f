"""The Beta prior for sparse pairs: its strength is chosen on held-out impressions, zero
(no prior) stays a candidate, and at about twenty impressions per pair PBM with the prior ranks
the labelled pairs better than raw click-through rate (simulated users, fixed seeds)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models import ClickCounter, fit
from recallwatch.judgments.click_models.prior import STRENGTHS, choose_prior
from recallwatch.online.simulate import make_collection, simulate_batches


def _counters(n: int, queries: int, seed: int) -> tuple[ClickCounter, ClickCounter,
                                                        ClickCounter, np.ndarray]:
    col = make_collection(queries, 20, seed=seed, bias_scale=3.0)
    full, train, held = ClickCounter(), ClickCounter(), ClickCounter()
    done = 0
    for b in simulate_batches(col, n, seed=seed + 100, batch_size=5000):
        out = (np.arange(done, done + b.queries.size) % 5) == 4
        done += b.queries.size
        full.add_encoded(b.queries, b.docs, b.clicks)
        train.add_encoded(b.queries[~out], b.docs[~out], b.clicks[~out])
        held.add_encoded(b.queries[out], b.docs[out], b.clicks[out])
    c = full.counts()
    true = col.grades[c.pair_query, c.pair_doc - c.pair_query * col.docs_per_query]
    return full, train, held, true


def test_prior_is_chosen_on_held_out_clicks_and_helps_sparse_pbm() -> None:
    full, train, held, true = _counters(8_000, 200, 0)
    c = full.counts()
    assert 15 <= c.impressions.mean() <= 30  # about twenty impressions per pair
    choice = choose_prior(train.counts(), held.counts(), "pbm")
    assert set(choice.held_out) == set(STRENGTHS)
    assert choice.held_out[choice.strength] == max(choice.held_out.values())
    assert choice.strength > 0, choice.held_out  # the prior predicts held-out clicks better
    with_prior = fit(c, "pbm", prior=choice.pseudo_counts)
    ctr = fit(c, "dctr")
    labelled = with_prior.effective_n >= 5
    tau_prior = kendalltau(with_prior.relevance[labelled], true[labelled]).statistic
    tau_ctr = kendalltau(ctr.relevance[labelled], true[labelled]).statistic
    assert tau_prior > tau_ctr + 0.01, (tau_prior, tau_ctr)
    # pseudo-counts pull a pair seen a few times towards the prior mean
    seldom = with_prior.effective_n < 2
    plain = fit(c, "pbm")
    assert np.mean(np.abs(with_prior.relevance[seldom] - choice.mean)) < np.mean(
        np.abs(plain.relevance[seldom] - choice.mean))


def test_no_held_out_choice_without_a_likelihood() -> None:
    _, train, held, _ = _counters(500, 10, 1)
    with pytest.raises(UsageError, match="sdbn has no click likelihood"):
        choose_prior(train.counts(), held.counts(), "sdbn")
    with pytest.raises(UsageError, match="pseudo-counts must be >= 0"):
        fit(train.counts(), "pbm", prior=(-1.0, 2.0))
