"""Team-draft multileaving and per-user interleaving on simulated users (fixed seeds): the lists
respect each ranker's order and share turns fairly; under the null (rankers of equal quality)
the false-positive rate stays at the nominal level; a better ranker is found."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from recallwatch.online import score_interleaving
from recallwatch.online.log import Impression
from recallwatch.online.multileave import score_multileaving, team_draft_multileave
from recallwatch.online.simulate import make_collection, simulate_clicks
from tests.clirun import wide_cli

ALPHA = 0.05


def test_multileaved_lists_follow_each_ranker_and_share_turns() -> None:
    rankings = [list(range(10)), list(range(9, -1, -1)), [5, 3, 8, 1, 0, 2, 9, 4, 6, 7]]
    rng = np.random.default_rng(0)
    picks = team_draft_multileave(rankings, 9, rng)
    assert len(picks) == 9 and len({p.id for p in picks}) == 9
    counts = {t: sum(p.team == t for p in picks) for t in "ABC"}
    assert counts == {"A": 3, "B": 3, "C": 3}
    for i, team in enumerate("ABC"):
        # each team's picks come in its own ranking's order
        own = [p.id for p in picks if p.team == team]
        assert own == sorted(own, key=rankings[i].index)
    again = team_draft_multileave(rankings, 9, np.random.default_rng(0))
    assert again == picks


def _impressions(rankers: list[np.ndarray], col_grades: np.ndarray, n: int, seed: int,
                 users: int = 0) -> Iterator[Impression]:
    rng = np.random.default_rng(seed)
    names = [chr(ord("A") + i) for i in range(len(rankers))]
    queries = rng.integers(col_grades.shape[0], size=n)
    lists = [team_draft_multileave([r[q].tolist() for r in rankers], 10, rng, names)
             for q in queries.tolist()]
    grades = np.array([col_grades[q][[p.id for p in picks]] for q, picks in zip(queries, lists)])
    clicks = simulate_clicks(grades, rng, user="cascade")  # one vectorised draw for all
    who = rng.integers(max(users, 1), size=n)
    for i, (q, picks) in enumerate(zip(queries.tolist(), lists)):
        yield Impression(line=i + 1, query_id=f"q{q}", query=None,
                         shown=tuple(f"d{p.id}" for p in picks),
                         click_positions=tuple(int(r) + 1 for r in np.flatnonzero(clicks[i])),
                         user=f"u{who[i]}" if users else None,
                         teams=tuple(p.team for p in picks))


def _mc(sims: int) -> float:
    return 3 * math.sqrt(ALPHA * (1 - ALPHA) / sims)


@pytest.mark.parametrize(("by", "sims"), [
    ("impression", 60), ("user", 60),
    pytest.param("impression", 500, marks=pytest.mark.slow),
    pytest.param("user", 500, marks=pytest.mark.slow),
])
def test_multileaving_null_case_false_positive_rate(by: str, sims: int) -> None:
    """Three rankers that are the same ranker: whatever the clicks, no pair should differ."""
    col = make_collection(30, 15, seed=2)
    same = col.ranking(1.0, seed=3)
    rejected = 0
    for s in range(sims):
        result = score_multileaving(_impressions([same, same, same], col.grades, 150, s,
                                                 users=40 if by == "user" else 0),
                                    by=by)  # type: ignore[arg-type]
        rejected += any(p.p_value_holm < ALPHA for p in result.pairs)
    assert rejected / sims <= ALPHA + _mc(sims), rejected


def test_multileaving_finds_the_better_ranker() -> None:
    col = make_collection(30, 15, seed=2)
    good, bad = col.ranking(0.2, seed=4), col.ranking(3.0, seed=5)
    result = score_multileaving(_impressions([good, bad, bad], col.grades, 800, 9))
    winners = {(p.first, p.second): p.winner(ALPHA) for p in result.pairs}
    assert winners[("A", "B")] == "A" and winners[("A", "C")] == "A"
    assert winners[("B", "C")] is None


@pytest.mark.parametrize("sims", [60, pytest.param(500, marks=pytest.mark.slow)])
def test_per_user_interleaving_null_and_power(sims: int) -> None:
    col = make_collection(30, 15, seed=6)
    same = col.ranking(1.0, seed=7)
    rejected = 0
    for s in range(sims):
        r = score_interleaving(_impressions([same, same], col.grades, 150, 100 + s, users=30),
                               by="user")
        rejected += r.p_value < ALPHA
        assert r.units <= 30 and r.wins_a + r.wins_b + r.ties == r.units
    assert rejected / sims <= ALPHA + _mc(sims), rejected
    good, bad = col.ranking(0.2, seed=8), col.ranking(3.0, seed=9)
    r = score_interleaving(_impressions([bad, good], col.grades, 1500, 1, users=150), by="user")
    assert r.winner == "B" and r.by == "user"


def test_cli_scores_a_multileaved_log_per_pair(tmp_path: Path) -> None:
    col = make_collection(30, 15, seed=2)
    good, bad = col.ranking(0.2, seed=4), col.ranking(3.0, seed=5)
    lines = []
    for imp in _impressions([good, bad, bad], col.grades, 600, 9, users=60):
        lines.append(json.dumps({
            "query_id": imp.query_id, "user": imp.user,
            "shown": [{"id": d, "team": t} for d, t in zip(imp.shown, imp.teams or ())],
            "clicks": [{"id": imp.shown[p - 1]} for p in imp.click_positions]}))
    log = tmp_path / "multi.jsonl"
    log.write_text("\n".join(lines) + "\n")
    code, out, err = wide_cli("online", "interleave", str(log), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["rankers"] == ["A", "B", "C"] and len(data["pairs"]) == 3
    assert data["pairs"][0]["winner"] == "A" and data["by"] == "impression"
    code, out, _ = wide_cli("online", "interleave", str(log), "--per", "user")
    assert code == 0 and "multileaving of 3 rankers" in out and "by user (60)" in out
    assert "A vs B: wins" in out and "A is better" in out
