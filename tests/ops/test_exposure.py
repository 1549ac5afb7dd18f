"""Exposure: each group of chunks' share of the top-K against its share of the corpus and of the
expected chunks, with bootstrap intervals over queries."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.cli import app
from recallwatch.errors import UsageError
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import Policy
from recallwatch.formats.results import RankedList
from recallwatch.ops.exposure import chunk_group, exposure
from recallwatch.records import Chunk
from recallwatch.stats import bootstrap_ci

CORPUS = [Chunk(id=f"a{i}", text="", domain="A", valid_from=date(2025, 1, i + 1))
          for i in range(6)] + [Chunk(id=f"b{i}", text="", domain="B",
                                      facets={"tema": "irpf"}) for i in range(4)]
# query: (expected, top-4)
RUNS = {"q1": (["b0"], ["a0", "a1", "a2", "b0"]),
        "q2": (["a0"], ["a0", "a1", "a2", "a3"]),
        "q3": (["b1"], ["a4", "a5", "b1", "b2"])}


def _run(runs: dict[str, tuple[list[str], list[str]]] = RUNS) -> GateResult:
    golden = GoldenSet.from_dict({"name": "g", "top_k": 4, "queries": [
        {"id": q, "text": q, "expected": e} for q, (e, _) in runs.items()]})
    results = {q: RankedList(top, np.linspace(0.9, 0.6, len(top)))
               for q, (_, top) in runs.items()}
    return run_gate(golden, results=results, policy=Policy(noise_ceiling=1.0))


def test_exposure_against_corpus_and_relevant_shares() -> None:
    rep = exposure(_run(), CORPUS, "domain")
    a, b = rep.groups
    assert (rep.k, rep.queries, rep.relevant_queries, rep.corpus_chunks) == (4, 3, 3, 10)
    assert (a.group, a.chunks, a.corpus_share) == ("A", 6, 0.6)
    # per query, A holds 3/4, 4/4 and 2/4 of the top-4; 0, 1 and 0 of the expected chunks
    assert a.exposure.value == pytest.approx(0.75) and b.exposure.value == pytest.approx(0.25)
    assert a.relevant_share == pytest.approx(1 / 3) and b.relevant_share == pytest.approx(2 / 3)
    assert a.vs_corpus.value == pytest.approx(0.15)
    assert a.vs_relevant is not None and a.vs_relevant.value == pytest.approx(0.75 - 1 / 3)
    # the intervals are the stats package's percentile bootstrap over the three queries
    shares = np.array([0.75, 1.0, 0.5])
    ci = bootstrap_ci(np.zeros(3), shares, method="percentile", n_resamples=5000)
    assert (a.exposure.low, a.exposure.high) == (ci.low, ci.high)
    paired = bootstrap_ci(np.array([0.0, 1.0, 0.0]), shares, method="percentile",
                          n_resamples=5000)
    assert (a.vs_relevant.low, a.vs_relevant.high) == (paired.low, paired.high)
    assert sum(g.exposure.value for g in rep.groups) == pytest.approx(1.0)


def test_results_outside_the_corpus_are_a_group_of_their_own() -> None:
    rep = exposure(_run({"q1": (["a0"], ["a0", "zz", "b0", "b1"])}), CORPUS, "domain")
    outside = {g.group: g for g in rep.groups}["(not in the corpus)"]
    assert (outside.chunks, outside.corpus_share, outside.exposure.value) == (0, 0.0, 0.25)


def test_chunk_fields_dates_by_year_and_facets() -> None:
    assert chunk_group(CORPUS[0], "valid_from") == "2025"
    assert chunk_group(CORPUS[-1], "valid_from") == "(none)"
    assert chunk_group(CORPUS[-1], "facets.tema") == "irpf"
    with pytest.raises(UsageError, match="unknown chunk field 'language'; valid: doc_id, domain"):
        chunk_group(CORPUS[0], "language")
    with pytest.raises(UsageError, match="the corpus holds no chunks"):
        exposure(_run(), [], "domain")


def _files(tmp_path: Path) -> tuple[Path, Path]:
    report = tmp_path / "run.json"
    report.write_text(json.dumps(_run().to_dict()), encoding="utf-8")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": c.id, "text": "t", "domain": c.domain}) + "\n"
                              for c in CORPUS), encoding="utf-8")
    return report, corpus


def test_groups_by_chunk_from_the_cli(tmp_path: Path) -> None:
    report, corpus = _files(tmp_path)
    result = CliRunner().invoke(app, ["history", "groups", str(report), "--by-chunk", "domain",
                                      "--corpus", str(corpus)])
    assert result.exit_code == 0, result.output
    assert "exposure by domain" in result.stdout and "corpus of 10 chunks" in result.stdout
    row = next(line for line in result.stdout.splitlines() if line.startswith("A "))
    assert row.split()[:6] == ["A", "6", "0.600", "0.333", "0.750", "[0.500,"]
    result = CliRunner().invoke(app, ["history", "groups", str(report), "--by-chunk", "domain",
                                      "--corpus", str(corpus), "--format", "json"])
    doc = json.loads(result.stdout)
    assert [g["group"] for g in doc["groups"]] == ["A", "B"]


@pytest.mark.parametrize(("args", "message"), [
    ([], "Error: give exactly one of --by (a query field) or --by-chunk (a chunk field)"),
    (["--by", "domain", "--by-chunk", "domain"],
     "Error: give exactly one of --by (a query field) or --by-chunk (a chunk field)"),
    (["--by-chunk", "domain"],
     "Error: --by-chunk needs the chunks: give exactly one of --store or --corpus"),
])
def test_groups_refuses_ambiguous_options(tmp_path: Path, args: list[str], message: str) -> None:
    report, _ = _files(tmp_path)
    result = CliRunner().invoke(app, ["history", "groups", str(report), *args])
    assert result.exit_code == 2
    assert result.stderr.strip() == message
