"""Online evaluation benchmark: click-model fitting at scale, the log reader's throughput, and how
many impressions A/B testing and interleaving need to detect the same small difference.

    .venv/bin/python benchmarks/online_bench.py                       # everything, 10 M impressions
    .venv/bin/python benchmarks/online_bench.py --impressions 1000000 --log-lines 100000 --quick

Every part runs in its own fresh process, so its peak resident memory (``ru_maxrss``: the whole
process, interpreter and imports included) is its own. All data is simulated with fixed seeds
(recallwatch.online.simulate): the same arguments print the same quality figures; times and
memory depend on the machine.

Parts:
  em      N impressions from a generator of encoded batches (never all in memory) are counted
          into click tables (ClickCounter), then DCTR, PBM, UBM and the simplified DBN (sdbn)
          are fitted;
          Kendall's tau of each model's relevance against the true grades (pairs shown at least
          10 times, and 100 times), for users who follow PBM and for cascade users.
  log     a JSONL interaction log written to disk and read back through InteractionLog into the
          click counter, as `recallwatch online clicks` does: lines per second and peak memory.
  sizes   two rankers with a small known difference; the impressions an A/B test (CTR and
          abandonment, one impression per user, the A/B test's best case) and team-draft
          interleaving need for 80 % power at alpha 0.05, from large pilot runs, then checked by
          replicating whole experiments at those sizes.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

PARTS = ("em", "log", "sizes")
MODELS = ("dctr", "pbm", "ubm", "sdbn")


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- em ------------------------------------------------------------------------------------------

def part_em(impressions: int, queries: int, docs: int, seed: int,
            users: list[str]) -> dict[str, Any]:
    from scipy.stats import kendalltau

    from recallwatch.judgments.click_models import ClickCounter, fit
    from recallwatch.online.simulate import make_collection, simulate_batches

    baseline = _rss_mb()
    col = make_collection(queries, docs, seed=seed, bias_scale=3.0)
    out: dict[str, Any] = {"baseline_rss_mb": baseline, "users": {}}
    for user in users:
        counter = ClickCounter()
        t0 = time.perf_counter()
        for batch in simulate_batches(col, impressions, user=user,  # type: ignore[arg-type]
                                      seed=seed + 1, batch_size=200_000):
            counter.add_encoded(batch.queries, batch.docs, batch.clicks)
        counts = counter.counts()
        counted = time.perf_counter() - t0
        true = col.grades[counts.pair_query, counts.pair_doc - counts.pair_query * docs]
        seen = counts.impressions >= 10
        table_mb = sum(getattr(counts, f).nbytes for f in (
            "pair_query", "pair_doc", "impressions", "clicks", "sdbn_examined", "sdbn_last",
            "cell_pair", "cell_rank", "cell_prev", "cell_n", "cell_c")) / 2**20
        models: dict[str, Any] = {}
        for model in MODELS:
            f = fit(counts, model)
            per_query = []
            for rows in _groups(counts.pair_query[seen]):
                idx = np.flatnonzero(seen)[rows]
                if idx.size > 2 and np.unique(true[idx]).size > 1:
                    per_query.append(kendalltau(f.relevance[idx], true[idx]).statistic)
            well = counts.impressions >= 100
            models[model] = {
                "fit_seconds": round(f.seconds, 3), "steps": f.iterations,
                "converged": f.converged,
                "tau": round(float(kendalltau(f.relevance[seen], true[seen]).statistic), 4),
                "tau_per_query_mean": round(float(np.nanmean(per_query)), 4),
                "tau_pairs_shown_100_times": round(float(kendalltau(
                    f.relevance[well], true[well]).statistic), 4) if well.sum() > 2 else None,
            }
            if model == "pbm":
                models[model]["examination_by_rank"] = f.position_bias["examination_by_rank"]
        out["users"][user] = {
            "count_seconds (simulate + aggregate)": round(counted, 2),
            "pairs": counts.n_pairs, "pairs_shown_10_times": int(seen.sum()),
            "pairs_shown_100_times": int((counts.impressions >= 100).sum()),
            "cells": int(counts.cell_n.size),
            "count_tables_mb": round(table_mb, 1), "models": models,
        }
    out["peak_rss_mb"] = _rss_mb()
    return out


def _groups(keys: np.ndarray) -> list[np.ndarray]:
    """Indexes of ``keys`` grouped by value."""
    order = np.argsort(keys, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(keys[order])) + 1)


# -- log -----------------------------------------------------------------------------------------

def part_log(lines: int, seed: int, directory: Path) -> dict[str, Any]:
    from recallwatch.judgments.click_models import ClickCounter, fit
    from recallwatch.online import InteractionLog
    from recallwatch.online.simulate import make_collection, simulate_log

    col = make_collection(1000, 20, seed=seed, bias_scale=3.0)
    path = directory / "log.jsonl"
    t0 = time.perf_counter()
    with path.open("w") as fh:
        for record in simulate_log(col, lines, seed=seed + 1):
            fh.write(json.dumps(record) + "\n")
    written = time.perf_counter() - t0
    baseline = _rss_mb()
    log = InteractionLog(path)
    counter = ClickCounter()
    t0 = time.perf_counter()
    counter.add(log)
    read = time.perf_counter() - t0
    t0 = time.perf_counter()
    fitted = fit(counter.counts(), "pbm")
    return {"lines": lines, "bytes": path.stat().st_size, "write_seconds": round(written, 2),
            "read_and_count_seconds": round(read, 2), "lines_per_second": round(lines / read),
            "pbm_fit_seconds": round(time.perf_counter() - t0, 3),
            "pbm_steps": fitted.iterations, "baseline_rss_mb": baseline,
            "peak_rss_mb": _rss_mb(), "sha256": log.summary.sha256}


# -- sizes ---------------------------------------------------------------------------------------

def part_sizes(seed: int, replicates: int, pilot: int, max_check: int) -> dict[str, Any]:
    from scipy import stats

    from recallwatch.metrics import Qrels, Run, evaluate
    from recallwatch.online import ABConfig, readout, sign_test, team_draft
    from recallwatch.online.ab import UnitTable
    from recallwatch.online.simulate import make_collection, simulate_clicks

    k = 10
    col = make_collection(1000, 20, seed=seed, bias_scale=1.0)
    rank_a, rank_b = col.ranking(1.0, seed=seed + 1), col.ranking(0.8, seed=seed + 2)
    qrels = Qrels.from_dict(col.qrels())

    def ndcg(ranking: np.ndarray) -> float:
        run = Run.from_ranked({col.query_id(q): [col.doc_id(q, int(j)) for j in ranking[q, :k]]
                               for q in range(col.n_queries)})
        return float(evaluate(qrels, run, ["nDCG@10"]).to_json()["aggregate"]["nDCG@10"])

    ndcg_a, ndcg_b = ndcg(rank_a), ndcg(rank_b)
    rng = np.random.default_rng(seed + 3)
    # every team-draft list of each query: 5 coin flips for k = 10, 32 equally likely lists
    pool = 64
    lists = np.empty((col.n_queries, pool, k), dtype=np.int64)
    teams = np.empty((col.n_queries, pool, k), dtype=bool)  # True = B
    for q in range(col.n_queries):
        for i in range(pool):
            picks = team_draft(rank_a[q].tolist(), rank_b[q].tolist(), k, rng)
            lists[q, i] = [p.id for p in picks]
            teams[q, i] = [p.team == "B" for p in picks]

    def ab_units(n: int) -> tuple[np.ndarray, np.ndarray]:
        """n users, one impression each, half per variant: (variant, clicks)."""
        variant = rng.integers(0, 2, n)
        queries = rng.integers(0, col.n_queries, n)
        shown = np.where(variant[:, None] == 1, rank_b[queries, :k], rank_a[queries, :k])
        grades = np.take_along_axis(col.grades[queries], shown, axis=1)
        clicks = simulate_clicks(grades, rng, user="cascade").sum(axis=1).astype(np.float64)
        return variant, clicks

    def interleaved(n: int) -> tuple[int, int, int]:
        queries = rng.integers(0, col.n_queries, n)
        which = rng.integers(0, pool, n)
        shown, team_b = lists[queries, which], teams[queries, which]
        grades = np.take_along_axis(col.grades[queries], shown, axis=1)
        clicks = simulate_clicks(grades, rng, user="cascade")
        b = (clicks & team_b).sum(axis=1)
        a = (clicks & ~team_b).sum(axis=1)
        return int((a > b).sum()), int((b > a).sum()), int((a == b).sum())

    def ab_table(variant: np.ndarray, clicks: np.ndarray) -> UnitTable:
        ones = np.ones_like(clicks)
        return UnitTable(["A", "B"], ("ctr", "abandonment"), variant,
                         np.stack([clicks, (clicks == 0).astype(np.float64)]),
                         np.stack([ones, ones]))

    z = float(stats.norm.isf(0.025) + stats.norm.ppf(0.8))
    # pilot A/B: the readout's own "units needed" for the true (pilot) effect
    t0 = time.perf_counter()
    variant, clicks = ab_units(pilot)
    pilot_ab = readout(ab_table(variant, clicks), ABConfig(metrics=("ctr", "abandonment"),
                                                          min_units=10))
    needed_ab = {}
    for name, m in pilot_ab.metrics.items():
        per_unit = m.std_error**2 / (1 / m.units["A"] + 1 / m.units["B"])
        needed_ab[name] = math.ceil(2 * (z**2 * 2 * per_unit / m.delta**2))  # both variants
    # pilot interleaving: the sign test's normal-approximation sample size
    wins_a, wins_b, ties = interleaved(pilot)
    decided = (wins_a + wins_b) / pilot
    share = wins_b / (wins_a + wins_b)
    zq = (float(stats.norm.isf(0.025)) * 0.5 + float(stats.norm.ppf(0.8))
          * math.sqrt(share * (1 - share))) / abs(share - 0.5)
    needed_il = math.ceil(zq**2 / decided)
    pilot_seconds = time.perf_counter() - t0

    def power_ab(n: int, metric: str) -> float:
        hits = 0
        for _ in range(replicates):
            v, c = ab_units(n)
            r = readout(ab_table(v, c), ABConfig(metrics=("ctr", "abandonment"), min_units=2))
            m = r.metrics[metric]
            hits += m.p_value < 0.05 and (m.delta > 0) == (metric == "ctr")
        return hits / replicates

    def power_il(n: int) -> float:
        hits = 0
        for _ in range(replicates):
            wa, wb, _ = interleaved(n)
            hits += sign_test(wa, wb) < 0.05 and wb > wa
        return hits / replicates

    t0 = time.perf_counter()
    # replicate whole experiments at the computed sizes (skipped above max_check impressions:
    # replicates x size simulated impressions would take too long)
    checked: dict[str, float | None] = {
        "ab_ctr": power_ab(needed_ab["ctr"], "ctr") if needed_ab["ctr"] <= max_check else None,
        "ab_abandonment": power_ab(needed_ab["abandonment"], "abandonment")
        if needed_ab["abandonment"] <= max_check else None,
        "interleaving": power_il(needed_il),
        "interleaving_at_a_tenth": power_il(max(10, needed_il // 10)),
    }
    return {
        "offline": {"nDCG@10_A": round(ndcg_a, 4), "nDCG@10_B": round(ndcg_b, 4),
                    "delta": round(ndcg_b - ndcg_a, 4)},
        "pilot_impressions": pilot,
        "pilot_ab": {name: {"A": m.values["A"], "B": m.values["B"], "delta": m.delta,
                            "p_value": m.p_value} for name, m in pilot_ab.metrics.items()},
        "pilot_interleaving": {"wins_A": wins_a, "wins_B": wins_b, "ties": ties,
                               "preference_B": share},
        "impressions_needed": {"ab_ctr": needed_ab["ctr"],
                               "ab_abandonment": needed_ab["abandonment"],
                               "interleaving": needed_il},
        "ratio_ab_ctr_to_interleaving": round(needed_ab["ctr"] / needed_il, 1),
        "replicates": replicates, "max_check": max_check,
        "power_observed_at_those_sizes": checked,
        "pilot_seconds": round(pilot_seconds, 1),
        "check_seconds": round(time.perf_counter() - t0, 1),
        "peak_rss_mb": _rss_mb(),
    }


# -- driver --------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--impressions", type=int, default=10_000_000)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=20, help="documents per query")
    parser.add_argument("--users", default="pbm,cascade", help="simulated user models for em")
    parser.add_argument("--log-lines", type=int, default=1_000_000)
    parser.add_argument("--replicates", type=int, default=200)
    parser.add_argument("--pilot", type=int, default=2_000_000)
    parser.add_argument("--max-check", type=int, default=500_000,
                        help="replicate experiments only up to this many impressions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--out", type=Path, help="write every figure here (JSON)")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # internal: run one part and exit
    args = parser.parse_args()
    if args.quick:
        args.impressions = min(args.impressions, 200_000)
        args.queries = min(args.queries, 500)
        args.log_lines = min(args.log_lines, 20_000)
        args.replicates = min(args.replicates, 40)
        args.pilot = min(args.pilot, 200_000)
    if args.part:
        result = _run_part(args)
        print(json.dumps(result))
        return
    from recallwatch.bench.sweep import machine_info

    started = datetime.now(UTC)
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started": started.isoformat(timespec="seconds"),
        "config": {k: v for k, v in vars(args).items() if k not in ("part", "out")},
    }
    for part in args.parts.split(","):
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--part", part],
                              check=True, capture_output=True, text=True)
        results[part] = json.loads(done.stdout.strip().splitlines()[-1])
        results[part]["wall_seconds"] = round(time.perf_counter() - t0, 1)
        print(f"== {part} ({results[part]['wall_seconds']} s)")
        print(json.dumps(results[part], indent=2))
        sys.stdout.flush()
    results["machine"] = machine_info(("scipy",))
    results["finished"] = datetime.now(UTC).isoformat(timespec="seconds")
    print(f"machine: {results['machine']}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


def _run_part(args: argparse.Namespace) -> dict[str, Any]:
    if args.part == "em":
        return part_em(args.impressions, args.queries, args.docs, args.seed,
                       args.users.split(","))
    if args.part == "log":
        with tempfile.TemporaryDirectory() as tmp:
            return part_log(args.log_lines, args.seed, Path(tmp))
    if args.part == "sizes":
        return part_sizes(args.seed, args.replicates, args.pilot, args.max_check)
    raise SystemExit(f"unknown part {args.part!r}; valid: {', '.join(PARTS)}")


if __name__ == "__main__":
    main()
