"""Run history: every gate run stored (a SQLite file, or PostgreSQL for a team), compared with its
baselines, trended over time.

    from recallwatch.history import History, record_gate_run
    result = record_gate_run(result, ".recallwatch/history.db", store=store)
    result.comparison["last_accepted"]["newly_failing"]

* :func:`record_gate_run` — compare a run with the previous run of its dataset and the last
  ACCEPT of its golden set and policy, then record it in one transaction;
* :func:`latency_baseline` — the last ACCEPT's index version, opened for the gate to time beside
  the candidate's (the cost rule then compares both under the same load);
* :class:`History` — a SQLite file or a ``postgresql://`` database: runs, per-query rows, monitor
  records, migrations;
* :func:`copy_history` — a history moved between the two, row for row;
* :func:`prune_history` — the last N runs or N days kept, and every baseline and production run;
* :func:`record_experiment` — an experiment's results kept in the history for the dashboard;
* :func:`compare_runs` — two runs: regressions, rank changes, paired tests, who buried what;
* :func:`trend` — slow degradation, per-domain trends and noise creeping up over N runs;
* :mod:`recallwatch.history.funnel` — per change, the offline delta and the online readout that
  came later, and whether they agreed.

The history records and compares; promoting a version changes a store, so it is an operation:
:func:`recallwatch.ops.promote`.
"""

from recallwatch.history._backend import is_postgresql
from recallwatch.history._copy import CopyReport, copy_history
from recallwatch.history._experiments import (
    ExperimentRecord,
    experiment_results,
    record_experiment,
    recorded_experiments,
    results_digest,
)
from recallwatch.history._prune import PruneReport, nothing_to_prune, prune_history
from recallwatch.history._record import (
    baselines,
    compare_with_baselines,
    ingested_since,
    latency_baseline,
    record_gate_run,
)
from recallwatch.history._schema import MIGRATIONS, SCHEMA_VERSION
from recallwatch.history._store import History, MonitorRun, OnlineReadoutRow, RunSummary
from recallwatch.history.compare import compare_runs, config_differences
from recallwatch.history.trend import SeriesTrend, Trend, TrendPattern, trend

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "CopyReport",
    "ExperimentRecord",
    "History",
    "MonitorRun",
    "OnlineReadoutRow",
    "PruneReport",
    "RunSummary",
    "SeriesTrend",
    "Trend",
    "TrendPattern",
    "baselines",
    "compare_runs",
    "compare_with_baselines",
    "config_differences",
    "copy_history",
    "experiment_results",
    "ingested_since",
    "is_postgresql",
    "latency_baseline",
    "nothing_to_prune",
    "prune_history",
    "record_experiment",
    "record_gate_run",
    "recorded_experiments",
    "results_digest",
    "trend",
]
