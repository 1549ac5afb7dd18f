"""With a tune/test split the gate's verdict comes from the test queries and says so; the
calibrations use the tune queries and refuse the test ones (the example knowledge base, its
results written as a results file: any search system's output)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.golden import load_golden
from recallwatch.formats.policy import load_policy
from recallwatch.ops.calibrate import calibrate_noise, tuning_part
from recallwatch.report.markdown import to_markdown
from tests.clirun import cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


@pytest.fixture
def split_kb(tmp_path: Path) -> Path:
    golden = Path(shutil.copy(KB / "golden.yaml", tmp_path / "golden.yaml"))
    assert cli("golden", "split", str(golden), "--test-share", "0.3", "--stratify", "domain",
               "--seed", "7")[0] == 0
    return golden


def write_results(path: Path, golden: Path, bury: set[str]) -> Path:
    """Every query finds its expected chunks at ranks 1…, except the ``bury`` queries, whose
    expected chunks are pushed out of the top 10."""
    lines = []
    for q in load_golden(golden).queries:
        start = 12 if q.id in bury else 1
        ids = [f"{q.id}_filler_{i}" for i in range(1, start)] + list(q.expected)
        ids += [f"{q.id}_other_{i}" for i in range(20 - len(ids))]
        lines.append(json.dumps({"query_id": q.id, "results": [
            {"id": c, "score": round(0.9 - 0.01 * r, 4)} for r, c in enumerate(ids)]}))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_verdict_comes_from_the_test_queries(split_kb: Path, tmp_path: Path) -> None:
    g = load_golden(split_kb)
    tune = [q.id for q in g.queries if q.split == "tune"]
    test = [q.id for q in g.queries if q.split == "test"]
    policy = str(KB / "policy.yaml")
    # Failures among the tune queries only: they are not scored, the gate accepts.
    res = write_results(tmp_path / "r1.jsonl", split_kb, set(tune[:5]))
    code, out, err = cli("gate", str(split_kb), "--results", str(res), "--policy", policy,
                         "--no-history", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["split"] == {"scored": "test", "tune": 55, "test": 23, "unassigned": 0}
    assert sorted(q["id"] for q in data["queries"]) == sorted(test)
    assert data["aggregate"]["n_queries"] == 23
    # One failing test query: STOP.
    res = write_results(tmp_path / "r2.jsonl", split_kb, {test[0]})
    code, out, _ = cli("gate", str(split_kb), "--results", str(res), "--policy", policy,
                       "--no-history")
    assert code == 1
    assert "verdict computed on the 23 test queries of 78 (the 55 tune queries are not" in out
    result = GateResult.from_dict(data)
    assert result.split == data["split"]  # the JSON reads back
    assert "Verdict computed on the 23 test queries of 78" in to_markdown(result)


def test_without_a_split_nothing_changes(tmp_path: Path) -> None:
    res = write_results(tmp_path / "r.jsonl", KB / "golden.yaml", set())
    code, out, _ = cli("gate", str(KB / "golden.yaml"), "--results", str(res), "--policy",
                       str(KB / "policy.yaml"), "--no-history", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["split"] is None and data["aggregate"]["n_queries"] == 78
    assert data["staleness"] is None


def test_unassigned_queries_are_named(split_kb: Path, tmp_path: Path) -> None:
    text = split_kb.read_text(encoding="utf-8").replace("    split: tune\n", "", 3)
    split_kb.write_text(text, encoding="utf-8")
    res = write_results(tmp_path / "r.jsonl", split_kb, set())
    _, out, _ = cli("gate", str(split_kb), "--results", str(res), "--policy",
                    str(KB / "policy.yaml"), "--no-history", "--format", "json")
    data = json.loads(out)
    assert data["split"]["unassigned"] == 3
    assert any("3 queries have no split" in w for w in data["warnings"])


def test_calibration_uses_tune_and_refuses_test(split_kb: Path, tmp_path: Path) -> None:
    g = load_golden(split_kb)
    assert {q.split for q in tuning_part(g).queries} == {"tune"}
    assert tuning_part(load_golden(KB / "golden.yaml")).queries == \
        load_golden(KB / "golden.yaml").queries  # no split: all
    with pytest.raises(UsageError, match="refused"):
        tuning_part(g, "test")
    # a gate run scored on test cannot feed a noise calibration
    res_path = write_results(tmp_path / "r.jsonl", split_kb, set())
    from recallwatch.formats.results import load_results

    scored_on_test = run_gate(g, results=load_results(res_path),
                              policy=load_policy(KB / "policy.yaml"))
    with pytest.raises(UsageError, match="'test' queries is refused"):
        calibrate_noise(scored_on_test)
    # the CLI: --split test is exit 2 with one line; the default calibrates on tune
    code, _, err = cli("ops", "calibrate-noise", str(split_kb), "--results", str(res_path),
                       "--split", "test")
    assert code == 2 and err.count("\n") == 1 and "held out" in err
    code, out, err = cli("ops", "calibrate-noise", str(split_kb), "--results", str(res_path),
                         "--format", "json")
    assert code == 0, err
    d = json.loads(out)  # the 55 healthy tune queries: used, in too small a domain, or left out
    assert len(d["unmeasured"]) + sum(d["too_few"].values()) + sum(
        x["healthy"] for x in d["domains"]) == 55


def test_a_split_without_tune_queries_cannot_be_calibrated(tmp_path: Path) -> None:
    f = tmp_path / "g.yaml"
    f.write_text("name: g\nqueries:\n  - id: a\n    text: t\n    expected: [x]\n"
                 "    split: test\n", encoding="utf-8")
    with pytest.raises(InputError, match="split: tune"):
        tuning_part(load_golden(f))
