"""How often two of recallwatch's decisions are wrong, measured: the experiment's winner and the
reindex switch, on inputs whose truth is known.

    .venv/bin/python benchmarks/decisions_winner_bench.py [--out FILE.json] [--seeds 200]
        [--skip-kb] [--exp-dir DIR]

**Experiment winner** (:func:`recallwatch.experiment.choice.choose`, the product's own choice):

* *A/A, identical variants*: a plan whose variants are the base under other names. On the
  example knowledge base (`examples/kb`, BM25, so nothing is embedded) the plan is run once for
  real, then its per-question scores are re-split into tune/test halves with many seeds.
* *A/A, equal but different variants*: synthetic golden sets (per-question quality 0 or 100,
  nDCG in [0, 1]) where six variants have exactly the base's success probability per question
  but their own luck: the false-winner rate, at 34, 82 and 200 questions. The rule recallwatch
  used before (the best tune mean quality wins) is scored on the same draws.
* *Detection*: one variant truly better (its chance of finding a question's chunks raised by
  +0.10, +0.20 or +0.30) among five equal ones; and on the example knowledge base, the real
  `written-hybrid` (nDCG@K +0.1 on every question) against `written-dense` over many splits, alone
  and among the nine variants of `examples/kb/experiment.yaml`.
* *Cost ties*: the side-by-side timing's pairwise test on variants of the same speed under a
  drifting load: how often one is called significantly cheaper.

**Reindex switch** (:func:`recallwatch.ops.reindex.recall_difference` and
:func:`~recallwatch.ops.reindex.refusal`, the rule `ops reindex` applies): an hnswlib index of
2,000 clustered vectors built with ``m=16``, and new indexes built with ``m`` from 16 down to 2.
Each index's per-probe recall@10 is measured on a pool of 2,000 probes (its true difference from
the live one is that pool's mean); then probe sets of 40, 100, 200 and 500 are drawn from the
pool and the rule decides: the *false switch rate* is how often an index worse than the
tolerance is switched in, the *switch rate* of a not-worse index is how often it is accepted.
A few real `reindex` calls confirm the rule end to end.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _unit import begun, finish  # noqa: E402

from recallwatch.experiment.choice import choose  # noqa: E402
from recallwatch.experiment.evaluate import PartResult, VariantOutcome  # noqa: E402
from recallwatch.experiment.timing import Costs, compare_latencies, separate_costs  # noqa: E402

Scores = dict[str, dict[str, float]]  # question -> field -> value


# -- experiment: outcomes from per-question scores ------------------------------------------------


def _part(rows: Scores) -> PartResult:
    def mean(field: str) -> float:
        return float(np.mean([r[field] for r in rows.values()])) if rows else 0.0

    metrics: dict[str, float | None] = {
        "mean_quality": mean("quality"), "mean_recall": mean("recall"),
        "mean_ndcg": mean("ndcg"), "mrr": mean("rr"), "mean_fact_recall": None,
        "judged_at_k": None}
    return PartResult("ACCEPT", metrics, rows, 0, None, None)


def _outcomes(per_variant: dict[str, Scores], tune: set[str] | None) -> list[VariantOutcome]:
    """Outcomes split into ``tune`` (the questions given) and test (the rest)."""
    out = []
    for name, rows in per_variant.items():
        if tune is None:
            parts = {"all": _part(rows)}
        else:
            parts = {"tune": _part({q: r for q, r in rows.items() if q in tune}),
                     "test": _part({q: r for q, r in rows.items() if q not in tune})}
        out.append(VariantOutcome(name, {}, {}, parts, None, None, 0.0))
    return out


def _split(questions: Sequence[str], rng: np.random.Generator) -> set[str]:
    picked = rng.permutation(len(questions))[: len(questions) // 2]
    return {questions[i] for i in picked}


def _no_costs(names: Sequence[str]) -> Costs:
    return separate_costs({n: {"search_p50_ms": 1.0} for n in names})


def _old_rule(outcomes: list[VariantOutcome]) -> str:
    """The winner before evidence was required: best tune mean quality, then nDCG@K, MRR."""
    def key(item: tuple[int, VariantOutcome]) -> tuple[float, ...]:
        m = item[1].parts["tune"].metrics
        return (*(-(m[k] or 0.0) for k in ("mean_quality", "mean_ndcg", "mrr")), item[0])

    return sorted(enumerate(outcomes), key=key)[0][1].name


def _synthetic(rng: np.random.Generator, n: int, effects: Sequence[float]) -> dict[str, Scores]:
    """Per-question scores of a base and one variant per effect: each question has a chance of
    being found (quality 100, else 0), the same for every variant plus its effect; nDCG of a
    found question is the question's own level plus each variant's noise."""
    chance = rng.beta(3.0, 1.2, size=n)
    level = rng.beta(3.0, 2.0, size=n)
    out = {}
    for j, effect in enumerate([0.0, *effects]):
        found = rng.random(n) < np.clip(chance + effect, 0.0, 1.0)
        ndcg = np.clip(level + rng.normal(0.0, 0.08, size=n), 0.0, 1.0) * found
        out["base" if j == 0 else f"v{j}"] = {
            f"q{i:03d}": {"quality": 100.0 * found[i], "recall": float(found[i]),
                          "ndcg": float(ndcg[i]), "rr": float(ndcg[i])} for i in range(n)}
    return out


def _rate(hits: int, runs: int) -> dict[str, Any]:
    """A rate with its 95 % Wilson interval."""
    from scipy.stats import norm

    z = float(norm.ppf(0.975))
    p = hits / runs
    centre = (p + z * z / (2 * runs)) / (1 + z * z / runs)
    half = z * np.sqrt(p * (1 - p) / runs + z * z / (4 * runs * runs)) / (1 + z * z / runs)
    return {"hits": hits, "runs": runs, "rate": p, "ci": [max(0.0, centre - half),
                                                           min(1.0, centre + half)]}


def synthetic_winner(seeds: int) -> list[dict[str, Any]]:
    rows = []
    for n in (34, 82, 200):
        rows.append(_winner_case(f"A/A: 6 equal variants, {n} questions", seeds, n, [0.0] * 6,
                                 None))
    for n in (82, 200):
        for effect in (0.10, 0.20, 0.30):
            rows.append(_winner_case(f"detection: one variant +{effect:.2f} among 6, {n} "
                                     "questions", seeds, n, [effect] + [0.0] * 5, "v1"))
    return rows


def _winner_case(label: str, seeds: int, n: int, effects: list[float], truth: str | None
                 ) -> dict[str, Any]:
    new_hits = old_hits = 0
    start = time.perf_counter()
    for seed in range(seeds):
        rng = np.random.default_rng([n, seed, int(1000 * sum(effects))])
        scores = _synthetic(rng, n, effects)
        outcomes = _outcomes(scores, _split(sorted(scores["base"]), rng))
        winner = choose(outcomes, _no_costs(list(scores))).winner
        old = _old_rule(outcomes)
        if truth is None:
            new_hits += winner != "base"
            old_hits += old != "base"
        else:
            new_hits += winner == truth
            old_hits += old == truth
    row = {"case": label, "questions": n, "seeds": seeds, "now": _rate(new_hits, seeds),
           "before": _rate(old_hits, seeds), "seconds": time.perf_counter() - start,
           "measures": "false winner rate" if truth is None else "detection rate"}
    print(f"  {label}: {row['measures']} {row['now']['rate']:.3f} now "
          f"[{row['now']['ci'][0]:.3f}, {row['now']['ci'][1]:.3f}], "
          f"{row['before']['rate']:.3f} with the old rule", flush=True)
    return row


def cost_ties(runs: int, variants: int = 3, queries: int = 20, rounds: int = 3) -> dict[str, Any]:
    """Variants of the same speed timed interleaved under a load that drifts (a slow sine and
    bursts): how often some pair is called significantly different."""
    hits = 0
    for seed in range(runs):
        rng = np.random.default_rng(seed)
        calls = rounds * queries * variants
        load = 1.0 + 0.5 * np.sin(np.linspace(0, 6 * np.pi, calls)) + (
            rng.random(calls) < 0.05) * rng.exponential(3.0, calls)
        per_query = rng.lognormal(np.log(8.0), 0.3, size=queries)  # a question's own cost
        seconds = {f"v{v}": np.empty((rounds, queries)) for v in range(variants)}
        t = 0
        for r in range(rounds):
            for j in range(queries):
                shift = (r * queries + j) % variants
                for v in [*range(shift, variants), *range(shift)]:
                    seconds[f"v{v}"][r, j] = per_query[j] * load[t] * rng.lognormal(0, 0.1) / 1e3
                    t += 1
        costs = compare_latencies(seconds)
        hits += any(costs.relation(a, b) != 0 for a, b in costs.pairs)
    row = {"case": f"{variants} variants of one speed, {queries} questions × {rounds} rounds, "
                   "drifting load", "runs": runs, "any_pair_called_cheaper": _rate(hits, runs)}
    print(f"  cost ties: some pair called cheaper in {hits}/{runs} runs", flush=True)
    return row


# -- experiment on the example knowledge base ------------------------------------------------------


def _merged(outcome: VariantOutcome) -> Scores:
    rows: Scores = {}
    for part in outcome.parts.values():
        rows.update(part.per_query)
    return rows


def kb_winner(seeds: int, exp_dir: Path) -> list[dict[str, Any]]:
    from recallwatch.experiment import load_plan, run_experiment

    rows = []
    kb = ROOT / "examples" / "kb"
    # A/A: BM25 under four names (no embedding), run for real, then re-split
    plan_path = exp_dir / "aa.yaml"
    plan_path.write_text(
        f"golden: {kb / 'golden_split.yaml'}\ncorpus: [{kb / 'corpus_v1.jsonl'}, "
        f"{kb / 'fix_v2.jsonl'}]\npolicy: {kb / 'policy.yaml'}\n"
        "base: {name: bm25, retrieval: bm25}\nvariants:\n"
        + "".join(f"  - {{name: bm25-copy{i}, retrieval: bm25}}\n" for i in range(1, 4)),
        encoding="utf-8")
    start = time.perf_counter()
    real = run_experiment(load_plan(plan_path), exp_dir / "aa")
    rows.append({"case": "A/A on examples/kb: BM25 and 3 copies of it, the plan's own split",
                 "winner": real.winner, "seconds": time.perf_counter() - start})
    print(f"  kb A/A (real run): winner {real.winner}", flush=True)
    rows.append(_resplit("A/A on examples/kb: BM25 and 3 copies, re-split", real.outcomes,
                         seeds, None))
    # detection: the real hybrid against the real dense base, alone and among nine variants
    start = time.perf_counter()
    full = run_experiment(load_plan(kb / "experiment.yaml"), exp_dir / "full", timing_rounds=0)
    print(f"  kb plan of ten variants judged in {time.perf_counter() - start:.0f} s "
          f"(winner on its own split: {full.winner})", flush=True)
    pair = [o for o in full.outcomes if o.name in ("written-dense", "written-hybrid")]
    rows.append(_resplit("detection on examples/kb: written-hybrid against written-dense alone",
                         pair, seeds, "written-hybrid"))
    rows.append(_resplit("detection on examples/kb: written-hybrid among the 9 variants of "
                         "experiment.yaml", full.outcomes, seeds, "written-hybrid"))
    return rows


def _resplit(label: str, outcomes: list[VariantOutcome], seeds: int, truth: str | None
             ) -> dict[str, Any]:
    scores = {o.name: _merged(o) for o in outcomes}
    questions = sorted(scores[outcomes[0].name])
    hits = old = 0
    for seed in range(seeds):
        split = _split(questions, np.random.default_rng(seed))
        again = _outcomes(scores, split)
        winner = choose(again, _no_costs(list(scores))).winner
        before = _old_rule(again)
        if truth is None:
            hits += winner != outcomes[0].name
            old += before != outcomes[0].name
        else:
            hits += winner == truth
            old += before == truth
    row = {"case": label, "questions": len(questions), "seeds": seeds,
           "measures": "false winner rate" if truth is None else "detection rate",
           "now": _rate(hits, seeds), "before": _rate(old, seeds)}
    print(f"  {label}: {row['measures']} {row['now']['rate']:.3f} now, "
          f"{row['before']['rate']:.3f} with the old rule", flush=True)
    return row


# -- reindex switch -------------------------------------------------------------------------------


def reindex_switch(draws: int, folder: Path) -> dict[str, Any]:
    from recallwatch.ops.probes import ProbeSet
    from recallwatch.ops.recall import recall_vs_exact
    from recallwatch.ops.reindex import (
        DEFAULT_MAX_RECALL_LOSS,
        ReindexResult,
        recall_difference,
        refusal,
        reindex,
    )
    from recallwatch.stores import open_store
    from recallwatch.stores.base import Chunk

    rng = np.random.default_rng(0)
    dim, n = 32, 2000
    centres = rng.normal(size=(20, dim)).astype(np.float32)
    vectors = (centres[rng.integers(0, 20, n)] + 0.6 * rng.normal(size=(n, dim))).astype(
        np.float32)
    pool = (vectors[rng.integers(0, n, 2000)] + 0.3 * rng.normal(size=(2000, dim))).astype(
        np.float32)
    live_uri = f"hnswlib://{folder}/idx?m=16&ef_construction=100&ef=10"
    store = open_store(live_uri, create=True)
    store.upsert([Chunk(id=f"c{i:05d}", text="", content_hash=f"h{i}") for i in range(n)],
                 vectors)
    store.promote(store.current_version())
    live = recall_vs_exact(store, pool, 10)[0]
    store.close()
    tol = DEFAULT_MAX_RECALL_LOSS
    candidates = []
    for label, params in (("m=16 (the live settings, build 1)", "m=16&ef_construction=100"),
                          ("m=16 (the live settings, build 2)", "m=16&ef_construction=100"),
                          ("m=12", "m=12&ef_construction=100"),
                          ("m=10", "m=10&ef_construction=100"),
                          ("m=9", "m=9&ef_construction=100"), ("m=8", "m=8&ef_construction=100"),
                          ("m=6", "m=6&ef_construction=60"), ("m=4", "m=4&ef_construction=40"),
                          ("m=2", "m=2&ef_construction=4")):
        weak = open_store(f"hnswlib://{folder}/idx?{params}&ef=10")
        staged = weak.stage_index()
        new = recall_vs_exact(staged.candidate, pool, 10)[0]
        staged.candidate.close()
        staged.abandon()
        weak.close()
        true_delta = float((new - live).mean())
        row: dict[str, Any] = {"candidate": label, "true_delta": true_delta,
                               "worse_than_tolerance": true_delta < -tol, "by_probes": {}}
        for size in (40, 100, 200, 500):
            switched = 0
            for draw in range(draws):
                pick = np.random.default_rng([size, draw]).choice(len(pool), size, replace=False)
                delta, ci = recall_difference(live[pick], new[pick])
                result = ReindexResult(False, "", "bench", "1", "1", float(live[pick].mean()),
                                       float(new[pick].mean()), 0.0, 10, 0.0, 0.0, 0.0, tol,
                                       delta, ci, size)
                switched += refusal(result) is None
            row["by_probes"][str(size)] = _rate(switched, draws)
        candidates.append(row)
        rates = ", ".join(f"{s} probes {r['rate']:.3f}" for s, r in row["by_probes"].items())
        print(f"  reindex {label}: true Δ {true_delta:+.4f}; switched: {rates}", flush=True)
    end_to_end = _reindex_end_to_end(folder, pool, reindex, ProbeSet, open_store)
    return {"tolerance": tol, "pool": len(pool), "live_recall": float(live.mean()),
            "draws": draws, "candidates": candidates, "end_to_end": end_to_end}


def _reindex_end_to_end(folder: Path, pool: np.ndarray, reindex: Callable[..., Any],
                        probe_set: Any, open_store: Callable[..., Any]) -> list[dict[str, Any]]:
    """Real `reindex` calls with 200 probes: same settings, then far weaker ones."""
    out = []
    probes = probe_set("bench", "1", vectors=pool[:200])
    for label, params, times in (("same settings", "m=16&ef_construction=100", 3),
                                 ("m=2", "m=2&ef_construction=4", 3)):
        switched = 0
        for _ in range(times):
            store = open_store(f"hnswlib://{folder}/idx?{params}&ef=10")
            result = reindex(store, probes, floor=0.0)
            switched += result.switched
            if result.switched:  # back to a live index of the live settings for the next call
                store.close()
                store = open_store(f"hnswlib://{folder}/idx?m=16&ef_construction=100&ef=10")
                reindex(store, probes, floor=0.0, max_recall_loss=1.0)
            store.close()
        out.append({"candidate": label, "calls": times, "switched": switched})
        print(f"  reindex end to end, {label}: {switched}/{times} switched", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--seeds", type=int, default=200, help="seeds (splits) per experiment case")
    ap.add_argument("--draws", type=int, default=300, help="probe sets drawn per reindex case")
    ap.add_argument("--cost-runs", type=int, default=100)
    ap.add_argument("--skip-kb", action="store_true", help="no run on examples/kb")
    ap.add_argument("--exp-dir", type=Path, help="where the example's experiments are built "
                    "(kept, so a rerun reuses its cache); default: a temporary folder")
    args = ap.parse_args()
    result = begun(seeds=args.seeds, draws=args.draws)
    start = time.perf_counter()
    print("experiment winner, synthetic golden sets:", flush=True)
    result["winner_synthetic"] = synthetic_winner(args.seeds)
    print("experiment cost ties:", flush=True)
    result["cost_ties"] = cost_ties(args.cost_runs)
    with tempfile.TemporaryDirectory(prefix="rw-decisions-") as tmp:
        if not args.skip_kb:
            print("experiment winner, examples/kb:", flush=True)
            exp_dir = args.exp_dir or Path(tmp) / "exp"
            exp_dir.mkdir(parents=True, exist_ok=True)
            result["winner_kb"] = kb_winner(args.seeds, exp_dir)
        print("reindex switch:", flush=True)
        result["reindex"] = reindex_switch(args.draws, Path(tmp))
    result["seconds"] = time.perf_counter() - start
    finish(result, [f"took {result['seconds']:.0f} s"], args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
