"""Online evaluation: interaction logs, A/B readouts, interleaving and live signals.

    >>> from recallwatch.online import InteractionLog, aggregate_units, readout, ABConfig
    >>> log = InteractionLog("search.jsonl")
    >>> config = ABConfig(metrics=("ctr", "abandonment"), unit="user")
    >>> result = readout(aggregate_units(log, unit="user", metrics=config.metrics), config)

Simulated users with known relevance live in :mod:`recallwatch.online.simulate`.
Importing this package imports no numpy (only computing does).
"""

from recallwatch.online.ab import ABConfig, ABReadout, MetricReadout, aggregate_units, readout
from recallwatch.online.interleave import (
    InterleaveResult,
    Pick,
    score_interleaving,
    sign_test,
    team_draft,
)
from recallwatch.online.live import LiveSignals, live_signals
from recallwatch.online.log import Impression, InteractionLog, LogSummary

__all__ = [
    "ABConfig",
    "ABReadout",
    "Impression",
    "InteractionLog",
    "InterleaveResult",
    "LiveSignals",
    "LogSummary",
    "MetricReadout",
    "Pick",
    "aggregate_units",
    "live_signals",
    "readout",
    "score_interleaving",
    "sign_test",
    "team_draft",
]
