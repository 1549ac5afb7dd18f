"""What each dashboard page shows, computed from the history store and bench result files.

Pure functions of their inputs (no web framework here), so they are tested without a server.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError, RecallwatchError
from recallwatch.formats.structured import load_structured
from recallwatch.history import History
from recallwatch.report.plots import Chart, Series, lines, scatter, time_ticks
from recallwatch.web._indicators import flatten
from recallwatch.web._monitor import monitor_view

__all__ = ["bench_view", "flatten", "monitor_view", "trends_view"]

# Axis titles, each with its unit.
RUN_AXIS = "run (date and time, UTC)"
QUALITY_AXIS = "quality (points, 0–100)"
RECALL_AXIS = "recall@K (share, 0–1)"
NOISE_AXIS = "noise (results)"
ANSWERS_AXIS = "answer measure (share, 0–1)"
# The answer measures drawn, each with its series label (RunSummary's columns).
ANSWER_SERIES = (("faithfulness", "faithfulness"), ("answer_relevance", "answer relevance"),
                 ("correctness", "correctness"), ("hallucination_rate", "hallucination rate"))
MAX_BENCH_FILES = 200


def _date_ticks(runs: list[Any], attr: str = "created_at") -> list[tuple[float, str]]:
    # "11-30 17:10": several runs a day are common (a fix, then the gate again); two runs in
    # one minute get their seconds (plots.time_ticks)
    return time_ticks([str(getattr(r, attr)) for r in runs])


# -- trends ----------------------------------------------------------------------------------------


def trends_view(h: History, dataset: str | None, last: int) -> dict[str, Any]:
    """Mean quality, recall and noise of the last ``last`` runs of a dataset, overall and per
    domain, the answer measures of the runs that judged answers, with the trend tests of
    :func:`recallwatch.history.trend` over the comparable ones."""
    from recallwatch.history import trend
    from recallwatch.history.trend import MIN_RUNS, explain_tests

    everything = h.runs()
    datasets = sorted({r.dataset_name for r in everything})
    if not everything:
        return {"datasets": [], "dataset": None, "runs": [], "charts": [], "trend": None,
                "trend_error": None, "min_runs": 0}
    chosen = dataset if dataset in datasets else everything[0].dataset_name
    runs = list(reversed([r for r in everything if r.dataset_name == chosen][:last]))
    ticks = _date_ticks(runs)
    tips = [f"{r.run_id} {r.verdict}" for r in runs]
    xs = [float(i) for i in range(len(runs))]
    policy = h.load(runs[-1].run_id).policy
    per_run = [h.load(r.run_id).aggregate.per_domain for r in runs]
    domains = sorted({d for p in per_run for d in p} - {"(none)"})

    def overall(metric: str, label: str) -> Series:
        return Series(label, xs, [float(getattr(r, metric)) for r in runs],
                      [f"{t}: {getattr(r, metric):.3f}" for t, r in zip(tips, runs)])

    def by_domain(metric: str) -> list[Series]:
        out = []
        for d in domains:
            pts = [(x, float(p[d][metric]), t) for x, p, t in zip(xs, per_run, tips) if d in p]
            out.append(Series(d, [p[0] for p in pts], [p[1] for p in pts],
                              [f"{p[2]}: {p[1]:.3f}" for p in pts]))
        return out

    floor_q = float(policy.get("min_mean_quality", 95))
    floor_r = float(policy.get("recall_floor", 0.9))
    charts: list[Chart] = [
        lines("Mean quality", [overall("mean_quality", "mean quality")], x_ticks=ticks,
              x_label=RUN_AXIS, y_label=QUALITY_AXIS,
              floor=(floor_q, f"accept at mean quality ≥ {floor_q:g}")),
        lines("Mean recall@K", [overall("mean_recall", "mean recall")], x_ticks=ticks,
              x_label=RUN_AXIS, y_label=RECALL_AXIS,
              floor=(floor_r, f"recall floor {floor_r:g}")),
        lines("Mean noise (results under the worst expected chunk)",
              [overall("mean_noise", "mean noise")], x_ticks=ticks, x_label=RUN_AXIS,
              y_label=NOISE_AXIS),
    ]
    if any(r.has_answers for r in runs):
        charts.append(_answers_chart(runs, xs, tips, ticks, policy))
    if domains:
        charts += [
            lines("Mean quality by domain", by_domain("mean_quality"), x_ticks=ticks,
                  x_label=RUN_AXIS, y_label=QUALITY_AXIS),
            lines("Mean recall by domain", by_domain("mean_recall"), x_ticks=ticks,
                  x_label=RUN_AXIS, y_label=RECALL_AXIS),
            lines("Mean noise by domain", by_domain("mean_noise"), x_ticks=ticks,
                  x_label=RUN_AXIS, y_label=NOISE_AXIS),
        ]
    analysis, error = None, None
    if len(runs) >= MIN_RUNS:
        try:
            analysis = trend(h, dataset=chosen, last=last)
        except RecallwatchError as exc:
            error = str(exc)
    return {"datasets": datasets, "dataset": chosen, "runs": list(reversed(runs)),
            "charts": charts, "trend": analysis, "trend_error": error, "min_runs": MIN_RUNS,
            "tests_explained": None if analysis is None else explain_tests(analysis.alpha)}


def _answers_chart(runs: list[Any], xs: list[float], tips: list[str],
                   ticks: list[tuple[float, str]], policy: Mapping[str, Any]) -> Chart:
    """The answer measures of the runs that judged answers (a run without them, or whose judge
    was not trusted with a measure, has no point: a gap, never a 0), with the policy's
    faithfulness floor."""
    series = []
    for attr, label in ANSWER_SERIES:
        pts = [(x, float(v), t) for x, r, t in zip(xs, runs, tips)
               if (v := getattr(r, attr)) is not None]
        if pts:
            series.append(Series(label, [p[0] for p in pts], [p[1] for p in pts],
                                 [f"{p[2]}: {label} {p[1]:.3f}" for p in pts]))
    floor = policy.get("min_faithfulness")
    return lines("Answers: faithfulness, relevance, correctness, hallucination rate", series,
                 x_ticks=ticks, x_label=RUN_AXIS, y_label=ANSWERS_AXIS, y_range=(0.0, 1.0),
                 floor=None if floor is None else
                 (float(floor), f"min_faithfulness {float(floor):g}"))


# -- monitor: recallwatch.web._monitor ----------------------------------------------------------


# -- benchmarks ------------------------------------------------------------------------------------


def _sweep_view(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    k = int(doc["k"])
    results = doc["results"]
    key = str(k)

    def recall(r: dict[str, Any]) -> float:
        return float(r["recall"][key])

    answers = doc.get("answers") or {}
    front_by_engine: dict[str, list[int]] = answers.get("frontier_by_engine") or {}
    on_front = {i for idx in front_by_engine.values() for i in idx}
    series = []
    for label, idx in front_by_engine.items():
        pts = sorted((results[i] for i in idx), key=recall)
        series.append(Series(label, [float(r["qps_single"]) for r in pts],
                             [recall(r) for r in pts],
                             [f"{r.get('label', '')} {_params(r)}: R@{k} {recall(r):.4f}, "
                              f"{float(r['qps_single']):,.0f} QPS" for r in pts]))
    rest = [r for i, r in enumerate(results) if i not in on_front]
    if rest:
        series.append(Series("dominated", [float(r["qps_single"]) for r in rest],
                             [recall(r) for r in rest],
                             [f"{r.get('label', '')} {_params(r)}: R@{k} {recall(r):.4f}"
                              for r in rest], line=False, cls="dim"))
    chart = scatter(f"recall@{k} vs QPS (one query at a time, 1 thread)", series,
                    x_label="queries per second (log scale)",
                    y_label=f"recall@{k} (share, 0–1)", log_x=True, connect=True)
    fastest = []
    tied = answers.get("fastest_at_indistinguishable") or {}
    for target, i in (answers.get("fastest_at") or {}).items():
        same = [results[int(j)] for j in tied.get(target) or []]
        fastest.append({"target": target, "r": None if i is None else results[int(i)],
                        "params": "" if i is None else _params(results[int(i)]),
                        "tied": [f"{r.get('label', '')} {_params(r)}" for r in same]})
    frontier = [dict(r, params=_params(r), recall_k=recall(r))
                for r in sorted((results[i] for i in answers.get("frontier", [])), key=recall)]
    return {"path": str(path), "name": doc.get("name", path.stem), "dataset": doc["dataset"],
            "k": k, "machine": doc.get("machine", {}), "started": doc.get("started", ""),
            "n_configs": len(results), "chart": chart, "fastest": fastest,
            "frontier": frontier}


def _params(r: Mapping[str, Any]) -> str:
    both = {**(r.get("build") or {}), **(r.get("query") or {})}
    return " ".join(f"{k}={v}" for k, v in both.items())


def bench_view(bench_dir: Path | None) -> dict[str, Any]:
    """Every sweep result (``results.json`` of ``recallwatch bench``) under ``bench_dir``."""
    if bench_dir is None:
        return {"dir": None, "sweeps": [], "skipped": []}
    sweeps, skipped = [], []
    files = sorted(bench_dir.rglob("*.json"))[:MAX_BENCH_FILES] if bench_dir.is_dir() else []
    for path in files:
        try:
            doc = load_structured(path)
        except (OSError, InputError) as exc:  # InputError: not UTF-8, not JSON, hostile JSON
            skipped.append((str(path), f"unreadable: {exc}"))
            continue
        if not (isinstance(doc, dict) and isinstance(doc.get("results"), list)
                and "k" in doc and isinstance(doc.get("dataset"), dict)):
            skipped.append((str(path), "not a sweep result (no k, dataset and results)"))
            continue
        try:
            sweeps.append(_sweep_view(path, doc))
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            skipped.append((str(path), f"malformed sweep result: {type(exc).__name__}: {exc}"))
    return {"dir": str(bench_dir), "sweeps": sweeps, "skipped": skipped,
            "missing": not bench_dir.is_dir()}

