"""The chapter's whole story on the embedded default (LanceDB + USE multilingual), end to end
through the CLI: v1 STOPs on a table without description, the fix makes v2 ACCEPT, a Friday-evening
ingestion buries an old table (v3 STOPs and names who buried it), and promote obeys the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import wide_cli as cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    tmp = tmp_path_factory.mktemp("story")
    store = f"lancedb://{tmp / 'kb'}?table=chunks"
    history = str(tmp / "history.db")

    def gate() -> tuple[int, dict[str, object]]:
        code, out, err = cli("gate", str(KB / "golden.yaml"), "--store", store, "--policy",
                             str(KB / "policy.yaml"), "--history", history, "--format", "json",
                             "--run-date", "2025-06-01")
        assert code in (0, 1), err
        return code, json.loads(out)

    steps: dict[str, object] = {"store": store, "history": history}
    assert cli("ingest", str(KB / "corpus_v1.jsonl"), "--store", store, "--no-progress")[0] == 0
    steps["v1"] = gate()
    steps["promote_v1"] = cli("ops", "promote", "--store", store, "--history", history, "--golden",
                              str(KB / "golden.yaml"), "--policy", str(KB / "policy.yaml"))
    assert cli("ingest", str(KB / "fix_v2.jsonl"), "--store", store, "--no-progress")[0] == 0
    steps["v2"] = gate()
    steps["promote_v2"] = cli("ops", "promote", "--store", store, "--history", history, "--golden",
                              str(KB / "golden.yaml"), "--policy", str(KB / "policy.yaml"))
    assert cli("ingest", str(KB / "travel_v3.jsonl"), "--store", store, "--no-progress")[0] == 0
    steps["v3"] = gate()
    return steps


def query(result: dict[str, object], qid: str) -> dict[str, object]:
    return next(q for q in result["queries"] if q["id"] == qid)  # type: ignore[index,union-attr]


def test_v1_stops_with_the_table_without_description(story: dict[str, object]) -> None:
    code, res = story["v1"]  # type: ignore[misc]
    assert code == 1 and res["verdict"] == "STOP"
    assert {r["rule"] for r in res["reasons"]} >= {"mean_quality", "gold_failure"}
    irpf = query(res, "irpf_autonomos_2025")
    assert irpf["quality"] == 0 and round(irpf["recall"], 3) == 0.667
    diagnosis = irpf["diagnosis"][0]
    assert (diagnosis["cause"], diagnosis["chunk_id"]) == ("description", "silver_finanzas_123")
    assert "description is empty" in diagnosis["summary"]
    failing = {q["id"] for q in res["queries"] if not q["passed"]}
    # Every failing query is a table query whose table has no description.
    assert all(query(res, q)["diagnosis"][0]["cause"] == "description" for q in failing)
    assert "numeric_only" in {p["name"] for p in res["patterns"]}


def test_v1_cannot_be_promoted(story: dict[str, object]) -> None:
    code, out, _ = story["promote_v1"]  # type: ignore[misc]
    assert code == 1 and "ACCEPT" in out


def test_v2_accepts_after_the_fix_and_is_promoted(story: dict[str, object]) -> None:
    code, res = story["v2"]  # type: ignore[misc]
    assert code == 0 and res["verdict"] == "ACCEPT"
    assert res["aggregate"]["mean_quality"] >= 95
    prev = res["comparison"]["previous"]
    assert prev["comparable"] and set(prev["newly_passing"]) >= {"irpf_autonomos_2025"}
    assert story["promote_v2"][0] == 0  # type: ignore[index]


def test_v3_regression_names_who_buried_it(story: dict[str, object]) -> None:
    code, res = story["v3"]  # type: ignore[misc]
    assert code == 1
    travel_ids = {json.loads(line)["id"]
                  for line in (KB / "travel_v3.jsonl").read_text(encoding="utf-8").splitlines()
                  if line.strip()}
    accepted = res["comparison"]["last_accepted"]
    assert accepted["verdict"] == "ACCEPT"
    assert "percibos_desplazamiento_internacional" in accepted["newly_failing"]
    buried = accepted["buried_by"]["percibos_desplazamiento_internacional"]
    assert buried and {b["id"] for b in buried} <= travel_ids
