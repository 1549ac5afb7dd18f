"""Live signals over a time window: definitions by hand, window bounds, located errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.online import live_signals
from recallwatch.online.log import Impression, parse_line


def _imp(line: int, minute: int | None, shown: int, clicks: list[int],
         latency: float | None) -> Impression:
    record = {"query_id": f"q{line}", "shown": [{"id": f"d{i}"} for i in range(shown)],
              "clicks": [{"id": f"d{i}"} for i in clicks]}
    if minute is not None:
        record["ts"] = f"2025-01-01T12:{minute:02d}:00Z"
    if latency is not None:
        record["latency_ms"] = latency
    return parse_line(json.dumps(record), line=line)


IMPRESSIONS = [
    _imp(1, 0, 5, [0, 2], 30.0),
    _imp(2, 1, 0, [], 250.0),       # no result
    _imp(3, 2, 5, [], 45.0),        # abandoned
    _imp(4, 3, 5, [1, 1], None),    # one result clicked twice: one click
    _imp(5, 10, 5, [0], 38.0),      # outside a window ending at 12:10
]


def test_signals_by_hand() -> None:
    s = live_signals(IMPRESSIONS)
    assert s.impressions == 5
    assert s.no_result_rate == pytest.approx(1 / 5)
    assert s.ctr == pytest.approx((2 + 0 + 0 + 1 + 1) / 5)
    assert s.abandonment == pytest.approx(2 / 5)  # the no-result one and the unclicked one
    assert s.latency_count == 4
    assert s.latency_ms == pytest.approx(dict(zip(
        ("p50", "p95", "p99"), np.percentile([30.0, 250.0, 45.0, 38.0], [50, 95, 99]))))


def test_window_is_start_inclusive_end_exclusive() -> None:
    start = datetime(2025, 1, 1, 12, 1, tzinfo=UTC)
    end = datetime(2025, 1, 1, 12, 10, tzinfo=UTC)
    s = live_signals(IMPRESSIONS, start=start, end=end)
    assert s.impressions == 3 and s.no_result_rate == pytest.approx(1 / 3)
    assert s.to_dict()["window"] == {"start": start.isoformat(), "end": end.isoformat()}
    empty = live_signals(IMPRESSIONS, start=datetime(2030, 1, 1, tzinfo=UTC))
    assert empty.impressions == 0 and empty.ctr is None and empty.latency_ms is None


def test_errors() -> None:
    with pytest.raises(InputError, match=r"log>:7: record 'q7': field 'ts': expected a "
                                         r"timestamp on every impression"):
        live_signals([_imp(7, None, 1, [], None)], start=datetime(2025, 1, 1, tzinfo=UTC))
    with pytest.raises(UsageError, match="timezone-aware"):
        live_signals(IMPRESSIONS, end=datetime(2025, 1, 1))
    with pytest.raises(UsageError, match="window is empty"):
        t = datetime(2025, 1, 1, tzinfo=UTC)
        live_signals(IMPRESSIONS, start=t, end=t)
