"""``recallwatch online …`` through the CLI runner: exit codes, the JSON contracts of SPEC §6, and
one located line (no traceback) for bad input."""

from __future__ import annotations

import gzip
import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.formats.trec import write_qrels
from recallwatch.online.simulate import (
    make_collection,
    simulate_ab_log,
    simulate_interleaved_log,
    simulate_log,
)

runner = CliRunner(env={"COLUMNS": "200"})


def run(*args: str) -> Any:
    return runner.invoke(app, list(args))


def write_jsonl(path: Path, records: Any) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("online")
    col = make_collection(40, 20, seed=7, bias_scale=3.0)
    weak, strong = col.ranking(2.5, seed=1), col.ranking(0.3, seed=2)
    truth = col.qrels()
    pairs = [(q, doc, g) for q, docs in truth.items() for doc, g in docs.items()]
    write_qrels(d / "human.qrels", [p[0] for p in pairs], [p[1] for p in pairs],
                [p[2] for p in pairs])
    return {
        "clicks": write_jsonl(d / "clicks.jsonl.gz", simulate_log(col, 8000, seed=8)),
        "ab": write_jsonl(d / "ab.jsonl", simulate_ab_log(col, weak, strong, 1500, seed=9)),
        "il": write_jsonl(d / "il.jsonl", simulate_interleaved_log(col, weak, strong, 1500,
                                                                   seed=10)),
        "human": d / "human.qrels",
    }


def test_online_commands_are_listed() -> None:
    r = run("online", "--help")
    assert r.exit_code == 0
    for name in ("clicks", "ab", "interleave", "judge"):
        assert name in r.output


def test_clicks_json_contract_and_qrels(logs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "clicks.qrels"
    r = run("online", "clicks", str(logs["clicks"]), "--click-model", "pbm", "--min-impressions",
            "20", "--out", str(out), "--qrels", str(logs["human"]), "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["model"] == "pbm"
    first = data["judgments"][0]
    assert {"query_id", "id", "relevance", "impressions", "grade"} <= set(first)
    assert first["source"] == "click-model:pbm" and 0 <= first["relevance"] <= 1
    assert all(j["impressions"] >= 20 for j in data["judgments"])
    assert data["agreement"]["kappa"] > 0.7 and data["agreement"]["weights"] == "quadratic"
    assert data["log"]["impressions"] == 8000 and len(data["log"]["sha256"]) == 64
    lines = out.read_text().splitlines()
    assert len(lines) == len(data["judgments"]) and lines[0].split()[1] == "0"
    meta = json.loads((tmp_path / "clicks.qrels.provenance.json").read_text())
    assert meta["source"] == "click-model:pbm" and meta["log"]["sha256"] == data["log"]["sha256"]
    assert meta["settings"]["min_impressions"] == 20
    # the labels feed the metrics like any other qrels
    assert run("eval", str(out), str(_ideal_run(tmp_path, lines)), "-m", "nDCG@10").exit_code == 0


def _ideal_run(tmp_path: Path, qrels_lines: list[str]) -> Path:
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} 1 {g} t\n" for q, _, d, g in
                            (line.split() for line in qrels_lines)))
    return path


def test_clicks_table_output(logs: dict[str, Path]) -> None:
    r = run("online", "clicks", str(logs["clicks"]))
    assert r.exit_code == 0, r.output
    assert "click model pbm" in r.output
    assert re.search(r"P\(look at rank 1\.\.\): 1\.00 0\.[45]\d 0\.3", r.output), r.output


def test_clicks_reports_deep_clicks_duplicates_and_sparse_pairs(tmp_path: Path) -> None:
    line = {"query_id": "q", "shown": [{"id": f"d{i}"} for i in range(1, 7)],
            "clicks": [{"id": "d1"}, {"id": "d5"}, {"id": "d6"}]}
    other = {**line, "clicks": [{"id": "d2"}], "ts": "2025-01-01T00:00:00Z"}
    log = write_jsonl(tmp_path / "deep.jsonl", [line] * 12 + [other, other])
    r = run("online", "clicks", str(log), "--max-rank", "4", "--click-model", "dctr", "--format",
            "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    # 12 impressions with two clicks each below rank 4; 11 + 1 lines repeat an earlier one
    assert data["evidence"]["clicks_beyond_max_rank"] == 24
    assert data["evidence"]["impressions_with_clicks_beyond_max_rank"] == 12
    assert data["evidence"]["duplicate_lines"] == 12 == data["log"]["duplicate_lines"]
    assert sum(data["left_out"].values()) == data["unlabelled_pairs"]
    r = run("online", "clicks", str(log), "--max-rank", "4")
    assert "WARNING: 24 clicks on results deeper than --max-rank 4 (in 12 impressions)" in r.output
    assert "WARNING: 12 lines repeat an earlier line byte for byte" in r.output
    assert "no label is not grade 0" in r.output


def test_clicks_prior_and_dbn(logs: dict[str, Path]) -> None:
    r = run("online", "clicks", str(logs["clicks"]), "--prior", "auto", "--format", "json")
    assert r.exit_code == 0, r.output
    prior = json.loads(r.stdout)["settings"]["prior"]
    assert prior["strength"] in (0, 1, 2, 5, 10, 20, 50, 100)
    assert set(prior["held_out_log_likelihood"]) == {"0", "1", "2", "5", "10", "20", "50", "100"}
    r = run("online", "clicks", str(logs["clicks"]), "--click-model", "dbn", "--prior", "3")
    assert r.exit_code == 0, r.output
    assert "continuation  P(read on to the next result) = 0." in r.output
    assert "prior      strength 3 pseudo-examinations" in r.output
    for model in ("dbn", "sdbn", "cm"):
        r = run("online", "clicks", str(logs["clicks"]), "--click-model", model, "--format", "json")
        assert r.exit_code == 0, r.output
        fitted = json.loads(r.stdout)["fit"]
        assert fitted["model"] == model and fitted["interval"]["method"]
    r = run("online", "clicks", str(logs["clicks"]), "--prior", "lots")
    assert r.exit_code == 2 and "--prior takes none, auto or a strength" in r.stderr


def test_ab_json_contract_and_exit_codes(logs: dict[str, Path], tmp_path: Path) -> None:
    r = run("online", "ab", str(logs["ab"]), "--metric", "ctr", "--metric", "abandonment",
            "--metric", "time-to-click", "--metric", "conversion", "--unit", "user",
            "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data["srm"]) >= {"p_value", "ok"} and data["srm"]["ok"] is True
    assert set(data["metrics"]) == {"ctr", "abandonment", "time-to-click", "conversion"}
    for m in data["metrics"].values():
        assert set(m) >= {"variants", "delta", "ci", "p_value"} and set(m["variants"]) == {"A",
                                                                                          "B"}
    assert data["verdict"] in ("better", "mixed") and data["unit"] == "user"
    # drop a third of B's users: the readout is blocked, exit 1
    records = [json.loads(x) for x in logs["ab"].read_text().splitlines()]
    skewed = write_jsonl(tmp_path / "skewed.jsonl", [
        x for x in records if x["variant"] == "A" or int(x["user"][1:]) % 3])
    r = run("online", "ab", str(skewed))
    assert r.exit_code == 1, r.output
    assert "VERDICT: BLOCKED" in r.output and "sample-ratio mismatch" in r.output
    r = run("online", "ab", str(skewed), "--unit", "session", "--format", "json")
    assert r.exit_code == 1 and json.loads(r.stdout)["verdict"] == "blocked"


def test_interleave_json_contract(logs: dict[str, Path]) -> None:
    r = run("online", "interleave", str(logs["il"]), "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["impressions"] == 1500 and set(data["wins"]) == {"A", "B", "ties"}
    assert data["winner"] == "B" and data["p_value"] < 0.05
    r = run("online", "interleave", str(logs["il"]))
    assert "WINNER: B" in r.output


@pytest.mark.parametrize(("command", "message"), [
    (["clicks"], ":2: record 'q1': field 'clicks[1].id': expected the id of a shown result "
                 "(a click on something not shown), found 'zz'"),
    (["ab"], ":2: record 'q1': field 'clicks[1].id': expected the id of a shown result"),
    (["interleave"], ":1: record 'q1': field 'shown[].team': expected an interleaved "
                     "impression"),
])
def test_bad_log_is_one_located_line_exit_2(tmp_path: Path, command: list[str],
                                           message: str) -> None:
    good = {"query_id": "q1", "user": "u", "variant": "A", "shown": [{"id": "a"}],
            "clicks": [{"id": "a"}]}
    bad = {**good, "clicks": [{"id": "zz"}]}
    log = write_jsonl(tmp_path / "bad.jsonl", [good, bad])
    r = run("online", *command, str(log))
    assert r.exit_code == 2
    assert r.stderr.strip() == f"Error: {log}{message}" or (
        r.stderr.startswith(f"Error: {log}{message}")), r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.output + r.stderr


def test_usage_errors_exit_2(logs: dict[str, Path]) -> None:
    r = run("online", "clicks", str(logs["clicks"]), "--click-model", "cascade")
    assert r.exit_code == 2 and "unknown click model 'cascade'" in r.stderr
    r = run("online", "ab", str(logs["ab"]), "--metric", "revenue")
    assert r.exit_code == 2 and "unknown --metric 'revenue'" in r.stderr
    r = run("online", "clicks", str(logs["clicks"]), "--cuts", "0.5,0.2,0.9")
    assert r.exit_code == 2 and "three increasing numbers" in r.stderr


@pytest.fixture
def judge_server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            text = body["messages"][1]["content"]
            grade = text.rsplit("grade ", 1)[1][0]  # the canned passage says its grade
            data = json.dumps({"choices": [{"message": {"content": grade}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_judge_command(judge_server: str, tmp_path: Path) -> None:
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [
        {"query_id": "q1", "query": "iva", "id": f"d{i}", "text": f"passage with grade {g}"}
        for i, g in enumerate([3, 0, 2, 1, 3, 1])])
    human = tmp_path / "human.qrels"
    human.write_text("q1 0 d0 3\nq1 0 d1 0\nq1 0 d2 2\nq1 0 d3 0\n")  # d3: the judge says 1
    out = tmp_path / "llm.qrels"
    r = run("online", "judge", str(pairs), "--qrels", str(human), "--base-url", judge_server,
            "--model", "canned", "--min-pairs", "4", "--out", str(out), "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["accepted"] and data["agreement"]["pairs"] == 4 and data["labels"] == 2
    assert out.read_text() == "q1 0 d4 3\nq1 0 d5 1\n"
    meta = json.loads((tmp_path / "llm.qrels.provenance.json").read_text())
    assert meta["source"] == "llm:canned" and meta["agreement"]["kappa"] > 0.8
    assert meta["settings"]["judge"]["prompt_version"] == "recallwatch-judge-1"
    # a floor above the measured kappa: refused, exit 1, nothing written
    refused = tmp_path / "refused.qrels"
    r = run("online", "judge", str(pairs), "--qrels", str(human), "--base-url", judge_server,
            "--model", "canned", "--min-pairs", "4", "--min-kappa", "0.99", "--out",
            str(refused))
    assert r.exit_code == 1 and "REFUSED" in r.output and not refused.exists()
    # bad pairs file: located, exit 2
    bad = write_jsonl(tmp_path / "bad.jsonl", [{"query_id": "q1", "query": "x", "id": "d1"}])
    r = run("online", "judge", str(bad), "--qrels", str(human), "--base-url", judge_server,
            "--model", "canned")
    assert r.exit_code == 2 and f"{bad}:1: field 'text': expected a non-empty string" in r.stderr
