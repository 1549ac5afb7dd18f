"""Migration ``0005_compact_run_detail``: a run's full result stored zlib-compressed, the runs of
an older history compressed by the migration, and every reader given the gate's JSON text byte
for byte — on a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import zlib

from recallwatch.history import MIGRATIONS, History, compare_runs
from recallwatch.report import to_json
from tests.history.helpers import gate_run, golden_set, raw_backend
from tests.history.test_migrations import _applied, _v1_history


def _stored(location: str, run_id: str) -> tuple[str, bytes | None]:
    with raw_backend(location) as db:
        text, packed = db.execute("SELECT result_json, result_zlib FROM runs WHERE run_id = ?",
                                  (run_id,))[0]
    return str(text), None if packed is None else bytes(packed)


def test_an_older_historys_runs_are_compressed_by_the_migration(history_at: str) -> None:
    old_id = _v1_history(history_at)
    with raw_backend(history_at) as db:
        original = str(db.execute("SELECT result_json FROM runs")[0][0])
    with History(history_at) as h:
        loaded = h.load(old_id)
    assert ("0005_compact_run_detail" in dict(_applied(history_at)).values()
            and MIGRATIONS[4][0] == "0005_compact_run_detail")
    text, packed = _stored(history_at, old_id)
    assert text == "" and packed is not None
    assert zlib.decompress(packed).decode() == original  # the gate's text, byte for byte
    assert loaded.to_dict() == json.loads(original)


def test_a_new_run_is_stored_compressed_and_reads_back_whole(history_at: str) -> None:
    g = golden_set(300, domains=("a", "b"))
    first, second = gate_run(g), gate_run(g, {"q07": {"q07_a": 25}})
    with History(history_at) as h:
        h.record(first)
        h.record(second)
        assert to_json(h.load(second.run_id)) == to_json(second)
        diff = compare_runs(h.load(first.run_id), h.load(second.run_id))
    assert diff["newly_failing"] == ["q07"]
    text, packed = _stored(history_at, second.run_id)
    plain = len(json.dumps(second.to_dict(), ensure_ascii=False, default=str).encode())
    assert text == "" and packed is not None
    assert len(packed) * 5 < plain  # the per-query detail is most of a run, and repeats itself
