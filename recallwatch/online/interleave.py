"""Team-draft interleaving: two rankers compared inside the same result list.

Instead of splitting users between ranker A and ranker B (an A/B test), every user gets one list
that mixes both (Radlinski, Kurup & Joachims 2008): like two captains picking teams, A and B take
turns (a coin decides who goes first in each round) adding their best result not yet in the list,
and each shown result remembers the team that brought it. The ranker whose results get more
clicks in an impression wins it. Because both rankers are judged by the same user on the same
query at the same moment, the comparison is free of the between-user noise an A/B test must
average away, which is why it needs far fewer impressions (benchmarks/online_bench.py measures
how many fewer on simulated users).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from recallwatch.errors import InputError, UsageError

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.online.log import Impression

__all__ = ["By", "InterleaveResult", "Pick", "score_interleaving", "sign_test", "team_credit",
           "team_draft", "unit_key"]

T = TypeVar("T", bound=Hashable)
Team = Literal["A", "B"]
By = Literal["impression", "user"]


@dataclass(frozen=True, slots=True)
class Pick(Generic[T]):
    """One result of an interleaved list and the team (ranker) that contributed it: "A" or "B"
    when interleaving two rankers, the ranker's name when multileaving more."""

    id: T
    team: str


def team_draft(ranking_a: Sequence[T], ranking_b: Sequence[T], k: int,
               rng: np.random.Generator) -> list[Pick[T]]:
    """One team-draft interleaving of two rankings, at most ``k`` results long.

    The team with fewer picks so far picks next; when both have as many, ``rng`` flips the coin.
    A team picks its highest-ranked result not yet in the list; a team with nothing left to give
    passes its turn. Deterministic for a seeded ``rng``.
    """
    if k < 0:
        raise UsageError(f"k must be >= 0, got {k}")
    chosen: set[T] = set()
    out: list[Pick[T]] = []
    pos = {"A": 0, "B": 0}
    count = {"A": 0, "B": 0}
    lists: dict[Team, Sequence[T]] = {"A": ranking_a, "B": ranking_b}

    def next_of(team: Team) -> T | None:
        ranking = lists[team]
        while pos[team] < len(ranking) and ranking[pos[team]] in chosen:
            pos[team] += 1
        return ranking[pos[team]] if pos[team] < len(ranking) else None

    while len(out) < k:
        first: Team
        if count["A"] != count["B"]:
            first = "A" if count["A"] < count["B"] else "B"
        else:
            first = "A" if rng.integers(2) == 0 else "B"
        second: Team = "B" if first == "A" else "A"
        for team in (first, second):
            item = next_of(team)
            if item is not None:
                chosen.add(item)
                out.append(Pick(item, team))
                count[team] += 1
                break
        else:
            break  # both rankings exhausted
    return out


@dataclass(frozen=True)
class InterleaveResult:
    """Outcome of an interleaving experiment: impressions won by A, by B, and ties."""

    impressions: int
    wins_a: int
    wins_b: int
    ties: int
    clicks_a: int
    clicks_b: int
    p_value: float
    alpha: float
    by: By = "impression"  # what a win counts: an impression, or a user (their impressions summed)
    units: int = 0  # users when by user, else impressions

    @property
    def winner(self) -> Team | None:
        """The ranker that won significantly more impressions (sign test at ``alpha``)."""
        if self.p_value >= self.alpha or self.wins_a == self.wins_b:
            return None
        return "A" if self.wins_a > self.wins_b else "B"

    @property
    def delta(self) -> float:
        """(wins B − wins A) / units: > 0 means users preferred B (Chapelle et al. 2012)."""
        units = self.units or self.impressions
        return (self.wins_b - self.wins_a) / units if units else 0.0

    def to_dict(self) -> dict[str, Any]:
        decided = self.wins_a + self.wins_b
        return {
            "impressions": self.impressions,
            "wins": {"A": self.wins_a, "B": self.wins_b, "ties": self.ties},
            "p_value": self.p_value,
            "winner": self.winner,
            "alpha": self.alpha,
            "delta": self.delta,
            "preference_b": self.wins_b / decided if decided else None,
            "clicks": {"A": self.clicks_a, "B": self.clicks_b},
            "by": self.by,
            "units": self.units or self.impressions,
            "test": f"two-sided binomial sign test on {self.by}s won (ties left out)"
                    + ("; a user is won by the ranker that won more of their impressions"
                       if self.by == "user" else ""),
        }


def sign_test(wins_a: int, wins_b: int) -> float:
    """Two-sided exact binomial test that A and B win equally often (ties left out); 1 when
    nothing was decided."""
    from scipy.stats import binomtest

    n = wins_a + wins_b
    return 1.0 if n == 0 else float(binomtest(wins_b, n, 0.5).pvalue)


def team_credit(imp: Impression, source: str) -> dict[str, int]:
    """Clicked results per team of one interleaved impression (each clicked result once)."""
    if imp.teams is None:
        raise InputError(source=source, line=imp.line, record=imp.query_id,
                         field="shown[].team",
                         expected="an interleaved impression (team A or B on every shown "
                         "result; the rankers' names when multileaving)",
                         found="<no team>")
    credit = dict.fromkeys(imp.teams, 0)
    for p in set(imp.click_positions):
        credit[imp.teams[p - 1]] += 1
    return credit


def unit_key(imp: Impression, by: By, source: str) -> str | None:
    """The user an impression's win counts for (None when counting impressions)."""
    if by == "impression":
        return None
    if imp.user is None:
        raise InputError(source=source, line=imp.line, record=imp.query_id, field="user",
                         expected="the user of every impression (--per user)", found="<nothing>")
    return imp.user


def score_interleaving(impressions: Iterable[Impression], *, alpha: float = 0.05,
                       source: str = "<log>", by: By = "impression") -> InterleaveResult:
    """Credit each impression's clicks to the team of the clicked result (each clicked result
    once), count wins, losses and ties, and test them. ``by="user"`` sums each user's impression
    wins (B − A) first and tests users, since one user's impressions are not independent.
    Streams: memory is constant by impression, one number per user by user."""
    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be strictly between 0 and 1, got {alpha}")
    n = wins_a = wins_b = ties = clicks_a = clicks_b = 0
    per_user: dict[str, int] = {}
    for imp in impressions:
        credit = team_credit(imp, source)
        if set(credit) - {"A", "B"}:
            raise InputError(source=source, line=imp.line, record=imp.query_id,
                             field="shown[].team", expected="teams A and B (interleaving two "
                             "rankers; a multileaved log is scored by `online interleave` as "
                             "such)", found=", ".join(sorted(credit)))
        a, b = credit.get("A", 0), credit.get("B", 0)
        n += 1
        clicks_a += a
        clicks_b += b
        key = unit_key(imp, by, source)
        if key is not None:
            per_user[key] = per_user.get(key, 0) + (b > a) - (a > b)
        elif a > b:
            wins_a += 1
        elif b > a:
            wins_b += 1
        else:
            ties += 1
    if by == "user":
        wins_a = sum(1 for v in per_user.values() if v < 0)
        wins_b = sum(1 for v in per_user.values() if v > 0)
        ties = len(per_user) - wins_a - wins_b
    units = len(per_user) if by == "user" else n
    return InterleaveResult(n, wins_a, wins_b, ties, clicks_a, clicks_b,
                            sign_test(wins_a, wins_b), alpha, by, units)
