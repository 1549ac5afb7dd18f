"""The example's story does not change with the calendar: its chunks are valid until 2025-12-31,
and the golden set states the day it describes (``as_of``), so a gate run years later — the
clock moved with time-machine — gives the same verdict, reasons and diagnoses as one on that
day. Without ``as_of`` the same run blames the chunks' expired validity instead (the test would
catch the date leaking back in)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
import time_machine

from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import load_golden
from tests.clirun import wide_cli as cli

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
FAR = datetime(2041, 3, 15, 12, 0, tzinfo=UTC)  # years after every chunk's validity ended


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ranking of the example corpus for each query that buries the second expected chunk (and
    the only one of single-chunk queries) at rank 12, past K = 10, so that most queries fail
    and get a diagnosis read from the corpus' metadata."""
    golden = load_golden(KB / "golden.yaml")
    ids = [c.id for c in read_corpus(KB / "corpus_v1.jsonl")]
    lines = []
    for q in golden.queries:
        buried = q.expected[1] if len(q.expected) > 1 else q.expected[0]
        kept = [c for c in q.expected if c != buried]
        others = [c for c in ids if c not in q.expected][:11 - len(kept)]
        ranked = [*kept, *others, buried, *[c for c in ids if c not in others
                                           and c not in q.expected][:8]]
        lines.append(json.dumps({"query_id": q.id, "results": [
            {"id": c, "score": round(0.95 - 0.01 * i, 4)} for i, c in enumerate(ranked)]}))
    path = tmp_path_factory.mktemp("calendar") / "results.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def gate(golden: Path, results: Path, when: datetime, *extra: str) -> dict[str, Any]:
    with time_machine.travel(when, tick=False):
        assert date.today() == when.date()  # the clock the gate reads has moved
        code, out, err = cli("gate", str(golden), "--results", str(results), "--corpus",
                             str(KB / "corpus_v1.jsonl"), "--policy", str(KB / "policy.yaml"),
                             "--no-history", "--format", "json", *extra)
    assert code in (0, 1), err
    return json.loads(out)  # type: ignore[no-any-return]


def story(run: dict[str, Any]) -> dict[str, Any]:
    """What the run tells a reader: verdict, reasons, and each query's diagnoses."""
    return {"verdict": run["verdict"], "reasons": [r["message"] for r in run["reasons"]],
            "diagnosis": {q["id"]: [(d["cause"], d["chunk_id"], d["summary"])
                                    for d in q["diagnosis"]] for q in run["queries"]}}


def test_the_same_story_years_later(results: Path) -> None:
    golden = KB / "golden.yaml"
    assert load_golden(golden).as_of == date(2025, 6, 1)
    then = story(gate(golden, results, datetime(2025, 6, 1, 9, 0, tzinfo=UTC)))
    later = story(gate(golden, results, FAR))
    assert then["verdict"] == "STOP" and any(then["diagnosis"].values())
    assert later == then
    # --run-date still overrides the set's day
    assert story(gate(golden, results, FAR, "--run-date", "2025-06-01")) == then


def test_without_as_of_the_date_leaks_in(results: Path, tmp_path: Path) -> None:
    undated = tmp_path / "golden.yaml"
    undated.write_text("".join(line for line in (KB / "golden.yaml").read_text(
        encoding="utf-8").splitlines(keepends=True) if not line.startswith("as_of:")),
        encoding="utf-8")
    assert load_golden(undated).as_of is None
    then = story(gate(undated, results, datetime(2025, 6, 1, 9, 0, tzinfo=UTC)))
    later = story(gate(undated, results, FAR))
    assert later != then
    summaries = [s for ds in later["diagnosis"].values() for _, _, s in ds]
    assert any("validity ended 2025-12-31 (run date 2041-03-15)" in s for s in summaries)
    assert not any("validity ended" in s for ds in then["diagnosis"].values()
                   for _, _, s in ds)
