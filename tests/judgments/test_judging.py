"""A judge's judgments file (grade, replace, undo, resume), agreement between two judges checked
against scikit-learn, export to qrels and merge into the example golden set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch.errors import InputError, UsageError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.judging import read_judgment_records, read_queue
from recallwatch.judgments.judging import (
    JudgmentLog,
    judges_agreement,
    load_judgments,
    merge_into_golden,
    resolve,
)
from recallwatch.judgments.judgments import Judgment, read_judgments

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def test_log_grades_replaces_undoes_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    log = JudgmentLog(path, "ana")
    log.grade("q1", "c1", 3)
    log.grade("q1", "c2", 0)
    log.grade("q1", "c1", 2)  # a second grade of a pair replaces the first
    assert log.grades() == {("q1", "c1"): 2, ("q1", "c2"): 0}
    records = read_judgment_records(path)
    assert [(r["id"], r["grade"], r["judge"], r["source"]) for r in records] == [
        ("c2", 0, "ana", "human"), ("c1", 2, "ana", "human")]
    assert all(r["at"].endswith("Z") for r in records)
    undone = log.undo()
    assert undone is not None and undone["id"] == "c1"
    # another judge on the same file keeps their lines; a new session resumes from the file
    other = JudgmentLog(path, "ben")
    other.grade("q1", "c1", 1)
    again = JudgmentLog(path, "ana")
    assert again.grades() == {("q1", "c2"): 0}
    assert other.grades() == {("q1", "c1"): 1}
    assert again.undo() is not None and again.undo() is None
    assert JudgmentLog(path, "ben").grades() == {("q1", "c1"): 1}
    with pytest.raises(UsageError):
        again.grade("q1", "c3", 4)
    with pytest.raises(UsageError):
        JudgmentLog(path, " ")


def test_judgments_file_errors_are_located(tmp_path: Path) -> None:
    bad = tmp_path / "j.jsonl"
    bad.write_text('{"query_id": "q1", "id": "c1", "grade": 2}\n'
                   '{"query_id": "q1", "id": "c2", "grade": 5}\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"j\.jsonl:2: record 'q1 / c2': field 'grade': "
                                         r"expected an integer in \[0, 3\], found 5"):
        read_judgments(bad)
    bad.write_text('{"query_id": "q1", "id": "c1", "grade": 2, "jugde": "x"}\n')
    with pytest.raises(InputError, match=r"unknown key.*judge"):
        read_judgments(bad)
    queue = tmp_path / "q.jsonl"
    queue.write_text('{"query_id": "q", "query": "x", "id": "c", "text": "t"}\n' * 2)
    with pytest.raises(InputError, match=r"q\.jsonl:2: record 'q / c': pair listed twice"):
        read_queue(queue)


def _two_judges() -> list[Judgment]:
    a = [3, 2, 2, 0, 1, 3, 0, 2, 1, 0, 3, 2]
    b = [3, 1, 2, 0, 2, 3, 1, 2, 1, 0, 2, 2]
    return ([Judgment("q", f"c{i}", g, "human", judge="ana") for i, g in enumerate(a)]
            + [Judgment("q", f"c{i}", g, "human", judge="ben") for i, g in enumerate(b)]
            + [Judgment("q", "only-ana", 1, "human", judge="ana")])


@pytest.mark.parametrize("weights", ["quadratic", "linear", "unweighted"])
def test_kappa_between_judges_matches_scikit_learn(weights: str) -> None:
    from sklearn.metrics import cohen_kappa_score

    js = _two_judges()
    result = judges_agreement(js, weights=weights)  # type: ignore[arg-type]
    a = [j.grade for j in js if j.judge == "ana" and j.id != "only-ana"]
    b = [j.grade for j in js if j.judge == "ben"]
    reference = cohen_kappa_score(a, b, weights=None if weights == "unweighted" else weights)
    assert result.agreement is not None
    assert result.agreement.kappa == pytest.approx(reference, abs=1e-12)
    assert result.agreement.n == 12 and result.only == {"ana": 1, "ben": 0}
    assert [(d[1], d[2], d[3]) for d in result.disagreements] == [
        ("c1", 2, 1), ("c10", 3, 2), ("c4", 1, 2), ("c6", 0, 1)]


def test_agreement_needs_two_named_judges() -> None:
    js = _two_judges()
    with pytest.raises(UsageError, match="two judges"):
        judges_agreement([j for j in js if j.judge == "ana"])
    with pytest.raises(UsageError, match="no judgments by 'eve'"):
        judges_agreement(js, ["ana", "eve"])


def test_qrels_files_are_judges_named_by_their_file(tmp_path: Path) -> None:
    (tmp_path / "a.qrels").write_text("q 0 c1 2\nq 0 c2 0\n")
    (tmp_path / "b.qrels").write_text("q 0 c1 2\nq 0 c2 1\n")
    result = judges_agreement(load_judgments([tmp_path / "a.qrels", tmp_path / "b.qrels"]))
    assert result.judges == ("a.qrels", "b.qrels") and len(result.disagreements) == 1


def test_resolve_lets_the_later_file_win() -> None:
    js = _two_judges()
    final, overridden = resolve(js)
    grades = final.grades()
    assert grades[("q", "c1")] == 1 and grades[("q", "only-ana")] == 1  # ben came later
    assert overridden == 4 and len(grades) == 13


def test_merge_adds_relevant_chunks_and_keeps_every_expected_one() -> None:
    golden = load_golden(KB / "golden.yaml")
    q = golden.queries[0]
    grades = {(q.id, "new_chunk"): 3, (q.id, "weak_chunk"): 1, (q.id, q.expected[0]): 0,
              ("not-a-query", "x"): 2}
    merged, report = merge_into_golden(golden.to_dict(), grades)
    again = GoldenSet.from_dict(merged)
    assert again.queries[0].expected == (*q.expected, "new_chunk")
    assert again.queries[1:] == golden.queries[1:]
    assert report["expected_judged_below"] == [{"query_id": q.id, "id": q.expected[0],
                                                "grade": 0}]
    assert report["relevant_for_queries_not_in_the_set"] == 1
    assert json.dumps(report)  # the CLI prints it as JSON
    with pytest.raises(UsageError):
        merge_into_golden(golden.to_dict(), grades, min_grade=0)
