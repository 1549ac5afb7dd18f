"""Team-draft interleaving: the construction's invariants, the scoring, and a known winner."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from recallwatch.errors import InputError
from recallwatch.online import InteractionLog, score_interleaving, team_draft
from recallwatch.online.log import parse_line
from recallwatch.online.simulate import make_collection, simulate_interleaved_log

rankings = st.lists(st.integers(0, 30), unique=True, max_size=15)


@settings(max_examples=200, deadline=None)
@given(a=rankings, b=rankings, k=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_team_draft_invariants(a: list[int], b: list[int], k: int, seed: int) -> None:
    picks = team_draft(a, b, k, np.random.default_rng(seed))
    ids = [p.id for p in picks]
    assert len(ids) == len(set(ids)) == min(k, len(set(a) | set(b)))
    for team, ranking in (("A", a), ("B", b)):
        mine = [p.id for p in picks if p.team == team]
        assert all(x in ranking for x in mine)
        # each pick is the team's best result not yet in the list when it was picked
        for i, p in enumerate(picks):
            if p.team == team:
                best = next(x for x in ranking if x not in ids[:i])
                assert p.id == best
    # teams stay balanced while both still have results to give
    n_a = sum(p.team == "A" for p in picks)
    n_b = len(picks) - n_a
    if len(set(a) - set(ids)) and len(set(b) - set(ids)):
        assert abs(n_a - n_b) <= 1
    # same seed, same list
    assert team_draft(a, b, k, np.random.default_rng(seed)) == picks


def test_coin_decides_who_starts_each_round() -> None:
    starts = {team_draft([1, 2], [3, 4], 2, np.random.default_rng(s))[0].team for s in range(20)}
    assert starts == {"A", "B"}
    # identical rankings: the top result goes to whoever starts, and both teams share the list
    picks = team_draft(["x", "y", "z", "w"], ["x", "y", "z", "w"], 4, np.random.default_rng(0))
    assert [p.id for p in picks] == ["x", "y", "z", "w"]
    assert sorted(p.team for p in picks) == ["A", "A", "B", "B"]


def _imp(line: int, teams: str, clicks: list[int]) -> object:
    shown = [{"id": f"d{i}", "team": t} for i, t in enumerate(teams)]
    return parse_line(json.dumps({"query_id": "q", "shown": shown,
                                  "clicks": [{"id": f"d{i}"} for i in clicks]}), line=line)


def test_scoring_by_hand() -> None:
    impressions = [
        _imp(1, "ABAB", [0]),        # A wins
        _imp(2, "ABAB", [1, 3]),     # B wins 2-0
        _imp(3, "ABAB", [0, 1]),     # tie 1-1
        _imp(4, "BABA", []),         # tie 0-0
        _imp(5, "BABA", [0, 0, 2]),  # B wins: a result clicked twice counts once
    ]
    r = score_interleaving(impressions)  # type: ignore[arg-type]
    assert (r.impressions, r.wins_a, r.wins_b, r.ties) == (5, 1, 2, 2)
    assert (r.clicks_a, r.clicks_b) == (2, 5)
    assert r.p_value == pytest.approx(binomtest(2, 3, 0.5).pvalue)
    assert r.winner is None and r.delta == pytest.approx(1 / 5)
    d = r.to_dict()
    assert d["wins"] == {"A": 1, "B": 2, "ties": 2} and d["winner"] is None


def test_a_better_ranker_wins_and_equal_rankers_do_not(tmp_path: Path) -> None:
    col = make_collection(100, 20, seed=3, bias_scale=1.0)
    weak, strong = col.ranking(2.0, seed=1), col.ranking(0.5, seed=2)
    path = tmp_path / "il.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in simulate_interleaved_log(
        col, weak, strong, 3000, seed=4)))
    r = score_interleaving(InteractionLog(path))
    assert r.winner == "B" and r.p_value < 1e-6
    same = tmp_path / "same.jsonl"
    same.write_text("".join(json.dumps(x) + "\n" for x in simulate_interleaved_log(
        col, weak, weak, 3000, seed=5)))
    assert score_interleaving(InteractionLog(same)).winner is None


def test_an_impression_without_teams_is_located(tmp_path: Path) -> None:
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        json.dumps({"query_id": "q1", "shown": [{"id": "a", "team": "A"}], "clicks": []}) + "\n"
        + json.dumps({"query_id": "q2", "shown": [{"id": "a"}], "clicks": []}) + "\n")
    with pytest.raises(InputError) as err:
        score_interleaving(InteractionLog(path), source=str(path))
    assert str(err.value) == (
        f"{path}:2: record 'q2': field 'shown[].team': expected an interleaved impression "
        "(team A or B on every shown result; the rankers' names when multileaving), found "
        "<no team>")
