"""A history full of hostile strings (six runs degrading, monitor records) and a bench
directory, shared by the in-process page tests and the browser tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch.history import History
from recallwatch.suite.model import GateResult
from tests.report import helpers as H

# Six runs of one golden set, more queries pushed out of the top-K each time: a slow decline.
DEPTHS = [0, 0, 1, 2, 3, 4]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[GateResult]]:
    root = tmp_path_factory.mktemp("site")
    db = root / "history.db"
    runs = H.history(db, DEPTHS)
    H.monitor_records(db)
    with History(db) as h:  # an online readout whose strings are hostile (the funnel page)
        h.record_online_readout({
            "change_run": runs[-1].run_id, "promote_id": None, "offline_metric": H.hostile(1, "m"),
            "offline_baseline": runs[-2].run_id, "offline_delta": 0.01,
            "online_metric": H.hostile(2, "ctr"), "online_delta": -0.02, "online_ci_low": -0.03,
            "online_ci_high": -0.01, "online_verdict": H.hostile(3, "worse"),
            "agreement": "disagreed", "payload": {"reading": H.hostile(4, "reading ")}})
    bench = root / "bench"
    (bench / "small").mkdir(parents=True)
    (bench / "small" / "results.json").write_text(json.dumps(H.sweep()), encoding="utf-8")
    (bench / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    (bench / "broken.json").write_text("{", encoding="utf-8")
    return db, bench, runs
