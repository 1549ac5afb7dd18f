"""Trends over the last N comparable runs of a dataset, named as failure patterns.

Each series (mean quality, mean recall, mean noise; overall and per domain; and, over the runs
that judged answers, the answer measures: faithfulness, relevance, correctness, hallucination
rate) gets two tests of a
monotone trend against run order: the OLS slope with its t-test p-value, and the Mann–Kendall test
(Kendall's tau of the values against time). A trend is reported only when both are significant,
so one outlier cannot make a slope and a noisy series cannot make a rank trend. A decline is
*slow* when no single step carries half of it; otherwise it is a step (one regression), which the
run-to-run comparison names.

Only runs with the latest run's golden set, policy and configuration are compared: a changed
golden set moves the means for reasons that are not degradation.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from recallwatch.history._store import History, RunSummary

__all__ = ["ANSWER_METRICS", "MIN_RUNS", "WORSE_UP", "SeriesTrend", "Trend", "TrendPattern",
           "analyse_series", "explain_tests", "trend"]

# "flat": enough runs, but no trend significant by both tests; "too_few_runs": fewer than MIN_RUNS,
# where no trend can be called whatever the values do (the change is still reported).
Direction = Literal["down", "up", "flat", "too_few_runs"]
PatternName = Literal["slow_degradation", "step_regression", "domain_degradation",
                      "noise_creeping_up", "answers_degrading"]

MIN_RUNS = 5  # Mann–Kendall cannot reach p < 0.05 with fewer than 5 points (2/4! = 0.083)
_METRICS = ("mean_quality", "mean_recall", "mean_noise")
# The answer measures (RunSummary's columns), analysed over the runs that hold them.
ANSWER_METRICS = ("faithfulness", "answer_relevance", "correctness", "hallucination_rate")
_LABEL = {"mean_quality": "mean quality", "mean_recall": "mean recall", "mean_noise": "mean noise",
          "faithfulness": "faithfulness", "answer_relevance": "answer relevance",
          "correctness": "correctness", "hallucination_rate": "hallucination rate"}
_FORMAT = {"mean_quality": ".1f", "mean_recall": ".3f", "mean_noise": ".2f",
           **dict.fromkeys(ANSWER_METRICS, ".3f")}
#: the series where up is the bad direction
WORSE_UP = frozenset({"mean_noise", "hallucination_rate"})


@dataclass(frozen=True)
class SeriesTrend:
    metric: str
    n: int
    first: float
    last: float
    slope: float  # per run (with two runs, the change between them)
    slope_p: float  # OLS t-test, two-sided
    tau: float  # Kendall's tau against run order (Mann–Kendall)
    tau_p: float
    largest_drop: float  # largest single step in the bad direction (>= 0)
    largest_drop_run: str | None  # run id after that step
    direction: Direction  # significant by both tests, else flat (too_few_runs under MIN_RUNS)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def worse_up(self) -> bool:
        """Whether a rise of this series is the bad direction (noise, hallucinations)."""
        return self.metric in WORSE_UP

    def describe(self) -> str:
        """One line: the move from first to last run, the two tests, and what they decide."""
        f = _FORMAT[self.metric]
        head = (f"{_LABEL[self.metric]}: {self.first:{f}} → {self.last:{f}} "
                f"({self.last - self.first:+{f}}) over {self.n} run{'' if self.n == 1 else 's'}")
        if self.direction == "too_few_runs":
            return f"{head}: too few runs to call a trend (at least {MIN_RUNS} needed)"
        verdict = {"down": "trending down", "up": "trending up",
                   "flat": "no significant trend"}[self.direction]
        return f"{head}; {_tests(self)}: {verdict}"


@dataclass(frozen=True)
class TrendPattern:
    name: PatternName
    message: str
    metric: str
    domain: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Trend:
    dataset: str
    dataset_hash: str
    policy_hash: str
    config_hash: str
    alpha: float
    runs: tuple[RunSummary, ...]  # oldest first
    excluded: int  # runs of the dataset left out: another golden set, policy or configuration
    series: dict[str, SeriesTrend] = field(default_factory=dict)
    per_domain: dict[str, dict[str, SeriesTrend]] = field(default_factory=dict)
    patterns: tuple[TrendPattern, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset, "dataset_hash": self.dataset_hash,
            "policy_hash": self.policy_hash, "config_hash": self.config_hash,
            "alpha": self.alpha, "n_runs": len(self.runs), "excluded": self.excluded,
            "runs": [r.to_dict() for r in self.runs],
            "series": {k: v.to_dict() for k, v in self.series.items()},
            "per_domain": {d: {k: v.to_dict() for k, v in s.items()}
                           for d, s in self.per_domain.items()},
            "patterns": [p.to_dict() for p in self.patterns],
        }


def analyse_series(metric: str, values: list[float], run_ids: list[str], *,
                   alpha: float = 0.05) -> SeriesTrend:
    """OLS slope + t-test and Mann–Kendall over ``values`` in run order."""
    import numpy as np
    from scipy import stats

    y = np.asarray(values, dtype=np.float64)
    n = int(y.size)
    x = np.arange(n, dtype=np.float64)
    slope, slope_p, tau, tau_p = 0.0, 1.0, 0.0, 1.0
    if n == 2:  # the OLS line through two points; neither test can say anything with two
        slope = float(y[1] - y[0])
    elif n >= 3 and float(np.ptp(y)) > 0.0:
        fit = stats.linregress(x, y)
        slope, slope_p = float(fit.slope), float(fit.pvalue)
        kt = stats.kendalltau(x, y)
        tau, tau_p = float(kt.statistic), float(kt.pvalue)
        if math.isnan(slope_p):  # a perfect line: the t statistic is infinite
            slope_p = 0.0
    bad_sign = 1.0 if metric in WORSE_UP else -1.0
    steps = np.diff(y) * bad_sign if n > 1 else np.zeros(0)
    worst = int(np.argmax(steps)) if steps.size else -1
    largest = float(max(steps[worst], 0.0)) if steps.size else 0.0
    direction: Direction = "too_few_runs" if n < MIN_RUNS else "flat"
    if n >= MIN_RUNS and slope_p <= alpha and tau_p <= alpha and slope * tau > 0:
        direction = "up" if slope > 0 else "down"
    return SeriesTrend(
        metric=metric, n=n, first=float(y[0]) if n else 0.0, last=float(y[-1]) if n else 0.0,
        slope=slope, slope_p=slope_p, tau=tau, tau_p=tau_p, largest_drop=largest,
        largest_drop_run=run_ids[worst + 1] if largest > 0 else None, direction=direction,
    )


def explain_tests(alpha: float) -> str:
    """What the two tests are and what they decide, for a reader who does not know them."""
    return ("A series is called up or down only when two tests both find the move significant "
            f"(p ≤ {alpha:g}): the straight line fitted through the runs (its slope per run) and "
            "the Mann–Kendall test (do later runs keep scoring higher, or lower? τ goes from −1, "
            f"always lower, to +1, always higher); and only over at least {MIN_RUNS} runs. The "
            "answer measures (faithfulness, answer relevance, correctness, hallucination rate) "
            "are tested at that threshold divided by how many of them the runs hold, so that "
            "four chances to move by chance do not make four times the false alarms.")


def _tests(s: SeriesTrend) -> str:
    return (f"slope {s.slope:+.3g}/run, p={s.slope_p:.2g}; Mann–Kendall τ={s.tau:+.2f}, "
            f"p={s.tau_p:.2g}")


def _evidence(s: SeriesTrend) -> str:
    f = _FORMAT[s.metric]
    return f"{_LABEL[s.metric]} {s.first:{f}} → {s.last:{f}} over {s.n} runs ({_tests(s)})"


def _is_step(s: SeriesTrend) -> bool:
    total = abs(s.slope) * (s.n - 1)
    return total > 0 and s.largest_drop >= 0.5 * total


def _patterns(series: dict[str, SeriesTrend],
              per_domain: dict[str, dict[str, SeriesTrend]]) -> list[TrendPattern]:
    out: list[TrendPattern] = []
    for metric in ("mean_quality", "mean_recall"):
        s = series[metric]
        if s.direction != "down":
            continue
        if _is_step(s):
            out.append(TrendPattern(
                "step_regression",
                f"{_evidence(s)}, but one step carries most of it ({s.largest_drop:.3g} at run "
                f"{s.largest_drop_run}): a regression by one ingestion rather than slow decay — "
                "compare that run with the one before it to see what buried what",
                metric))
        else:
            out.append(TrendPattern(
                "slow_degradation",
                f"slow general degradation: {_evidence(s)}, no single step larger than "
                f"{s.largest_drop:.3g} — content going stale unnoticed: sources out of sync "
                "with the index, or validity dates not updated",
                metric))
        break  # quality and recall tell the same story; name it once
    if series["mean_noise"].direction == "up":
        out.append(TrendPattern(
            "noise_creeping_up",
            f"noise creeping up: {_evidence(series['mean_noise'])} — structural noise (irrelevant "
            "chunks crowding the top): generic descriptions, chunks that mix topics or loose "
            "facets", "mean_noise"))
    out += _answer_patterns(series)
    for domain, by_metric in per_domain.items():
        down = [by_metric[m] for m in ("mean_quality", "mean_recall") if m in by_metric
                and by_metric[m].direction == "down"]
        if down:
            out.append(TrendPattern(
                "domain_degradation",
                f"domain {domain} degrading: {_evidence(down[0])} — look at how that domain "
                "was ingested and classified (its sources, chunking, labels), not at the index "
                "as a whole", down[0].metric, domain))
        noise = by_metric.get("mean_noise")
        if noise is not None and noise.direction == "up" and series["mean_noise"].direction != "up":
            out.append(TrendPattern(
                "noise_creeping_up",
                f"noise creeping up in domain {domain}: {_evidence(noise)} — structural noise "
                "(irrelevant chunks crowding the top): generic descriptions, chunks that mix "
                "topics or loose facets", "mean_noise", domain))
    return out


def _answer_patterns(series: dict[str, SeriesTrend]) -> list[TrendPattern]:
    """One pattern when an answer measure moves the bad way (the first found, in the order of
    ANSWER_METRICS): the answers degrade while retrieval may hold."""
    for metric in ANSWER_METRICS:
        s = series.get(metric)
        if s is not None and s.direction == ("up" if s.worse_up else "down"):
            return [TrendPattern(
                "answers_degrading",
                f"answers degrading: {_evidence(s)} — compare the answers of the first and last "
                "runs (history compare): a changed generator or prompt, or retrieval handing it "
                "worse context (the failures' names, retrieval or generation, say which)",
                metric)]
    return []


def _answer_series(chosen: list[RunSummary], alpha: float) -> dict[str, SeriesTrend]:
    """The answer measures' series, each over the chosen runs that hold it (none when fewer
    than two do), each tested at ``alpha`` divided by the number of them (Bonferroni): four
    measures tested at ``alpha`` each would call a degradation of unchanged answers about four
    times as often (benchmarks/decisions_trend_bench.py)."""
    held = {metric: [(r.run_id, float(v)) for r in chosen
                     if (v := getattr(r, metric)) is not None] for metric in ANSWER_METRICS}
    held = {metric: runs for metric, runs in held.items() if len(runs) >= 2}
    each = alpha / max(len(held), 1)
    return {metric: analyse_series(metric, [v for _, v in runs], [i for i, _ in runs],
                                   alpha=each) for metric, runs in held.items()}


def trend(history: History, *, dataset: str | None = None, last: int = 20,
          alpha: float = 0.05) -> Trend:
    """The trend of the last ``last`` runs of ``dataset`` (default: the latest run's dataset)
    sharing the latest run's golden set, policy and configuration."""
    from recallwatch.errors import UsageError

    if last < 2:
        raise UsageError(f"--last must be at least 2 (found {last})")
    newest = history.runs(dataset=dataset, limit=1)
    if not newest:
        where = f" of dataset {dataset!r}" if dataset else ""
        raise UsageError(f"no runs{where} in {history.location}")
    ref = newest[0]
    all_runs = history.runs(dataset=ref.dataset_name)
    same = [r for r in all_runs if (r.dataset_hash, r.policy_hash, r.config_hash)
            == (ref.dataset_hash, ref.policy_hash, ref.config_hash)]
    chosen = list(reversed(same[:last]))
    ids = [r.run_id for r in chosen]
    series = {m: analyse_series(m, [float(getattr(r, m)) for r in chosen], ids, alpha=alpha)
              for m in _METRICS}
    series.update(_answer_series(chosen, alpha))
    domains: dict[str, dict[str, list[float]]] = {}
    per_run = [history.load(r.run_id).aggregate.per_domain for r in chosen]
    shared = set.intersection(*(set(p) for p in per_run)) if per_run else set()
    for d in sorted(shared - {"(none)"}) if len(shared) > 1 else []:
        domains[d] = {m: [float(p[d][m]) for p in per_run] for m in _METRICS}
    per_domain = {d: {m: analyse_series(m, v, ids, alpha=alpha) for m, v in by.items()}
                  for d, by in domains.items()}
    return Trend(
        dataset=ref.dataset_name, dataset_hash=ref.dataset_hash, policy_hash=ref.policy_hash,
        config_hash=ref.config_hash, alpha=alpha, runs=tuple(chosen),
        excluded=len(all_runs) - len(same), series=series, per_domain=per_domain,
        patterns=tuple(_patterns(series, per_domain)),
    )
