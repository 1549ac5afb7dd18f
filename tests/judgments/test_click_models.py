"""Click models: exact counts, exact recovery from noiseless counts, EM's monotone likelihood, and
recovery of known relevance and known position bias from simulated users."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import pytest
from scipy.stats import kendalltau

from recallwatch.errors import UsageError
from recallwatch.judgments.click_models import ClickCounter, ClickCounts, fit, wilson_interval
from recallwatch.judgments.click_models import _counts as counts_module
from recallwatch.judgments.click_models import _tails as tails_module
from recallwatch.judgments.click_models._fit import examination_interval
from recallwatch.judgments.judgments import judgments_from_fit
from recallwatch.online.simulate import (
    examination_by_rank,
    make_collection,
    simulate_batches,
)


@dataclass(frozen=True)
class Rec:
    query_key: str
    shown: tuple[str, ...]
    click_positions: tuple[int, ...]


RECORDS = [
    Rec("q", ("a", "b", "c"), (2,)),
    Rec("q", ("b", "a", "c"), ()),
    Rec("q", ("a", "c", "b"), (1, 3)),
    Rec("r", ("a",), (1,)),
]


def _by_pair(counts: ClickCounts) -> dict[tuple[str, str], int]:
    queries, docs = counts.pair_labels()
    return {(q, d): i for i, (q, d) in enumerate(zip(queries, docs))}


def test_counts_are_exact() -> None:
    counter = ClickCounter(tails=True)
    counter.add(RECORDS)
    c = counter.counts()
    pair = _by_pair(c)
    assert c.n_impressions == 4 and c.n_pairs == 4
    i = pair[("q", "a")]
    assert (c.impressions[i], c.clicks[i]) == (3, 1)
    # simplified DBN: examined at or above the last click, everything when nothing was clicked
    assert c.sdbn_examined[i] == 3 and c.sdbn_last[i] == 0
    j = pair[("q", "b")]
    assert (c.impressions[j], c.clicks[j], c.sdbn_examined[j], c.sdbn_last[j]) == (3, 2, 3, 2)
    k = pair[("q", "c")]
    assert (c.impressions[k], c.clicks[k], c.sdbn_examined[k], c.sdbn_last[k]) == (3, 0, 2, 0)
    # cells (rank, previous click rank): b at rank 3 below a click at rank 1, clicked once
    cells = {(int(p), int(r), int(v)): (int(n), int(cc)) for p, r, v, n, cc in zip(
        c.cell_pair, c.cell_rank, c.cell_prev, c.cell_n, c.cell_c)}
    assert cells[(j, 3, 1)] == (1, 1)
    # DBN: certainly examined only at or above the last click; the cascade model: at or above
    # the first click, everything when nothing was clicked
    assert (c.dbn_certain[i], c.cm_examined[i], c.cm_first[i]) == (2, 3, 1)
    assert (c.dbn_certain[j], c.cm_examined[j], c.cm_first[j]) == (2, 2, 1)
    assert c.dbn_continued == 1 + 2 and c.clicks_after_first == 1
    # tails: below the last click (a click on the last result shown tells nothing more)
    assert c.tails is not None
    tails = {(bool(f), tuple(int(x) for x in row if x >= 0)): int(n)
             for row, f, n in zip(c.tails.pairs, c.tails.clicked, c.tails.n)}
    assert tails == {(True, (j, k)): 1, (False, (j, i, k)): 1}
    assert ClickCounter().counts().tails is None  # kept only when asked for
    assert cells[(j, 2, 0)] == (1, 1) and cells[(j, 1, 0)] == (1, 0)
    assert cells[(k, 3, 2)] == (1, 0)  # c below the click on b at rank 2
    assert cells[(k, 2, 1)] == (1, 0)
    assert sum(cells.values(), (0, 0)) and int(c.cell_n.sum()) == 10


def test_batching_and_merging_do_not_change_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    col = make_collection(30, 12, seed=4)
    batches = list(simulate_batches(col, 3000, k=8, seed=5, batch_size=500))
    whole = ClickCounter(tails=True)
    for b in batches:
        whole.add_encoded(b.queries, b.docs, b.clicks)
    monkeypatch.setattr(counts_module, "_MERGE_ROWS", 100)  # merge after nearly every batch
    monkeypatch.setattr(tails_module, "_MERGE_ROWS", 100)
    small = ClickCounter(tails=True)
    for b in batches:
        for lo in range(0, len(b.queries), 37):
            small.add_encoded(b.queries[lo:lo + 37], b.docs[lo:lo + 37], b.clicks[lo:lo + 37])
    x, y = whole.counts(), small.counts()
    ox, oy = np.lexsort((x.pair_doc, x.pair_query)), np.lexsort((y.pair_doc, y.pair_query))
    for name in ("pair_query", "pair_doc", "impressions", "clicks", "sdbn_examined", "sdbn_last",
                 "dbn_certain", "cm_examined", "cm_first"):
        assert np.array_equal(getattr(x, name)[ox], getattr(y, name)[oy]), name
    assert int(x.cell_n.sum()) == int(y.cell_n.sum()) == 3000 * 8
    assert x.tails is not None and y.tails is not None
    assert _tail_set(x) == _tail_set(y) and sum(_tail_set(x).values()) > 2000


def _tail_set(c: ClickCounts) -> dict[tuple[bool, tuple[tuple[str, str], ...]], int]:
    assert c.tails is not None
    queries, docs = c.pair_labels()
    return {(bool(f), tuple((queries[p], docs[p]) for p in row if p >= 0)): int(n)
            for row, f, n in zip(c.tails.pairs.tolist(), c.tails.clicked, c.tails.n)}


def test_string_and_encoded_input_agree() -> None:
    by_strings = ClickCounter()
    by_strings.add(RECORDS)
    by_codes = ClickCounter()
    docs = np.array([[0, 1, 2], [1, 0, 2], [0, 2, 1], [3, -1, -1]])
    clicks = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 1], [1, 0, 0]], dtype=bool)
    by_codes.add_encoded(np.array([0, 0, 0, 1]), docs, clicks)
    a, b = by_strings.counts(), by_codes.counts()
    assert np.array_equal(a.impressions, b.impressions) and np.array_equal(a.clicks, b.clicks)
    assert np.array_equal(a.cell_c, b.cell_c)


def test_dctr_and_sdbn_are_their_closed_forms() -> None:
    counter = ClickCounter()
    counter.add(RECORDS)
    c = counter.counts()
    j = _by_pair(c)[("q", "b")]
    assert fit(c, "dctr").relevance[j] == pytest.approx(2 / 3)
    sdbn = fit(c, "sdbn")
    assert sdbn.relevance[j] == pytest.approx((2 / 3) * (2 / 2))
    assert sdbn.log_likelihood is None
    # the cascade model: b was at or above the first click twice, the first click once
    assert fit(c, "cm").relevance[j] == pytest.approx(1 / 2)


def _noiseless_counts(alpha: np.ndarray, gamma: np.ndarray, n: int) -> ClickCounts:
    """Every pair shown n times at every rank, clicked exactly n·α·γ times (rounded)."""
    p, r = alpha.size, gamma.size
    pair = np.repeat(np.arange(p), r)
    rank = np.tile(np.arange(1, r + 1), p)
    clicks = np.rint(n * alpha[pair] * gamma[rank - 1]).astype(np.int64)
    zeros = np.zeros(p, dtype=np.int64)
    return ClickCounts(
        query_names=["q"], doc_names=[f"d{i}" for i in range(p)], pair_query=zeros,
        pair_doc=np.arange(p), impressions=np.full(p, n * r), clicks=np.bincount(pair, clicks),
        sdbn_examined=zeros, sdbn_last=zeros, cell_pair=pair, cell_rank=rank,
        cell_prev=np.zeros_like(rank), cell_n=np.full(p * r, n), cell_c=clicks,
        n_impressions=n * r, max_rank=r,
    )


def test_pbm_recovers_known_parameters_from_noiseless_counts() -> None:
    alpha = np.array([0.9, 0.6, 0.3, 0.1, 0.05])
    gamma = np.array([1.0, 0.7, 0.45, 0.3])
    f = fit(_noiseless_counts(alpha, gamma, 1_000_000), "pbm", tol=1e-9, max_iter=20_000)
    assert f.converged
    assert np.allclose(f.relevance, alpha, atol=1e-4)
    assert np.allclose(f.position_bias["examination_by_rank"], gamma, atol=1e-4)


@pytest.mark.parametrize("model", ["pbm", "ubm"])
def test_em_never_lowers_the_likelihood(model: str) -> None:
    counter = ClickCounter()
    for b in simulate_batches(make_collection(20, 15, seed=1), 5000, seed=2):
        counter.add_encoded(b.queries, b.docs, b.clicks)
    f = fit(counter.counts(), model, max_iter=60, tol=0.0)
    trace = np.array(f.log_likelihood_trace)
    assert trace.size > 10
    assert np.all(np.diff(trace) >= -1e-6 * np.abs(trace[:-1]))
    # and it ends above the click-through-rate fit of the same clicks
    assert f.log_likelihood is not None and f.log_likelihood > fit(counter.counts(), "dctr"
                                                                   ).log_likelihood  # type: ignore[operator]


@functools.cache
def _simulated(user: str, seed: int) -> tuple[ClickCounts, np.ndarray]:
    col = make_collection(50, 20, seed=seed, bias_scale=3.0)
    counter = ClickCounter()
    for b in simulate_batches(col, 50_000, user=user, seed=seed + 100):  # type: ignore[arg-type]
        counter.add_encoded(b.queries, b.docs, b.clicks)
    c = counter.counts()
    true = col.grades[c.pair_query, c.pair_doc - c.pair_query * col.docs_per_query]
    return c, true


def _tau(c: ClickCounts, true: np.ndarray, model: str) -> float:
    f = fit(c, model)
    seen = c.impressions >= 10
    return float(kendalltau(f.relevance[seen], true[seen]).statistic)


@pytest.mark.parametrize("seed", [0, 1])
def test_position_models_beat_click_through_rate_on_pbm_users(seed: int) -> None:
    c, true = _simulated("pbm", seed)
    tau = {m: _tau(c, true, m) for m in ("dctr", "pbm", "ubm")}
    assert tau["dctr"] > 0.6  # every model recovers the order, roughly
    assert tau["pbm"] > tau["dctr"] + 0.02, tau
    assert tau["ubm"] > tau["dctr"] + 0.02, tau
    # the known position bias 1/r is recovered
    bias = fit(c, "pbm").position_bias["examination_by_rank"]
    assert np.allclose(bias, examination_by_rank(10), atol=0.03)


@pytest.mark.parametrize("seed", [0, 1])
def test_debiased_models_beat_click_through_rate_on_cascade_users(seed: int) -> None:
    c, true = _simulated("cascade", seed)
    tau = {m: _tau(c, true, m) for m in ("dctr", "pbm", "ubm")}
    assert tau["ubm"] > tau["dctr"] + 0.04, tau
    assert tau["pbm"] > tau["dctr"], tau


def test_intervals_hold_the_estimate_and_match_known_values() -> None:
    k = np.array([0.0, 3.0, 10.0, 7.5])
    n = np.array([10.0, 10.0, 10.0, 0.0])
    low, high = wilson_interval(k, n, 0.95)
    # Wilson 95 % for 3 of 10: (0.1078, 0.6032); for 0 of 10: (0, 0.2775)
    assert (low[1], high[1]) == pytest.approx((0.10779, 0.60322), abs=1e-5)
    assert (low[0], high[0]) == pytest.approx((0.0, 0.27753), abs=1e-5)
    assert high[2] == pytest.approx(1.0) and (low[3], high[3]) == (0.0, 1.0)
    c, _ = _simulated("pbm", 0)
    for model in ("dctr", "pbm", "ubm", "cm", "sdbn"):
        f = fit(c, model)
        assert np.all(f.ci_low <= f.relevance + 1e-9) and np.all(f.relevance <= f.ci_high + 1e-9)
        assert np.all((f.ci_low >= 0) & (f.ci_high <= 1))


# P(click | looked at) by grade: the best results are clicked almost every time they are seen
NEAR_ONE = np.array([0.1, 0.4, 0.75, 0.99])


@functools.cache
def _near_one() -> tuple[ClickCounts, np.ndarray]:
    """PBM users (position bias 1/r) on 150 queries × 10 results, about 400 impressions per
    query; every result is shown in every impression, at a rank that varies with the ranker's
    noise, and grade-3 results are clicked in 99 % of their looks."""
    col = make_collection(150, 10, seed=3, bias_scale=3.0)
    counter = ClickCounter(tails=True)
    for b in simulate_batches(col, 60_000, k=10, seed=5, attractiveness=NEAR_ONE):
        counter.add_encoded(b.queries, b.docs, b.clicks)
    c = counter.counts()
    return c, col.grades[c.pair_query, c.pair_doc - c.pair_query * col.docs_per_query]


def _fisher_equivalent(f: object, c: ClickCounts) -> np.ndarray:
    """The count PBM used to report: the Fisher information of α as Bernoulli trials,
    Σ n γ (1 − α) / (1 − α γ), which vanishes as α nears 1."""
    gamma = np.asarray(f.position_bias["examination_by_rank"])[c.cell_rank - 1]  # type: ignore[attr-defined]
    a = np.clip(f.relevance[c.cell_pair], 1e-12, 1 - 1e-12)  # type: ignore[attr-defined]
    return np.bincount(c.cell_pair, weights=c.cell_n * gamma * (1 - a) / (1 - a * gamma),
                       minlength=c.n_pairs)


@pytest.mark.parametrize("model", ["pbm", "ubm"])
def test_the_most_attractive_results_are_labelled(model: str) -> None:
    c, true = _near_one()
    f = fit(c, model)
    best = true == 3
    # the log is the hard case: by the Fisher count, some of the best pairs were hardly examined
    assert np.count_nonzero(_fisher_equivalent(fit(c, "pbm"), c)[best] < 5) >= 10
    # counted from the fitted examination probabilities, every pair was looked at dozens of times
    gamma = np.asarray(fit(c, "pbm").position_bias["examination_by_rank"])
    looks = np.bincount(c.cell_pair, weights=c.cell_n * gamma[c.cell_rank - 1],
                        minlength=c.n_pairs)
    if model == "pbm":
        assert np.allclose(f.effective_n, looks)
    assert f.effective_n.min() > 20
    judged = judgments_from_fit(f)
    assert judged.unlabelled == 0 and judged.too_sparse == []
    assert len(judged.judgments) == c.n_pairs
    # and the labels order the pairs better than raw click-through rate does
    tau = float(kendalltau(f.relevance, true).statistic)
    ctr = float(kendalltau(fit(c, "dctr").relevance, true).statistic)
    assert tau > ctr + 0.03, (tau, ctr)
    # the intervals stay honest at the boundary: they hold the true attractiveness as often as
    # they claim, the best pairs' (0.99) included
    held = (f.ci_low <= NEAR_ONE[true]) & (NEAR_ONE[true] <= f.ci_high)
    assert held.mean() >= 0.93 and held[best].mean() >= 0.93
    assert np.all(f.ci_high[best] - f.ci_low[best] < 0.5)


def test_the_cascade_family_counts_examinations_without_the_flaw() -> None:
    """DBN counts expected examinations (its E-step), CM and SDBN count looks outright: none of
    them derives the count from an information that vanishes near 1."""
    c, true = _near_one()
    dbn = judgments_from_fit(fit(c, "dbn"))
    assert dbn.too_sparse == [] and dbn.unlabelled == 0
    sdbn = fit(c, "sdbn")
    assert np.array_equal(sdbn.effective_n, c.sdbn_examined)
    assert np.all(sdbn.effective_n[true == 3] >= 5)


def test_examination_interval_is_wilsons_when_every_look_is_certain() -> None:
    relevance = np.array([0.0, 0.3, 0.75, 1.0, 0.5])
    n = np.array([10.0, 10.0, 40.0, 25.0, 0.0])
    low, high = examination_interval(relevance, n, n, 0.95)
    w_low, w_high = wilson_interval(relevance * n, n, 0.95)
    assert np.allclose(low, w_low) and np.allclose(high, w_high)
    # looked at with probability 0.2 each time: wider than Wilson's on the same expected looks
    # (a non-click is weaker evidence), and not collapsed at 1
    low2, high2 = examination_interval(relevance, n, 0.2 * n, 0.95)
    assert np.all(low2[:4] <= low[:4] + 1e-12) and low2[3] < 1.0 and high2[3] == 1.0
    assert (low2[-1], high2[-1]) == (0.0, 1.0)


def test_unknown_model_and_bad_settings() -> None:
    counter = ClickCounter()
    counter.add(RECORDS)
    with pytest.raises(UsageError, match=r"unknown click model 'pdm' \(did you mean 'pbm'\?\); "
                                         r"valid: cm, dbn, dctr, pbm, sdbn, ubm"):
        fit(counter.counts(), "pdm")
    with pytest.raises(UsageError, match="level"):
        fit(counter.counts(), "pbm", level=1.5)
    with pytest.raises(UsageError, match="max_rank"):
        ClickCounter(max_rank=0)
