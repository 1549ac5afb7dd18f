"""``recallwatch.gate`` from Python and ``recallwatch gate`` from the command line are one
implementation: the same inputs give the same JSON, the same history rows (run ids and times
aside), the same judged@K and stale-set figures and the same report files; the source may be a
path, an opened store, or results in memory (a Run, a dict, a DataFrame); errors name the
parameters to a Python caller and the flags to a command's user."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import recallwatch as rw
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.golden import load_golden
from tests.clirun import cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
RUN_ID = re.compile(r"\b\d{8}T\d{6}Z-[0-9a-f]{6}\b")
VOLATILE = {"run_id", "created_at", "timings", "seq", "since_run", "since"}


def _results(tmp_path: Path, *, lose: str | None = None) -> Path:
    """Each query of the example's golden set finds its expected chunks under three fillers;
    the query ``lose`` finds none (STOP)."""
    golden = load_golden(KB / "golden.yaml")
    lines = []
    for q in golden.queries:
        ids = [f"filler_{i}" for i in range(3)] + ([] if q.id == lose else list(q.expected))
        lines.append(json.dumps({"query_id": q.id, "results": [
            {"id": c, "score": round(0.9 - 0.01 * i, 4)} for i, c in enumerate(ids)]}))
    path = tmp_path / f"results-{lose}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _judgments(tmp_path: Path) -> Path:
    path = tmp_path / "judgments.jsonl"
    golden = load_golden(KB / "golden.yaml")
    path.write_text("".join(json.dumps({"query_id": q.id, "id": "filler_0", "grade": 0,
                                        "judge": "t"}) + "\n" for q in golden.queries),
                    encoding="utf-8")
    return path


def _stable(value: Any) -> Any:
    """``value`` without what differs between two runs of the same inputs: ids and times (also
    where a text names an earlier run)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, str):
        return RUN_ID.sub("<run>", value)
    return value


def _history_rows(db: Path) -> list[dict[str, Any]]:
    import zlib

    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = []
    for run in con.execute("SELECT * FROM runs ORDER BY seq"):
        row = dict(run)
        packed = row.pop("result_zlib")
        row["result_json"] = json.loads(zlib.decompress(packed) if packed else
                                        row["result_json"])
        queries = [dict(q) for q in con.execute(
            "SELECT * FROM query_results WHERE run_id = ? ORDER BY query_id", (row["run_id"],))]
        rows.append(_stable({**row, "queries": queries}))
    con.close()
    return rows


def test_python_and_cli_give_the_same_json_history_and_reports(tmp_path: Path) -> None:
    judged = _judgments(tmp_path)
    runs = [_results(tmp_path), _results(tmp_path, lose="tipos_retencion")]
    cli_db, py_db = tmp_path / "cli.db", tmp_path / "py.db"
    for i, results in enumerate(runs):  # the second run is compared with the first
        code, out, err = cli("gate", str(KB / "golden.yaml"), "--results", str(results),
                             "--policy", str(KB / "policy.yaml"), "--history", str(cli_db),
                             "--judgments", str(judged), "--format", "json",
                             "--report", str(tmp_path / f"cli-report-{i}"))
        result = rw.gate(KB / "golden.yaml", results, KB / "policy.yaml", py_db,
                         judgments=[judged], report=tmp_path / f"py-report-{i}")
        assert code == result.exit_code, err
        assert _stable(json.loads(out)) == _stable(result.to_dict())
        assert result.judged is not None and result.staleness is not None
        assert (json.loads((tmp_path / f"cli-report-{i}" / "report.json").read_text())["verdict"]
                == result.verdict)
    assert [r["verdict"] for r in _history_rows(py_db)] == ["ACCEPT", "STOP"]
    assert _history_rows(cli_db) == _history_rows(py_db)
    assert result.comparison is not None and result.comparison["previous"] is not None


def test_results_in_memory_gate_as_the_results_file(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    path = _results(tmp_path, lose="tipos_retencion")
    from recallwatch.formats.results import load_results

    as_dict = {q: dict(zip(r.ids, r.scores.tolist(), strict=True))
               for q, r in load_results(path).items()}
    frame = pd.DataFrame([{"query_id": q, "doc_id": d, "score": s}
                          for q, hits in as_dict.items() for d, s in hits.items()])
    want = _stable(rw.gate(KB / "golden.yaml", path).to_dict())
    for given in (as_dict, rw.Run.from_dict(as_dict), frame):
        got = _stable(rw.gate(KB / "golden.yaml", given).to_dict())
        # the source is named in memory, not by the file
        assert got.pop("store") == {"results_file": "<results>"}
        assert {k: v for k, v in want.items() if k != "store"} == got


def test_bad_sources_and_parameters_say_what_is_expected(tmp_path: Path) -> None:
    golden = KB / "golden.yaml"
    with pytest.raises(UsageError, match=r"^source: expected a store URI, a results file, .*"
                                         r"found list$"):
        rw.gate(golden, [1, 2])
    with pytest.raises(InputError, match=r"record 'q1': expected a mapping \{doc_id: score\}, "
                                         r"found <list>"):
        rw.gate(golden, {"q1": ["a", "b"]})
    with pytest.raises(InputError, match=r"field 'latency_sample=': expected a number of "
                       r"search calls, 0 or more"):
        rw.gate(golden, _results(tmp_path), latency_sample=-1)
    with pytest.raises(UsageError, match=r"^runs_out= works on a pipeline"):
        rw.gate(golden, _results(tmp_path), runs_out=tmp_path / "runs")


def test_the_cli_names_its_flags_where_python_names_parameters(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("search:\n  filter: {domain: rrhh}\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"or give corpus=FILE to check failures"):
        rw.gate(KB / "golden.yaml", _results(tmp_path), policy)
    code, _, err = cli("gate", str(KB / "golden.yaml"), "--results", str(_results(tmp_path)),
                       "--policy", str(policy), "--no-history")
    assert code == 2 and "or give --corpus FILE to check failures" in err, err
