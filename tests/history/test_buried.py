""""Who buried it", on a real store: the chunks ingested since the accepted run's index version
that now outrank a regressed query's expected chunk."""

from __future__ import annotations

from recallwatch.history import History, record_gate_run
from tests.history.helpers import KB


def test_friday_evening_the_new_travel_procedure_buries_the_profiles_table(
        kb: KB, history_at: str) -> None:
    db = history_at
    accepted = record_gate_run(kb.gate(), db, store=kb.store)
    assert accepted.verdict == "ACCEPT"
    v1 = accepted.store["version"]
    v2 = kb.ingest_travel()
    assert v2 != v1
    now = record_gate_run(kb.gate(), db, store=kb.store)
    assert now.verdict == "STOP"
    assert now.comparison is not None
    c = now.comparison["last_accepted"]
    assert c["run_id"] == accepted.run_id and c["index_version"] == v1
    assert c["newly_failing"] == ["q17"]
    culprits = c["buried_by"]["q17"]
    q17 = now.query("q17")
    above = [cid for cid, _ in [*q17.top, *q17.beyond_k]][:q17.expected[0].rank - 1]
    # Exactly the new chunks ranked above the expected chunk: in the top-K and just below it.
    new_ids = set(kb.store.ids_since(v1))
    assert [b["id"] for b in culprits] == [cid for cid in above if cid in new_ids]
    # the four identical new chunks tie exactly: ordered by id descending, as eval ranks ties
    assert [b["id"] for b in culprits] == ["travel_03", "travel_02", "travel_01", "travel_00"]
    assert [b["rank"] for b in culprits] == [1, 2, 3, 4]
    expected_rank = now.query("q17").expected[0].rank
    assert expected_rank == 5
    assert all(b["expected_id"] == "tabla_perfiles" and b["expected_rank"] == 5 for b in culprits)
    assert c["details"][0] == (
        f"q17 passed at run {accepted.run_id} (index v{v1}) and fails now on recall (recall "
        f"1.000 → 0.000): ingested since v{v1}, chunks travel_03 (rank 1), travel_02 (rank 2), "
        "travel_01 (rank 3), travel_00 (rank 4) now rank above its expected tabla_perfiles "
        "(rank 5)")
    # The query whose domain saw nothing new is untouched.
    assert "q05" not in c["rank_changes"]
    # The stored run carries the same comparison.
    with History(db) as h:
        assert h.load(now.run_id).comparison == now.comparison


def test_a_single_culprit_reads_like_the_chapter(kb: KB, history_at: str) -> None:
    from tests.history.helpers import TRAVEL_CORPUS

    db = history_at
    accepted = record_gate_run(kb.gate(), db, store=kb.store)
    # Only part of the procedure arrives, and one note is rewritten.
    kb.ingest([*TRAVEL_CORPUS[:1], {"id": "nota_0", "text": "Nota general 0 revisada"}], "fix")
    now = record_gate_run(kb.gate(), db, store=kb.store)
    q17 = now.query("q17")
    assert q17.passed  # one new chunk above it: tabla_perfiles is 2nd of 3, still in the top-K
    assert now.comparison is not None
    assert now.comparison["last_accepted"]["run_id"] == accepted.run_id
    assert now.comparison["last_accepted"]["rank_changes"]["q17"] == {"tabla_perfiles": [1, 2]}
    assert now.comparison["last_accepted"]["buried_by"] == {}


def test_nothing_new_above_it_points_at_the_expected_chunk_itself(kb: KB, history_at: str) -> None:
    db = history_at
    accepted = record_gate_run(kb.gate(), db, store=kb.store)
    # The expected chunk's text is rewritten and now matches the query badly.
    kb.ingest([{"id": "tabla_perfiles", "text": "Índice de anexos", "domain": "viajes"}], "edit")
    now = record_gate_run(kb.gate(), db, store=kb.store)
    assert now.comparison is not None
    c = now.comparison["last_accepted"]
    assert c["run_id"] == accepted.run_id and c["newly_failing"] == ["q17"]
    assert c["buried_by"]["q17"] == []
    assert "nothing ingested since" in c["details"][0]
    assert "tabla_perfiles were themselves re-ingested" in c["details"][1]


def test_without_the_store_the_report_falls_back_to_what_entered_the_top_k(
        kb: KB, history_at: str) -> None:
    db = history_at
    record_gate_run(kb.gate(), db)
    kb.ingest_travel()
    now = record_gate_run(kb.gate(), db)
    assert now.comparison is not None
    c = now.comparison["last_accepted"]
    assert c["buried_by"] == {}
    assert c["entered_top_k"]["q17"] == ["travel_03", "travel_02", "travel_01"]
    assert "new in its top-3: travel_03 (1), travel_02 (2), travel_01 (3)" in c["details"][0]
