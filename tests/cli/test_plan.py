from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from recallwatch.bench.rates import measure_rates, save_rates
from recallwatch.cli import app


@pytest.fixture
def rates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "machine.json"
    save_rates(measure_rates(600, 16, queries=10, ef_construction=20), path)
    monkeypatch.setenv("RECALLWATCH_RATES", str(path))
    return path


def test_plan_shows_the_formulas_and_the_stored_rates(rates: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "plan", "--vectors", "100M", "--dim", "768"])
    assert result.exit_code == 0, result.output
    assert "n × d × 4 B" in result.stdout
    assert "= 100,000,000 × 768 × 4 B = 307.2 GB" in result.stdout
    assert f"from {rates}" in result.stdout
    result = CliRunner().invoke(app, ["bench", "plan", "--vectors", "1e8", "--dim", "768",
                                      "--dtype", "int8", "--index", "hnsw", "--m", "16",
                                      "--replicas", "3", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)["plan"]
    assert doc["vector_bytes"] == 76_800_000_000
    assert doc["params"] == {"M": 16, "efConstruction": 200, "efSearch": 64}
    assert doc["lines"][4]["value"] == 3 * doc["memory_bytes"]
    assert doc["qps_per_core"] > 0 and doc["build_core_seconds"] > 0


@pytest.mark.slow  # the default calibration: about ten seconds on a busy machine
def test_plan_measures_the_rates_when_none_are_stored(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "machine.json"
    result = CliRunner().invoke(app, ["bench", "plan", "--vectors", "1000", "--dim", "8", "--rates",
                                      str(path)])
    assert result.exit_code == 0, result.output
    assert f"wrote {path}" in result.stderr
    assert json.loads(path.read_text())["calibration"]["M"] == 16


def test_plan_check_reports_the_error_on_real_indexes(rates: Path) -> None:
    result = CliRunner().invoke(app, ["bench", "plan", "--vectors", "1M", "--dim", "16", "--index",
                                      "hnsw", "--check", "--check-vectors", "1000", "--dtype",
                                      "int8"])
    assert result.exit_code == 0, result.output
    assert "check against real indexes (error = (plan − real) / real):" in result.stdout
    assert "faiss" in result.stdout and "int8" in result.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["--vectors", "lots", "--dim", "8"], "Error: field '--vectors': expected a positive whole "
     "count such as 100M, 20k or 1e8, at most 9,223,372,036,854,775,807 (what a 64-bit vector id "
     "can number), found 'lots'"),
    (["--vectors", "10", "--dim", "8", "--dtype", "f64"],
     "Error: field '--dtype': expected f32 | f16 | int8 | binary, found 'f64'"),
    (["--vectors", "10", "--dim", "8", "--index", "lsh"],
     "Error: field '--index': expected flat | ivf | hnsw, found 'lsh'"),
])
def test_plan_refuses_bad_input_in_one_line(rates: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["bench", "plan", *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == message
