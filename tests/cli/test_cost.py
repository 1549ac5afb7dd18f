"""Cost beside quality on the command line: ``compare --cost-a/--cost-b`` and ``history compare``
print the cost deltas of two gate runs, each timing with its interval, and say when a quantile
rests on too few calls. The costs are injected measurements (timings are never asserted): the
arithmetic of the deltas is what is tested."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.cli import app
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.results import RankedList
from recallwatch.history import record_gate_run
from recallwatch.report.html import to_html

TREC = Path(__file__).resolve().parents[1] / "data" / "trec"
COST = {"queries": 400, "calls": 400, "search_p50_ms": 2.0, "search_p99_ms": 4.0,
        "search_mean_ms": 2.5, "search_max_ms": 5.0, "embed_ms_per_query": 1.0,
        "index_bytes": 2048}


def _run(**cost: Any) -> GateResult:
    golden = GoldenSet.from_dict({"name": "t", "version": "1", "top_k": 2, "queries": [
        {"id": f"q{i}", "text": f"question {i}", "expected": [f"c{i}"]} for i in range(3)]})
    results = {f"q{i}": RankedList([f"c{i}", "x"], np.array([0.9, 0.1]))
               for i in range(3)}
    return replace(run_gate(golden, results=results), cost={**COST, **cost})


def test_compare_prints_cost_deltas_beside_quality(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(_run().to_dict()), encoding="utf-8")
    b.write_text(json.dumps(_run(search_p99_ms=6.0, index_bytes=3072).to_dict()),
                 encoding="utf-8")
    args = ["compare", str(TREC / "qrels.txt"), str(TREC / "run.txt"), str(TREC / "run.txt"),
            "-m", "RR", "--cost-a", str(a), "--cost-b", str(b)]
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    row = next(x for x in res.output.splitlines() if x.startswith("search latency p99"))
    assert row.split()[-4:] == ["4.00", "6.00", "+2.00", "+50%"]
    assert "+1.0 KiB" in res.output and "2.0 KiB" in res.output
    body = json.loads(CliRunner().invoke(app, [*args, "--format", "json"]).output)
    assert body["cost"]["index_bytes"]["increase"] == 0.5
    half = CliRunner().invoke(app, args[:-2])
    assert half.exit_code == 2


def test_compare_refuses_a_report_without_cost(tmp_path: Path) -> None:
    a = tmp_path / "a.json"
    a.write_text(json.dumps({**_run().to_dict(), "cost": None}), encoding="utf-8")
    res = CliRunner().invoke(app, ["compare", str(TREC / "qrels.txt"), str(TREC / "run.txt"),
                                   str(TREC / "run.txt"), "-m", "RR", "--cost-a", str(a),
                                   "--cost-b", str(a)])
    assert res.exit_code == 2
    lines = [x for x in res.output.splitlines() if x.strip()]
    assert len(lines) == 1 and "a.json" in lines[0] and "cost" in lines[0]


def test_history_compare_prints_cost_rows(tmp_path: Path) -> None:
    history = tmp_path / "h.db"
    a = record_gate_run(_run(), history)
    b = record_gate_run(_run(embed_ms_per_query=1.5), history)
    res = CliRunner().invoke(app, ["history", "compare", a.run_id, b.run_id, "--history",
                                   str(history)], env={"COLUMNS": "150"})
    assert res.exit_code == 0, res.output
    row = next(x for x in res.output.splitlines() if "query embedding" in x)
    assert "1.00" in row and "1.50" in row and "+50%" in row
    assert "cost: timings of two runs measured at different moments" in res.output
    assert b.comparison is not None
    assert b.comparison["previous"]["cost"]["embed_ms_per_query"]["increase"] == 0.5
    body = json.loads(CliRunner().invoke(app, ["history", "compare", a.run_id, b.run_id,
                                               "--history", str(history), "--format",
                                               "json"]).output)
    assert body["cost"]["search_p99_ms"]["delta"] == 0.0


def test_html_report_shows_cost_and_limits(tmp_path: Path) -> None:
    from recallwatch.acceptance.limits import run_checks
    from recallwatch.formats.policy import load_policy

    (tmp_path / "p.yaml").write_text("max_latency_p99_ms: 3\n", encoding="utf-8")
    result = _run()
    reasons, checks = run_checks(result.queries, load_policy(tmp_path / "p.yaml"), result.cost)
    html = to_html(replace(result, reasons=tuple(reasons), checks=tuple(checks), verdict="STOP"))
    assert "search latency p50 2.0 ms, p99 4.0 ms over 400 calls" in html
    assert "Policy limits" in html and "latency_p99" in html


def _timed(tmp_path: Path, name: str, scale: float, calls: int) -> Path:
    """A gate report whose cost comes from ``calls`` injected per-call timings."""
    from recallwatch.acceptance.cost import measure_cost
    from recallwatch.acceptance.retrieve import Timings

    rng = np.random.default_rng(int(scale * 10) + calls)
    cost = measure_cost(Timings(search_each=list(0.002 * scale * rng.lognormal(0, 0.3, calls)),
                                embed=0.01, embedded=3), 2048)
    path = tmp_path / name
    path.write_text(json.dumps(replace(_run(), cost=cost).to_dict()), encoding="utf-8")
    return path


def test_compare_gives_each_timing_its_interval_and_no_p99_of_a_few_calls(
        tmp_path: Path) -> None:
    args = ["compare", str(TREC / "qrels.txt"), str(TREC / "run.txt"), str(TREC / "run.txt"),
            "-m", "RR"]
    res = CliRunner().invoke(app, [*args, "--cost-a", str(_timed(tmp_path, "a.json", 1.0, 400)),
                                   "--cost-b", str(_timed(tmp_path, "b.json", 1.5, 400))])
    assert res.exit_code == 0, res.output
    row = next(x for x in res.output.splitlines() if x.startswith("search latency p99"))
    assert "95 % interval ×" in row and "over 400 and 400 calls" in row
    assert "a busy machine alone can make a run up to ×2 slower" in res.output
    few = CliRunner().invoke(app, [*args, "--cost-a", str(_timed(tmp_path, "c.json", 1.0, 13)),
                                   "--cost-b", str(_timed(tmp_path, "d.json", 1.5, 9)),
                                   "--format", "json"])
    body = json.loads(few.output)
    assert "search_p99_ms" not in body["cost"] and "search_p50_ms" in body["cost"]
    assert body["cost_notes"][0] == ("search latency p99 (ms) not compared: not enough calls "
                                     "for a p99: 9 of 368 needed")
