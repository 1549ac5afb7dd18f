"""`recallwatch gate` through its CLI: exit codes, outputs, reports, bad input, hostile text."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app

runner = CliRunner(env={"COLUMNS": "200"})

GOLDEN = """\
name: cli-demo
version: "1"
queries:
  - {id: q1, text: "¿Cuántos días de vacaciones?", expected: [a], domain: rrhh}
  - {id: q2, text: "Cuota de autónomos", expected: [b, c], gold: [b], domain: finanzas}
"""


def results_line(qid: str, ids: list[str]) -> str:
    return json.dumps({"query_id": qid, "results": [
        {"id": cid, "score": round(0.9 - 0.01 * i, 4)} for i, cid in enumerate(ids)]})


def fillers(n: int, prefix: str = "x") -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    golden = tmp_path / "golden.yaml"
    golden.write_text(GOLDEN, encoding="utf-8")
    ok = tmp_path / "ok.jsonl"  # expected chunks at ranks 7 (and 7, 8): noise <= 3
    ok.write_text(results_line("q1", [*fillers(6), "a", *fillers(8, "y")]) + "\n"
                  + results_line("q2", [*fillers(6), "b", "c", *fillers(5, "y")]) + "\n")
    bad = tmp_path / "bad.jsonl"  # q2 loses its Gold chunk to rank 15
    bad.write_text(results_line("q1", [*fillers(6), "a", *fillers(8, "y")]) + "\n"
                   + results_line("q2", [*fillers(6), "c", *fillers(7, "y"), "b"]) + "\n")
    return {"golden": golden, "ok": ok, "bad": bad, "dir": tmp_path}


def gate(*args: str) -> object:
    return runner.invoke(app, ["gate", *args, "--no-history"])


def test_accept_exit_0_and_json_contract(files: dict[str, Path]) -> None:
    r = gate(str(files["golden"]), "--results", str(files["ok"]), "--format", "json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["verdict"] == "ACCEPT" and d["reasons"] == []
    assert d["aggregate"]["mean_quality"] == 100.0
    assert [q["id"] for q in d["queries"]] == ["q1", "q2"]


def test_stop_exit_1_with_reasons_and_reports(files: dict[str, Path]) -> None:
    out = files["dir"] / "reports"
    junit = files["dir"] / "junit.xml"
    r = gate(str(files["golden"]), "--results", str(files["bad"]), "--junit", str(junit),
             "--report", str(out))
    assert r.exit_code == 1, r.output
    assert "STOP" in r.stdout and "gold_failure" in r.stdout and "q2" in r.stdout
    d = json.loads((out / "report.json").read_text())
    assert d["verdict"] == "STOP"
    q2 = next(q for q in d["queries"] if q["id"] == "q2")
    assert q2["expected"][0] == {"id": "b", "rank": 15, "score": q2["expected"][0]["score"],
                                 "gold": True, "in_top_k": False}
    md = (out / "report.md").read_text()
    assert "**STOP**" in md and "gold\\_failure" in md and d["dataset_hash"][:12] in md
    suite = ET.parse(junit).getroot()
    # two queries, and the noise rule's check, skipped: q1 lists too few chunks to measure it
    assert suite.get("tests") == "3" and suite.get("failures") == "1"
    assert suite.find("testcase[@classname='recallwatch.policy.noise']/skipped") is not None
    failure = suite.find("testcase[@name='q2: Cuota de autónomos']/failure")
    assert failure is not None and "recall" in failure.get("message", "")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["dataset_hash"] == d["dataset_hash"] and props["verdict"] == "STOP"


def test_markdown_format(files: dict[str, Path]) -> None:
    r = gate(str(files["golden"]), "--results", str(files["bad"]), "--format", "markdown")
    assert r.exit_code == 1
    assert r.stdout.startswith("## ⛔ recallwatch gate: **STOP**")


@pytest.mark.parametrize(("args", "message"), [
    (["--results", "missing.jsonl"], "missing.jsonl: expected an existing file"),
    ([], "give exactly one of --store URI or --results FILE"),
    (["--store", "nosuch://x"], "unknown store scheme 'nosuch'"),
    (["--results", "{ok}", "--run-date", "yesterday"],
     "field '--run-date': expected a date YYYY-MM-DD, found 'yesterday'"),
])
def test_usage_and_input_errors_exit_2(files: dict[str, Path], args: list[str],
                                       message: str) -> None:
    args = [a.replace("{ok}", str(files["ok"])) for a in args]
    r = gate(str(files["golden"]), *args)
    assert r.exit_code == 2
    assert message in r.stderr
    assert "Traceback" not in r.output


def test_results_missing_a_query_is_an_input_error(files: dict[str, Path]) -> None:
    partial = files["dir"] / "partial.jsonl"
    partial.write_text(results_line("q1", ["a"]) + "\n")
    r = gate(str(files["golden"]), "--results", str(partial))
    assert r.exit_code == 2
    assert "no results line for 1 golden query: q2" in r.stderr


def test_hostile_text_is_escaped_everywhere(files: dict[str, Path]) -> None:
    evil = "\x1b[31mRED\x1b[0m <script>alert(1)</script> [bold]x[/bold] | `c`"
    golden = files["dir"] / "evil.yaml"
    golden.write_text(json.dumps({"name": "evil", "version": "1", "queries": [
        {"id": "q1", "text": evil, "expected": ["a"]}]}), encoding="utf-8")
    golden = golden.rename(files["dir"] / "evil.json")
    res = files["dir"] / "r.jsonl"
    res.write_text(results_line("q1", [*fillers(12), "a"]) + "\n")
    out = files["dir"] / "rep"
    r = gate(str(golden), "--results", str(res), "--report", str(out))
    assert r.exit_code == 1
    assert "\x1b" not in r.stdout and "\\x1b[31mRED" in r.stdout
    assert "[bold]x[/bold]" in r.stdout  # shown as typed, not interpreted
    md = (out / "report.md").read_text()
    assert "<script>" not in md and "\\<script\\>" in md and "\x1b" not in md
    xml = (out / "junit.xml").read_text()
    assert "<script>" not in xml and "&lt;script&gt;" in xml and "\x1b" not in xml
    ET.fromstring(xml.split("\n", 1)[1])  # well-formed


def test_store_gate_uses_the_embedder_that_built_it_and_refuses_another(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    texts = ["Vacaciones: 30 días naturales al año.", "El salario se paga el último día del mes.",
             "La jornada es de 40 horas semanales."]
    corpus.write_text("".join(json.dumps({"id": f"c{i}", "text": t}) + "\n"
                              for i, t in enumerate(texts)))
    golden = tmp_path / "g.json"
    golden.write_text(json.dumps({"name": "g", "queries": [
        {"id": "q1", "text": "¿Cuántos días de vacaciones tengo?", "expected": ["c0"]}]}))
    store = f"lancedb://{tmp_path / 'kb'}?table=chunks"
    ingest = runner.invoke(app, ["ingest", str(corpus), "--store", store, "--no-progress"])
    assert ingest.exit_code == 0, ingest.output
    ok = gate(str(golden), "--store", store, "--format", "json")
    assert ok.exit_code == 0, ok.stderr  # rank 1 of 3 chunks: noise 2 <= 3
    d = json.loads(ok.stdout)
    assert d["queries"][0]["expected"][0]["rank"] == 1
    assert d["config"]["embedder"]["name"] == "use-multilingual"
    assert d["store"]["version"] is not None
    other = gate(str(golden), "--store", store, "--embedder", "e5-small")
    assert other.exit_code == 2
    assert "was built with use-multilingual" in other.stderr and "e5-small" in other.stderr


# -- the report set: whole or not at all, and where it may go --------------------------------------

REPORT_SET = ["junit.xml", "report.html", "report.json", "report.md"]


def test_report_set_holds_the_four_files_and_replaces_an_earlier_set(
        files: dict[str, Path]) -> None:
    out = files["dir"] / "reports"
    assert gate(str(files["golden"]), "--results", str(files["ok"]), "--report",
                str(out)).exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == REPORT_SET
    assert gate(str(files["golden"]), "--results", str(files["bad"]), "--report",
                str(out)).exit_code == 1
    assert sorted(p.name for p in out.iterdir()) == REPORT_SET
    assert json.loads((out / "report.json").read_text())["verdict"] == "STOP"
    assert not [p for p in files["dir"].iterdir() if p.name.startswith(".")]


def test_a_failing_report_writer_leaves_the_earlier_set_untouched(
        files: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    import recallwatch.report.html

    out = files["dir"] / "reports"
    gate(str(files["golden"]), "--results", str(files["ok"]), "--report", str(out))
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(result: object) -> str:
        raise RuntimeError("html writer broke")

    monkeypatch.setattr(recallwatch.report.html, "to_html", broken)
    r = gate(str(files["golden"]), "--results", str(files["bad"]), "--report", str(out))
    assert r.exit_code == 3 and "html writer broke" in r.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # still the ACCEPT set
    fresh = files["dir"] / "fresh"
    r = gate(str(files["golden"]), "--results", str(files["bad"]), "--report", str(fresh))
    assert r.exit_code == 3 and not fresh.exists()
    assert not [p for p in files["dir"].iterdir() if p.name.startswith(".")]


def test_a_kill_between_report_files_leaves_no_partial_set(files: dict[str, Path]) -> None:
    """SIGKILL while the HTML is rendered (after the history commit and the other three files):
    no report folder appears, and the run is in the history."""
    import sqlite3
    import subprocess
    import sys

    out, db = files["dir"] / "reports", files["dir"] / "history.db"
    code = (
        "import os, signal, sys\n"
        "import recallwatch.report.html as h\n"
        "h.to_html = lambda result: os.kill(os.getpid(), signal.SIGKILL)\n"
        "from recallwatch.cli import main\n"
        f"sys.argv = ['recallwatch', 'gate', {str(files['golden'])!r}, '--results', "
        f"{str(files['ok'])!r}, '--history', {str(db)!r}, '--report', {str(out)!r}]\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -9, proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert not out.exists()


def test_report_naming_a_file_is_an_input_error(files: dict[str, Path]) -> None:
    target = files["dir"] / "out.txt"
    target.write_text("keep me")
    db = files["dir"] / "h.db"
    r = runner.invoke(app, ["gate", str(files["golden"]), "--results", str(files["ok"]),
                            "--history", str(db), "--report", str(target)])
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {target}: expected a directory, found <a file> (--report names "
                        "the directory that receives report.json, report.md, junit.xml, "
                        "report.html)\n")
    assert target.read_text() == "keep me" and not db.exists()  # refused before the run


def test_report_directory_holding_other_files_is_refused(files: dict[str, Path]) -> None:
    r = gate(str(files["golden"]), "--results", str(files["ok"]), "--report", str(files["dir"]))
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {files['dir']}: holds files that are not part of a report set "
                        "(bad.jsonl, golden.yaml, ok.jsonl), and a new set replaces the directory "
                        "whole (give --report a new directory, or one that holds only a report "
                        "set)\n")
    assert sorted(p.name for p in files["dir"].iterdir()) == ["bad.jsonl", "golden.yaml",
                                                              "ok.jsonl"]


def test_report_under_a_file_and_junit_naming_a_directory_are_input_errors(
        files: dict[str, Path]) -> None:
    r = gate(str(files["golden"]), "--results", str(files["ok"]), "--report",
             str(files["ok"] / "sub"))
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {files['ok'] / 'sub'}: expected a path inside a directory, "
                        f"found <{files['ok']} is a file>\n")
    r = gate(str(files["golden"]), "--results", str(files["ok"]), "--junit", str(files["dir"]))
    assert r.exit_code == 2
    assert r.stderr == (f"Error: {files['dir']}: expected a file name, found <a directory> "
                        "(--junit names the file to write, e.g. gate.xml)\n")
