"""How often `history trend` calls a degradation that is not there: the false-alarm rate of its
patterns on unchanged runs, and their detection rate on a real slow decline.

    .venv/bin/python benchmarks/decisions_trend_bench.py [--trials 2000] [--out FILE.json]

Each trial is a series of gate runs of one unchanged system: every measure a run records is its
true value plus the run's own noise (normal, standard deviation ``--sd``: the judge's and the
generator's sampling, a re-labelled query; independent between measures, the case where testing
several measures costs most). A pattern fires when its series is called down (or, for the
hallucination rate, up) by both of the trend's tests (:func:`recallwatch.history.trend.
analyse_series`). ``answers_degrading`` looks at four answer measures, so it has four chances to
fire on noise; the figures show it with the per-measure threshold and with that threshold
divided by the number of measures tested (Bonferroni), which `history trend` uses. Detection:
faithfulness falling by ``--decline`` in all over the runs, the other measures unchanged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recallwatch.history.trend import ANSWER_METRICS, WORSE_UP, analyse_series  # noqa: E402
from recallwatch.stats import wilson_interval  # noqa: E402

ALPHA = 0.05


def _fires(series: dict[str, np.ndarray], alpha: float) -> bool:
    """Whether any series is called in its bad direction at ``alpha``."""
    for metric, values in series.items():
        ids = [str(i) for i in range(values.size)]
        s = analyse_series(metric, values.tolist(), ids, alpha=alpha)
        if s.direction == ("up" if metric in WORSE_UP else "down"):
            return True
    return False


def _rate(hits: int, trials: int) -> dict[str, Any]:
    low, high = wilson_interval(hits, trials)
    return {"hits": hits, "trials": trials, "rate": hits / trials, "ci": [float(low), float(high)]}


def run(trials: int, runs: tuple[int, ...], sd: float, decline: float,
        seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    m = len(ANSWER_METRICS)
    for n in runs:
        counts = {"one_measure": 0, "answers_per_measure_alpha": 0, "answers_bonferroni": 0,
                  "detect_per_measure_alpha": 0, "detect_bonferroni": 0}
        for _ in range(trials):
            same = {k: 0.8 + rng.normal(0.0, sd, n) for k in ANSWER_METRICS}
            counts["one_measure"] += _fires({"faithfulness": same["faithfulness"]}, ALPHA)
            counts["answers_per_measure_alpha"] += _fires(same, ALPHA)
            counts["answers_bonferroni"] += _fires(same, ALPHA / m)
            worse = {**same, "faithfulness": same["faithfulness"]
                     - np.linspace(0.0, decline, n)}
            counts["detect_per_measure_alpha"] += _fires(worse, ALPHA)
            counts["detect_bonferroni"] += _fires(worse, ALPHA / m)
        out[str(n)] = {k: _rate(v, trials) for k, v in counts.items()}
        row = out[str(n)]
        print(f"{n:>3} runs: unchanged, one measure {row['one_measure']['rate']:.3f}; "
              f"four answer measures {row['answers_per_measure_alpha']['rate']:.3f} at p ≤ "
              f"{ALPHA:g} each, {row['answers_bonferroni']['rate']:.3f} at p ≤ {ALPHA / m:g}; "
              f"faithfulness −{decline:g} over the runs caught "
              f"{row['detect_per_measure_alpha']['rate']:.3f} / "
              f"{row['detect_bonferroni']['rate']:.3f}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--runs", default="5,10,20", help="series lengths, comma-separated")
    ap.add_argument("--sd", type=float, default=0.02, help="a run's noise on each measure")
    ap.add_argument("--decline", type=float, default=0.08, help="the real decline, in all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    runs = tuple(int(x) for x in args.runs.split(","))
    settings = {"trials": args.trials, "runs": runs, "sd": args.sd, "decline": args.decline,
                "seed": args.seed, "alpha": ALPHA, "measures": list(ANSWER_METRICS)}
    figures = run(args.trials, runs, args.sd, args.decline, args.seed)
    if args.out is not None:
        args.out.write_text(json.dumps({"settings": settings, "figures": figures}, indent=1)
                            + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
