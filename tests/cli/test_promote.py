"""`recallwatch ops promote`: production only for an ACCEPTed, cleanly ingested version."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.cli import app
from recallwatch.formats.policy import SearchSettings
from recallwatch.history import History, record_gate_run
from tests.history.helpers import KB, KB_GOLDEN, LENIENT, kb

__all__ = ["kb"]  # the fixture, imported for pytest

runner = CliRunner(env={"COLUMNS": "200"})


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps(KB_GOLDEN), encoding="utf-8")
    policy = tmp_path / "policy.yaml"
    policy.write_text("noise_ceiling: 1.0\n", encoding="utf-8")
    return {"golden": golden, "policy": policy, "history": tmp_path / "h.db"}


def _promote(kb: KB, files: dict[str, Path], *extra: str, full: bool = True) -> object:
    args = ["ops", "promote", "--store", kb.uri, "--history", str(files["history"])]
    if full:
        args += ["--golden", str(files["golden"]), "--policy", str(files["policy"])]
    return runner.invoke(app, [*args, *extra])


def test_promotes_the_accepted_version(kb: KB, files: dict[str, Path]) -> None:
    run = record_gate_run(kb.gate(), files["history"], store=kb.store)
    assert run.verdict == "ACCEPT"
    r = _promote(kb, files)
    v = run.store["version"]
    assert r.exit_code == 0, r.output
    assert r.output == (f"promoted {kb.store.uri} version {v} to production "
                        f"(ACCEPT run {run.run_id})\n")
    assert kb.store.production_version() == v
    with History(files["history"]) as h:
        [record] = h.monitor_runs(kind="promote")
    assert record.status == "promoted" and record.payload["accepted_run"] == run.run_id


def test_refuses_without_any_history(kb: KB, files: dict[str, Path]) -> None:
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert f"missing: no run history at {files['history']}" in r.output
    assert kb.store.production_version() is None
    assert not files["history"].exists()


def test_refuses_a_stopped_version_and_an_ungated_one(kb: KB, files: dict[str, Path]) -> None:
    accepted = record_gate_run(kb.gate(), files["history"], store=kb.store)
    v2 = kb.ingest_travel()
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert f"missing: no ACCEPTed gate run of golden set #{accepted.dataset_hash[:12]}" in r.output
    assert (f"(the store's latest gate run, {accepted.run_id}, was on version "
            f"{accepted.store['version']}: gate version {v2} before promoting it)") in r.output
    stop = record_gate_run(kb.gate(), files["history"], store=kb.store)
    assert stop.verdict == "STOP"
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert f"(its 1 run(s) there say STOP, latest {stop.run_id})" in r.output
    assert kb.store.production_version() is None
    # The accepted version itself can still be promoted by name.
    r = _promote(kb, files, "--version", accepted.store["version"])
    assert r.exit_code == 0, r.output
    assert kb.store.production_version() == accepted.store["version"]


def test_the_newest_verdict_on_a_version_stands(kb: KB, files: dict[str, Path]) -> None:
    record_gate_run(kb.gate(), files["history"], store=kb.store)
    # Same golden set, same policy rules, same version; searched with a filter: STOP.
    filtered = replace(LENIENT, search=SearchSettings(filter={"domain": "rrhh"}))
    stop = record_gate_run(run_gate(kb.golden, store=kb.store, embedder=kb.embedder,
                                    policy=filtered), files["history"], store=kb.store)
    assert stop.verdict == "STOP" and stop.policy_hash == LENIENT.hash
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert f"{stop.run_id}, is STOP (after ACCEPT" in r.output


def test_another_golden_set_is_not_enough(kb: KB, files: dict[str, Path]) -> None:
    record_gate_run(kb.gate(), files["history"], store=kb.store)
    other = dict(KB_GOLDEN, version="4")
    files["golden"].write_text(json.dumps(other), encoding="utf-8")
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert "was gated with another golden set" in r.output and "(despacho v3)" in r.output


def test_an_ingestion_with_rejections_blocks_its_version_until_resolved(
        kb: KB, files: dict[str, Path]) -> None:
    from recallwatch.ops.ingest import resolve_block

    kb.ingest([{"id": "broken", "text": ""}, {"id": "art_46", "text": "Artículo 46"}], "bad")
    run = record_gate_run(kb.gate(), files["history"], store=kb.store)
    assert run.verdict == "ACCEPT"
    r = _promote(kb, files)
    assert r.exit_code == 1
    assert "missing: ingestion: the ingestion of" in r.output and "rejected 1 record(s)" in r.output
    assert kb.store.production_version() is None
    resolve_block(kb.store, run.store["version"], "broken was an empty draft; not needed")
    r = _promote(kb, files)
    assert r.exit_code == 0, r.output


def test_without_golden_the_latest_run_on_the_store_names_it(kb: KB,
                                                             files: dict[str, Path]) -> None:
    run = record_gate_run(kb.gate(), files["history"], store=kb.store)
    r = _promote(kb, files, "--format", "json", full=False)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    assert out["promoted"] and out["accepted_run"] == run.run_id
    assert out["dataset_hash"] == run.dataset_hash and out["policy_hash"] == run.policy_hash
    assert out["notes"][0].startswith(f"golden set taken from the latest gate run on this store "
                                      f"({run.run_id}: despacho v3)")


def test_a_bad_golden_file_is_an_input_error(kb: KB, files: dict[str, Path]) -> None:
    files["golden"].write_text("{not json", encoding="utf-8")
    r = _promote(kb, files)
    assert r.exit_code == 2
    assert r.output.startswith(f"Error: {files['golden']}")
