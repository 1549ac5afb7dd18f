"""Freshness in the gate: a tiny dated corpus whose answer is worked out by hand.

As of 2025-06-01 (the run date), with top K = 3:

* document ``tarifa`` has three versions: t2023 (2023, expired at the end of 2023), t2024 (2024,
  expired at the end of 2024) and t2025 (valid from 2025-01-01): t2025 is the newest valid one;
* document ``smi``: s2024 (from 2024-01-01, never expired) and s2025 (from 2025-01-01);
* document ``plazo`` has one version, and ``futuro``'s second version (2026) is not valid yet:
  neither is versioned on that day; ``u1`` has no dates.

Queries checked (the documents of their expected chunks are versioned):

* q_tarifa  [t2025, t2024, u1]  the newest first: fresh;
* q_smi     [s2024, s2025, u1]  an older version above the newest: stale;
* q_old     [t2024, u1, s2025]  expects the 2024 table; the newest (t2025) is not in the top 3:
  stale (q_old's s2025 is no concern: smi is not what it expects);
* q_none    [u1, s2025, p2025]  expects t2025 but no version of tarifa is in the top 3: a
  recall failure, counted apart (unreached), not in the share;
* q_plazo and q_futuro are not checked (no versioned document expected).

Freshness = 1 fresh of 3 checked = 1/3. Ages of the valid dated top-3 results, in days to
2025-06-01: t2025 151 (q_tarifa), s2024 517 (366 days of 2024 + 151) and s2025 151 (q_smi),
p2025 92 (q_plazo: March 31 + April 30 + May 31), s2025 151 (q_old), f2025 151 (q_futuro),
s2025 151 and p2025 92 (q_none): 8 ages, the median 151, the oldest 517. Expired in the top 3:
t2024 twice, t2023 once = 3; not yet valid: f2026 = 1; undated: u1 six times.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from recallwatch.acceptance.freshness import NOT_DATED, freshness_line
from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.records import Chunk, chunk_to_record
from recallwatch.report import md_escape
from recallwatch.report.markdown import to_markdown
from tests.clirun import cli

from .helpers import golden, ranked

AS_OF = date(2025, 6, 1)


def _chunk(cid: str, doc: str | None, start: str | None = None, end: str | None = None) -> Chunk:
    return Chunk(id=cid, text=f"text of {cid}", doc_id=doc,
                 valid_from=None if start is None else date.fromisoformat(start),
                 valid_to=None if end is None else date.fromisoformat(end))


CORPUS = [
    _chunk("t2023", "tarifa", "2023-01-01", "2023-12-31"),
    _chunk("t2024", "tarifa", "2024-01-01", "2024-12-31"),
    _chunk("t2025", "tarifa", "2025-01-01"),
    _chunk("s2024", "smi", "2024-01-01"),
    _chunk("s2025", "smi", "2025-01-01"),
    _chunk("p2025", "plazo", "2025-03-01"),
    _chunk("f2025", "futuro", "2025-01-01"),
    _chunk("f2026", "futuro", "2026-01-01"),
    _chunk("u1", None),
]
RANKED = {"q_tarifa": ["t2025", "t2024", "u1"], "q_smi": ["s2024", "s2025", "u1"],
          "q_old": ["t2024", "u1", "s2025"], "q_plazo": ["p2025", "t2023", "u1"],
          "q_futuro": ["f2026", "f2025", "u1"], "q_none": ["u1", "s2025", "p2025"]}
EXPECTED = {"q_tarifa": "t2025", "q_smi": "s2025", "q_old": "t2024", "q_plazo": "p2025",
            "q_futuro": "f2025", "q_none": "t2025"}
GOLDEN = golden(*({"id": q, "text": f"question {q}", "expected": [e]}
                  for q, e in EXPECTED.items()), top_k=3)
# no noise rule in the way, and q_none's recall failure waived: only freshness can stop these runs
WAIVER = "no version of the fact retrieved, on purpose: freshness does not count it"
POLICY = Policy(noise_ceiling=1.0, min_mean_quality=0.0, other_failures_allowed=0.2,
                waivers={"q_none": WAIVER})


def _results() -> dict[str, object]:
    return {q: ranked({cid: r for r, cid in enumerate(ids, 1)}, n=3) for q, ids in RANKED.items()}


def _gate(policy: Policy = POLICY, corpus: list[Chunk] = CORPUS):  # type: ignore[no-untyped-def]
    return run_gate(GOLDEN, results=_results(), corpus={c.id: c for c in corpus},  # type: ignore[arg-type]
                    policy=policy, run_date=AS_OF)


def test_freshness_on_a_dated_corpus_is_the_hand_computed_share_and_ages() -> None:
    f = _gate().freshness
    assert f is not None and f["measured"] is True
    assert (f["queries"], f["fresh"], f["share"]) == (3, 1, 1 / 3)
    assert f["stale_queries"] == ["q_smi", "q_old"] and f["unreached"] == ["q_none"]
    assert f["as_of"] == "2025-06-01" and f["scope"] == "expected"
    stale = {s["query"]: s["documents"][0] for s in f["stale"]}
    assert (stale["q_smi"]["older_id"], stale["q_smi"]["older_rank"],
            stale["q_smi"]["newest_id"], stale["q_smi"]["newest_rank"]) == ("s2024", 1, "s2025", 2)
    assert (stale["q_old"]["newest_rank"], stale["q_old"]["older_id"]) == (None, "t2024")
    r = f["results"]
    assert r["median_age_days"] == 151 and r["oldest_age_days"] == 517
    assert (r["valid"], r["expired"], r["not_yet_valid"], r["undated"]) == (8, 3, 1, 6)


def test_the_report_line_states_the_figures_and_the_stale_reason_names_the_versions() -> None:
    result = _gate(replace(POLICY, limits=replace(POLICY.limits, min_freshness=0.5)))
    assert result.verdict == "STOP"
    [reason] = [r for r in result.reasons if r.rule == "min_freshness"]
    assert reason.queries == ("q_smi", "q_old")
    assert reason.message.startswith(
        "freshness 0.333 is below 0.5: 2 of 3 queries whose facts have dated versions do not "
        "rank the newest valid one (as of 2025-06-01) above the older ones: q_smi (document "
        "smi: older version s2024 (valid from 2024-01-01) at rank 1, the newest version (valid "
        "from 2025-01-01) s2025 at rank 2)")
    assert ("q_old (document tarifa: older version t2024 (valid from 2024-01-01) at rank 1, the "
            "newest version (valid from 2025-01-01) is not in the top 3)") in reason.message
    line = freshness_line(result.freshness or {})
    assert line == ("freshness as of 2025-06-01: 1 of 3 queries rank the newest valid version of "
                    "their facts above the older ones (0.333); 1 query with no version of the "
                    "fact in the top K (not counted: a recall failure); the top-3 results' median "
                    "age 151 days (oldest 517) over 8 dated valid results; of the top-K results 3 "
                    "expired, 1 not yet valid, 6 undated")
    assert md_escape(line) in to_markdown(result)


def test_min_freshness_passes_at_or_under_the_share() -> None:
    result = _gate(replace(POLICY, limits=replace(POLICY.limits, min_freshness=0.3)))
    assert result.verdict == "ACCEPT"
    [check] = [c for c in result.checks if c.rule == "min_freshness"]
    assert (check.status, check.message) == ("pass", "freshness 0.333 >= 0.3 (1 of 3 queries)")


def test_without_dates_nothing_is_measured_and_the_rule_is_not_applied() -> None:
    undated = [replace(c, valid_from=None, valid_to=None) for c in CORPUS]
    result = _gate(replace(POLICY, limits=replace(POLICY.limits, min_freshness=0.9)),
                   corpus=undated)
    f = result.freshness or {}
    assert (f["measured"], f["share"], f["note"]) == (False, None, NOT_DATED)
    assert f["results"]["median_age_days"] is None
    assert freshness_line(f) == "freshness: no dated chunks: freshness not measured"
    assert result.verdict == "ACCEPT"
    [check] = [c for c in result.checks if c.rule == "min_freshness"]
    assert (check.status, check.message) == (
        "not applied", "no dated chunks: freshness not measured (min_freshness 0.9)")
    assert md_escape("freshness: no dated chunks: freshness not measured") in to_markdown(result)


def test_gate_command_stops_on_min_freshness(tmp_path: Path) -> None:
    (tmp_path / "golden.json").write_text(json.dumps({
        "name": "t", "version": "1", "top_k": 3,
        "queries": [{"id": q, "text": f"question {q}", "expected": [e]}
                    for q, e in EXPECTED.items()]}), encoding="utf-8")
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps(chunk_to_record(c)) + "\n" for c in CORPUS), encoding="utf-8")
    (tmp_path / "results.jsonl").write_text("".join(
        json.dumps({"query_id": q, "results": [{"id": c, "score": 0.9 - 0.1 * i}
                                               for i, c in enumerate(ids)]}) + "\n"
        for q, ids in RANKED.items()), encoding="utf-8")
    (tmp_path / "policy.yaml").write_text(
        "noise_ceiling: 1.0\nmin_freshness: 0.5\nmin_mean_quality: 0\n"
        f"other_failures_allowed: 0.2\nwaivers: {{q_none: '{WAIVER}'}}\n", encoding="utf-8")
    assert load_policy(tmp_path / "policy.yaml").limits.min_freshness == 0.5
    code, out, err = cli("gate", str(tmp_path / "golden.json"),
                         "--results", str(tmp_path / "results.jsonl"),
                         "--corpus", str(tmp_path / "corpus.jsonl"),
                         "--policy", str(tmp_path / "policy.yaml"), "--run-date", "2025-06-01",
                         "--no-history", "--format", "json")
    assert code == 1, err
    data = json.loads(out)
    assert data["freshness"]["share"] == 1 / 3
    assert [r["rule"] for r in data["reasons"]] == ["min_freshness"]


def test_a_bad_min_freshness_is_located(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("golden.json").write_text(json.dumps({"name": "t", "version": "1", "queries": [
        {"id": "q", "text": "question", "expected": ["t2025"]}]}), encoding="utf-8")
    Path("policy.yaml").write_text("top_k: 3\nmin_freshness: 1.5\n", encoding="utf-8")
    code, _, err = cli("gate", "golden.json", "--results", "r.jsonl", "--policy", "policy.yaml",
                       "--no-history")
    assert code == 2
    assert err == ("Error: policy.yaml:1: field 'min_freshness': expected a number in [0, 1], "
                   "found 1.5\n")
