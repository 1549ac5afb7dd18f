"""`recallwatch gate --log`: the stale-set warning through the command line, on the example
knowledge base's golden set, against its own users' questions and against off-topic ones. A
warning only: the verdict and the exit code stay the gate's."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.formats.golden import load_golden
from tests.judgments.query_logs import write_interaction_log, write_query_list

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
runner = CliRunner()

# What users of another search ask: English questions on cooking, astronomy and cars.
OFF_TOPIC = [
    "how long do I bake sourdough bread at 230 degrees", "best way to caramelise onions",
    "why is the sky blue during the day", "distance from the earth to the moon in km",
    "how often should I change the oil in a diesel car", "what tyre pressure for a small car",
    "recipe for a vegan chocolate cake", "how many moons does jupiter have",
    "when is the next total solar eclipse", "how to sharpen a kitchen knife",
]


def _gate(tmp_path: Path, log: Path) -> tuple[int, dict[str, object]]:
    golden = load_golden(KB / "golden.yaml")
    results = tmp_path / "results.jsonl"  # every query finds its expected chunks: ACCEPT
    results.write_text("".join(
        json.dumps({"query_id": q.id, "results": [{"id": c, "score": 0.9} for c in q.expected]})
        + "\n" for q in golden.queries), encoding="utf-8")
    r = runner.invoke(app, ["gate", str(KB / "golden.yaml"), "--results", str(results),
                            "--log", str(log), "--no-history", "--format", "json"])
    return r.exit_code, json.loads(r.stdout)


def test_gate_log_warns_when_users_ask_about_something_else(tmp_path: Path) -> None:
    golden = load_golden(KB / "golden.yaml")
    own = tmp_path / "own.jsonl"
    write_interaction_log(own, [(q.text, q.domain) for q in golden.queries], total=400, seed=1)
    code, out = _gate(tmp_path, own)
    assert code == 0 and out["verdict"] == "ACCEPT"
    staleness = out["staleness"]
    assert isinstance(staleness, dict) and staleness["stale"] is False
    assert not any("centroid distance" in w for w in out["warnings"])  # type: ignore[attr-defined]

    other = tmp_path / "other.jsonl"
    write_query_list(other, [(t, None) for t in OFF_TOPIC], total=200, seed=2)
    code, out = _gate(tmp_path, other)
    assert code == 0 and out["verdict"] == "ACCEPT"  # a warning never changes the verdict
    staleness = out["staleness"]
    assert isinstance(staleness, dict) and staleness["stale"] is True
    log = staleness["log"]
    assert log["centroid_distance"] > log_limit(staleness)  # the figure behind the warning
    [line] = [w for w in out["warnings"] if "centroid distance" in w]  # type: ignore[attr-defined]
    assert f"centroid distance {log['centroid_distance']:.3f}" in line
    assert f"topic coverage {log['topic_coverage']:.0%}" in line


def log_limit(staleness: dict[str, object]) -> float:
    settings = staleness["settings"]
    assert isinstance(settings, dict)
    return float(settings["max_centroid_distance"])
