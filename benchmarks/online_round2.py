"""Figures of docs/online.md for the cascade-family click models, labels from examined pairs, the
prior, CUPED, sequential tests and multileaving: every one from simulated users with fixed seeds
(recallwatch.online.simulate), so the same command prints the same figures on any machine.

    PYTHONPATH=. .venv/bin/python benchmarks/online_round2.py            # every part
    PYTHONPATH=. .venv/bin/python benchmarks/online_round2.py dbn prior  # some parts

Parts: dbn (recovery of the DBN's and the cascade model's parameters, Kendall tau of each model on
cascade users), labels (pairs that a --min-impressions rule alone would label without
examinations), prior (PBM with the prior at about 20 impressions per pair), cuped, sequential,
multileave.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import numpy as np
from scipy import stats
from scipy.stats import kendalltau

from recallwatch.judgments.click_models import ClickCounter, fit
from recallwatch.judgments.click_models.prior import choose_prior
from recallwatch.online.simulate import (
    ATTRACTIVENESS,
    SATISFACTION,
    make_collection,
    simulate_batches,
)


def _count(user: str, n: int, queries: int, docs: int, seed: int,
           split: bool = False) -> tuple[Any, ...]:
    col = make_collection(queries, docs, seed=seed, bias_scale=3.0)
    full = ClickCounter(tails=True)
    train, held = ClickCounter(tails=True), ClickCounter(tails=True)
    done = 0
    for b in simulate_batches(col, n, user=user, seed=seed + 100):  # type: ignore[arg-type]
        full.add_encoded(b.queries, b.docs, b.clicks)
        if split:
            out = (np.arange(done, done + b.queries.size) % 5) == 4
            train.add_encoded(b.queries[~out], b.docs[~out], b.clicks[~out])
            held.add_encoded(b.queries[out], b.docs[out], b.clicks[out])
        done += b.queries.size
    c = full.counts()
    true = col.grades[c.pair_query, c.pair_doc - c.pair_query * col.docs_per_query]
    return c, true, train, held


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    return round(float(kendalltau(x, y).statistic), 3)


def part_dbn() -> dict[str, Any]:
    out: dict[str, Any] = {}
    c, true, _, _ = _count("cascade", 30_000, 40, 15, 3)
    f = fit(c, "dbn")
    a, s = f.parameters["attractiveness"], f.parameters["satisfaction"]
    seen, s_seen = f.effective_n >= 100, f.parameters["satisfaction_evidence"] >= 50
    out["dbn_on_cascade_users"] = {
        "gamma": {"true": 0.9, "estimated": f.parameters["gamma"]},
        "a_by_grade": {g: [float(ATTRACTIVENESS[g]), round(float(a[seen & (true == g)].mean()), 3)]
                       for g in range(4)},
        "s_by_grade (pairs with >= 50 clicks that could show it)": {
            g: [float(SATISFACTION[g]), round(float(s[s_seen & (true == g)].mean()), 3)
                if (s_seen & (true == g)).any() else None] for g in range(4)},
        "a_times_s_by_grade": {g: [round(float(ATTRACTIVENESS[g] * SATISFACTION[g]), 4),
                                   round(float(f.relevance[seen & (true == g)].mean()), 4)]
                               for g in range(4)},
        "em_steps": f.iterations}
    c, true, _, _ = _count("cm", 30_000, 40, 15, 4)
    f = fit(c, "cm")
    seen = f.effective_n >= 100
    out["cm_on_cm_users"] = {g: [float(ATTRACTIVENESS[g]),
                                 round(float(f.relevance[seen & (true == g)].mean()), 3)]
                             for g in range(4)}
    taus = {}
    for seed in (0, 1):
        c, true, _, _ = _count("cascade", 40_000, 50, 15, seed)
        fits = {m: fit(c, m) for m in ("dctr", "pbm", "ubm", "cm", "sdbn", "dbn")}
        fits["dbn+prior(5)"] = fit(c, "dbn", prior=(5 * 0.3, 5 * 0.7))
        labelled = (c.impressions >= 10) & (fits["dbn"].effective_n >= 5)
        taus[f"seed {seed} ({int(labelled.sum())} labelled pairs)"] = {
            m: _tau(f.relevance[labelled], true[labelled]) for m, f in fits.items()}
    out["kendall_tau_on_cascade_users"] = taus
    return out


def part_labels() -> dict[str, Any]:
    c, true, _, _ = _count("cascade", 20_000, 30, 20, 3)
    f = fit(c, "dbn")
    shown = c.impressions >= 10
    unexamined = shown & (f.effective_n < 5)
    return {"pairs_shown_10_times": int(shown.sum()),
            "of_which_examined_fewer_than_5_times": int(unexamined.sum()),
            "of_those_truly_relevant (grade >= 1)": int((unexamined & (true >= 1)).sum()),
            "of_those_with_zero_clicks": int((unexamined & (c.clicks == 0)).sum())}


def part_prior() -> dict[str, Any]:
    c, true, train, held = _count("pbm", 8_000, 200, 20, 0, split=True)
    choice = choose_prior(train.counts(), held.counts(), "pbm")
    plain, prior, ctr = fit(c, "pbm"), fit(c, "pbm", prior=choice.pseudo_counts), fit(c, "dctr")
    everything = c.impressions >= 1
    labelled = prior.effective_n >= 5
    return {"impressions_per_pair": round(float(c.impressions.mean()), 1),
            "chosen": choice.to_dict(),
            "tau_all_pairs": {"dctr": _tau(ctr.relevance[everything], true[everything]),
                              "pbm": _tau(plain.relevance[everything], true[everything]),
                              "pbm+prior": _tau(prior.relevance[everything], true[everything])},
            f"tau_labelled_pairs ({int(labelled.sum())}, >= 5 examinations)": {
                "dctr": _tau(ctr.relevance[labelled], true[labelled]),
                "pbm": _tau(plain.relevance[labelled], true[labelled]),
                "pbm+prior": _tau(prior.relevance[labelled], true[labelled])}}


def part_cuped() -> dict[str, Any]:
    sys.path.insert(0, ".")
    from recallwatch.online import ABConfig, readout
    from tests.online.test_cuped import _users

    rng = np.random.default_rng(7)
    runs, cov, cov_raw, red = 300, 0, 0, []
    for _ in range(runs):
        table, x, true = _users(600, rng, 0.05)
        adj = readout(table, ABConfig(min_units=10), covariates=x).metrics["ctr"]
        raw = readout(table, ABConfig(min_units=10)).metrics["ctr"]
        cov += adj.ci[0] <= true <= adj.ci[1]
        cov_raw += raw.ci[0] <= true <= raw.ci[1]
        red.append(adj.cuped["variance_reduction"] if adj.cuped else 0.0)
    return {"runs": runs, "coverage_cuped": cov / runs, "coverage_unadjusted": cov_raw / runs,
            "mean_variance_reduction": round(float(np.mean(red)), 3)}


def part_sequential() -> dict[str, Any]:
    from recallwatch.online.sequential import msprt

    sims, days, per_day, base = 20_000, 30, 200, 0.3
    rng = np.random.default_rng(1)

    def looks(p_t: float) -> tuple[np.ndarray, np.ndarray]:
        c = rng.binomial(per_day, base, size=(sims, days)).cumsum(axis=1)
        t = rng.binomial(per_day, p_t, size=(sims, days)).cumsum(axis=1)
        n = per_day * np.arange(1, days + 1)
        return t / n - c / n, (c / n) * (1 - c / n) / n + (t / n) * (1 - t / n) / n

    d, v = looks(base)
    p, _, _ = msprt(d, v, (0.05 * base) ** 2, 0.05)
    naive = 2 * stats.norm.sf(np.abs(d) / np.sqrt(v))
    d2, v2 = looks(base + 0.02)
    _, lo, hi = msprt(d2, v2, (0.05 * base) ** 2, 0.05)
    mc = 3 * math.sqrt(0.05 * 0.95 / sims)
    return {"simulations": sims, "looks": days, "units_per_variant_per_day": per_day,
            "false_positive_msprt_daily_peeking": float(np.mean((p <= 0.05).any(axis=1))),
            "false_positive_z_test_daily_peeking": float(np.mean((naive <= 0.05).any(axis=1))),
            "confidence_sequence_coverage_at_every_look": float(
                np.mean(((lo <= 0.02) & (hi >= 0.02)).all(axis=1))),
            "monte_carlo_error_3se": round(mc, 4)}


def part_multileave() -> dict[str, Any]:
    from recallwatch.online import score_interleaving
    from recallwatch.online.multileave import score_multileaving
    from tests.online.test_multileave import _impressions

    col = make_collection(30, 15, seed=2)
    same = col.ranking(1.0, seed=3)
    sims = 300
    rejected = {"impression": 0, "user": 0}
    for by in rejected:
        for s in range(sims):
            r = score_multileaving(_impressions([same, same, same], col.grades, 150, s,
                                                users=40 if by == "user" else 0),
                                   by=by)  # type: ignore[arg-type]
            rejected[by] += any(p.p_value_holm < 0.05 for p in r.pairs)
    pair_user = 0
    for s in range(sims):
        pair_user += score_interleaving(_impressions([same, same], col.grades, 150, 100 + s,
                                                     users=30), by="user").p_value < 0.05
    return {"simulations": sims, "multileave_3_equal_rankers_false_positive": {
        k: v / sims for k, v in rejected.items()},
        "interleave_by_user_false_positive": pair_user / sims}


PARTS = {"dbn": part_dbn, "labels": part_labels, "prior": part_prior, "cuped": part_cuped,
         "sequential": part_sequential, "multileave": part_multileave}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(PARTS):
        print(json.dumps({name: PARTS[name]()}, indent=1, default=str), flush=True)
