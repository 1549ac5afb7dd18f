"""Online evaluation: interaction logs, A/B readouts, interleaving and live signals."""

from recallwatch.online.log import Impression, InteractionLog, LogSummary

__all__ = ["Impression", "InteractionLog", "LogSummary"]
