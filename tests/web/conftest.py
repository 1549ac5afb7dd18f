"""A history full of hostile strings (six runs degrading, monitor records) and a bench
directory, shared by the in-process page tests and the browser tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    bench = root / "bench"
    (bench / "small").mkdir(parents=True)
    (bench / "small" / "results.json").write_text(json.dumps(H.sweep()), encoding="utf-8")
    (bench / "notes.json").write_text('{"hello": 1}', encoding="utf-8")
    (bench / "broken.json").write_text("{", encoding="utf-8")
    return db, bench, runs
