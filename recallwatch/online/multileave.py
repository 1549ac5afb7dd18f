"""Team-draft multileaving: more than two rankers compared inside one result list.

The generalisation of team-draft interleaving (Schuth et al. 2014): in each round the rankers
with the fewest picks so far take turns in a random order, each adding its best result not yet
in the list; every shown result remembers the ranker (its *team*) that brought it. Each
impression then credits each ranker with its clicked results, and for every pair of rankers the
one with more credit wins the impression (or the user, with ``by="user"``: the pair's wins summed
over the user's impressions first). Each pair gets a two-sided sign test; the p-values are
adjusted with Holm's method across the pairs, so "some pair differs" keeps its level however many
rankers are compared.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from recallwatch.errors import UsageError
from recallwatch.online.interleave import By, Pick, sign_test, team_credit, unit_key

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.online.log import Impression

__all__ = ["MultileaveResult", "PairOutcome", "score_multileaving", "team_draft_multileave"]

T = TypeVar("T", bound=Hashable)


def team_draft_multileave(rankings: Sequence[Sequence[T]], k: int, rng: np.random.Generator,
                          teams: Sequence[str] | None = None) -> list[Pick[T]]:
    """One team-draft multileaved list of the rankings, at most ``k`` long; ``teams`` names the
    rankers (default A, B, C, …). Deterministic for a seeded ``rng``."""
    names = list(teams) if teams is not None else [chr(ord("A") + i) for i in range(len(rankings))]
    if len(names) != len(rankings) or len(set(names)) != len(names):
        raise UsageError("give one distinct team name per ranking")
    if k < 0:
        raise UsageError(f"k must be >= 0, got {k}")
    chosen: set[T] = set()
    out: list[Pick[T]] = []
    pos = [0] * len(rankings)
    count = [0] * len(rankings)
    exhausted: set[int] = set()
    while len(out) < k and len(exhausted) < len(rankings):
        fewest = min(count[i] for i in range(len(rankings)) if i not in exhausted)
        turn = [i for i in range(len(rankings)) if count[i] == fewest and i not in exhausted]
        i = turn[int(rng.integers(len(turn)))]
        ranking = rankings[i]
        while pos[i] < len(ranking) and ranking[pos[i]] in chosen:
            pos[i] += 1
        if pos[i] >= len(ranking):
            exhausted.add(i)
            continue
        chosen.add(ranking[pos[i]])
        out.append(Pick(ranking[pos[i]], names[i]))
        count[i] += 1
    return out


@dataclass(frozen=True)
class PairOutcome:
    first: str
    second: str
    wins_first: int
    wins_second: int
    ties: int
    p_value: float
    p_value_holm: float

    def winner(self, alpha: float) -> str | None:
        if self.p_value_holm >= alpha or self.wins_first == self.wins_second:
            return None
        return self.first if self.wins_first > self.wins_second else self.second

    def to_dict(self, alpha: float) -> dict[str, Any]:
        return {"rankers": [self.first, self.second],
                "wins": {self.first: self.wins_first, self.second: self.wins_second,
                         "ties": self.ties},
                "p_value": self.p_value, "p_value_holm": self.p_value_holm,
                "winner": self.winner(alpha)}


@dataclass(frozen=True)
class MultileaveResult:
    rankers: list[str]
    impressions: int
    units: int
    clicks: dict[str, int]
    pairs: list[PairOutcome]
    alpha: float
    by: By

    def to_dict(self) -> dict[str, Any]:
        return {"rankers": self.rankers, "impressions": self.impressions, "by": self.by,
                "units": self.units, "clicks": self.clicks, "alpha": self.alpha,
                "pairs": [p.to_dict(self.alpha) for p in self.pairs],
                "test": f"two-sided binomial sign test per pair of rankers on {self.by}s won "
                        "(ties left out), Holm-adjusted across the pairs"}


def score_multileaving(impressions: Iterable[Impression], *, alpha: float = 0.05,
                       source: str = "<log>", by: By = "impression") -> MultileaveResult:
    """Score multileaved impressions: per pair of rankers, units won by each, and a test."""
    from recallwatch.stats import holm

    if not 0.0 < alpha < 1.0:
        raise UsageError(f"alpha must be strictly between 0 and 1, got {alpha}")
    n = 0
    clicks: dict[str, int] = {}
    # by user: (first, second) → user → net wins of second over first
    nets: dict[tuple[str, str], dict[str, int]] = {}
    counts: dict[tuple[str, str], list[int]] = {}
    for imp in impressions:
        credit = team_credit(imp, source)
        for team, c in credit.items():
            clicks[team] = clicks.get(team, 0) + c
        key = unit_key(imp, by, source)
        for first, second in itertools.combinations(sorted(credit), 2):
            net = (credit[second] > credit[first]) - (credit[first] > credit[second])
            if key is None:  # by impression: only the counts of each outcome are kept
                tally = counts.setdefault((first, second), [0, 0, 0])
                tally[0 if net < 0 else 1 if net > 0 else 2] += 1
            else:
                table = nets.setdefault((first, second), {})
                table[key] = table.get(key, 0) + net
        n += 1
    rankers = sorted(clicks)
    rows = []
    for first, second in itertools.combinations(rankers, 2):
        if by == "impression":
            w1, w2, ties = counts.get((first, second), [0, 0, 0])
        else:
            values = nets.get((first, second), {}).values()
            w1 = sum(1 for v in values if v < 0)
            w2 = sum(1 for v in values if v > 0)
            ties = len(values) - w1 - w2
        rows.append((first, second, w1, w2, ties, sign_test(w1, w2)))
    adjusted = holm([r[5] for r in rows]).tolist() if rows else []
    pairs = [PairOutcome(f, s, w1, w2, t, p, ph)
             for (f, s, w1, w2, t, p), ph in zip(rows, adjusted)]
    users = len({u for table in nets.values() for u in table}) if by == "user" else n
    return MultileaveResult(rankers, n, users, clicks, pairs, alpha, by)
