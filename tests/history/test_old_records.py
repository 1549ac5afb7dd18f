"""A run recorded by an earlier version (its configuration of another shape, keys added since
missing, its JSON in ``result_json`` uncompressed) loads from the history, and its configuration
and timings come back as they were stored — on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
from typing import Any

from recallwatch.history import History
from recallwatch.history._detail import unpack
from tests.history.helpers import gate_run, golden_set, raw_backend

OLD_CONFIG: dict[str, Any] = {"source": "results", "retriever": "legacy", "embedder": None}


def test_an_old_record_loads_with_its_config_and_timings_whole(history_at: str) -> None:
    run = gate_run(golden_set(3))
    with History(history_at) as h:
        h.record(run)
    with raw_backend(history_at) as db:
        (row,) = db.execute("SELECT result_json, result_zlib FROM runs")
        old = json.loads(unpack(*row))
        old["config"] = OLD_CONFIG
        for key in ("freshness", "money", "answers", "golden_size", "chunk_texts", "checks",
                    "stages", "cost"):
            del old[key]  # keys written only by later versions
        db.execute("UPDATE runs SET result_json = ?, result_zlib = NULL WHERE run_id = ?",
                   (json.dumps(old), run.run_id))
    with History(history_at) as h:
        loaded = h.load(run.run_id)
    assert loaded.config.source == "results" and loaded.config.embedder is None
    out = loaded.to_dict()
    assert out["config"] == OLD_CONFIG
    assert out["timings"] == run.timings.to_dict() == old["timings"]
    assert loaded.queries == run.queries
