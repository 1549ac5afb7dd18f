"""Choosing an experiment's winner, with evidence, or keeping the base.

The choice is made in four steps, each stated in the report:

1. **Beat the base on tune.** Every variant is tested against the base on the tune queries (all
   the queries without a split) on the two measures the choice rests on, mean quality (the
   gate's score) and nDCG@K: paired randomization tests of a gain (one-sided: only a gain can
   make a variant win), Holm's correction across every variant and both measures at once (so
   "some variant beat the base" is wrong at most 5 % of the time for the whole plan). A variant
   *beats the base* when its gain in mean quality is significant, or when its mean quality is not
   lower and its gain in nDCG@K is significant.
2. **Ties go to the cheaper.** Of those, the leader is the first by mean quality, then nDCG@K,
   then MRR on tune. Those that do not differ from it significantly (both measures, Holm across
   those comparisons) tie with it; the tie goes to the first, in that order, that no tied variant
   is significantly cheaper than (:class:`recallwatch.experiment.timing.Costs`).
3. **Confirmed on test.** With a split, the chosen variant is tested once more against the base
   on the test queries, which no step above has seen, on the measure it won with: it must be
   significantly better there (one test of a gain, p ≤ 0.05) and its mean quality not lower.
   Otherwise, and when no variant beat the base, the winner is the base: "no variant beat the
   base: keep it".
4. **The quality–cost front**, on the judged queries (test, or all): a variant is *dominated*
   when another is at least as good on mean quality and on nDCG@K and not significantly
   costlier, and strictly better on one of the three. The report says when the winner is
   dominated, and why it still wins.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recallwatch.experiment.evaluate import VariantOutcome
from recallwatch.experiment.timing import Costs

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ALPHA", "DECISION", "Choice", "choose"]

ALPHA = 0.05
#: The measures the choice tests (results.json's metric name -> the per-query field).
DECISION: dict[str, str] = {"mean_quality": "quality", "mean_ndcg": "ndcg"}
_LABEL = {"mean_quality": "mean quality", "mean_ndcg": "nDCG@K"}
_FMT = {"mean_quality": "+.1f", "mean_ndcg": "+.3f"}


@dataclass(frozen=True)
class Choice:
    """What the choice found, step by step (see the module's docstring)."""

    base: str
    winner: str
    chosen_on: str  # "tune" | "all"
    judged_on: str  # "test" | "all"
    tune_queries: int
    tune_tests: dict[str, dict[str, dict[str, Any]]]  # variant -> measure -> delta, p, p_holm
    qualified: list[str]  # beat the base on tune, best first
    won_on: dict[str, str]  # qualified variant -> the measure it beat the base on
    tied: list[str]  # the leader and those tied with it, best first
    tie_tests: dict[str, dict[str, dict[str, Any]]]  # tied-or-not variant -> measure -> test
    candidate: str | None  # the variant the tune evidence chose (None: none beat the base)
    confirmation: dict[str, Any] | None  # the test on the test queries
    order: list[str]  # the table's order: the order the choice used
    status: dict[str, str]  # variant -> what the choice made of it, in a few words
    dominated_by: dict[str, list[str]]
    costs: Costs
    lines: list[str] = field(default_factory=list)

    @property
    def confirmed(self) -> bool | None:
        return None if self.confirmation is None else bool(self.confirmation["confirmed"])

    def to_dict(self) -> dict[str, Any]:
        return {"alpha": ALPHA, "measures": list(DECISION), "chosen_on": self.chosen_on,
                "tune_queries": self.tune_queries, "tune_tests": self.tune_tests,
                "beat_base": self.qualified, "won_on": self.won_on, "tied": self.tied,
                "tie_tests": self.tie_tests, "candidate": self.candidate,
                "confirmation": self.confirmation, "order": self.order,
                "status": self.status, "dominated_by": self.dominated_by,
                "costs": self.costs.to_dict(), "evidence": self.lines}


def _scores(outcome: VariantOutcome, part: str, qids: Sequence[str]) -> dict[str, np.ndarray]:
    import numpy as np

    rows = outcome.parts[part].per_query
    return {m: np.array([rows[q].get(f, 0.0) for q in qids]) for m, f in DECISION.items()}


def _one_sided(delta: float, p: float) -> float:
    """The p-value of a gain from a two-sided one of a symmetric test (the sign-flip test's
    distribution is symmetric): half of it when the difference is a gain, else 1 − half."""
    return p / 2.0 if delta > 0 else 1.0 - p / 2.0


def _tests(outcomes: Sequence[VariantOutcome], part: str
           ) -> tuple[dict[str, dict[str, dict[str, Any]]], int]:
    """The first outcome against each other on ``part``, both decision measures: two-sided
    ``p``/``p_holm`` and the gain's ``p_gain``/``p_gain_holm``, each Holm-corrected across all
    of those tests; and the number of queries."""
    from recallwatch.stats import compare_many_scores, holm

    qids = sorted(outcomes[0].parts[part].per_query)
    if len(outcomes) < 2 or not qids:
        return {}, len(qids)
    names = [o.name for o in outcomes]
    table = compare_many_scores(names, qids, {o.name: _scores(o, part, qids) for o in outcomes},
                                alpha=ALPHA)
    out: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names[1:]}
    gains = [_one_sided(t.delta, t.p) for t in table.tests]
    for t, gain, gain_holm in zip(table.tests, gains, holm(gains), strict=True):
        out[t.b][t.measure] = {"delta": t.delta, "p": t.p, "p_holm": t.p_holm,
                               "p_gain": gain, "p_gain_holm": float(gain_holm),
                               "wins": t.wins, "ties": t.ties, "losses": t.losses,
                               "n": len(qids)}
    return out, len(qids)


def _significant(test: dict[str, Any] | None, sign: int = 1) -> bool:
    return test is not None and test["p_holm"] <= ALPHA and test["delta"] * sign > 0


def _gain(test: dict[str, Any] | None) -> bool:
    """A significant gain over the base, after Holm (the choice's test)."""
    return test is not None and test["p_gain_holm"] <= ALPHA and test["delta"] > 0


def _beat_on(tests: dict[str, dict[str, Any]]) -> str | None:
    """The measure a variant beat the base on (quality first), or None."""
    quality, ndcg = tests.get("mean_quality"), tests.get("mean_ndcg")
    if _gain(quality):
        return "mean_quality"
    if quality is not None and quality["delta"] >= 0 and _gain(ndcg):
        return "mean_ndcg"
    return None


def _rank(outcomes: Sequence[VariantOutcome], part: str) -> list[str]:
    """The variants best first on ``part``: mean quality, nDCG@K, MRR (a tie keeps the plan's
    order)."""
    def key(item: tuple[int, VariantOutcome]) -> tuple[float, ...]:
        m = item[1].parts[part].metrics
        return (*(-(m[k] or 0.0) for k in ("mean_quality", "mean_ndcg", "mrr")), item[0])

    return [o.name for _, o in sorted(enumerate(outcomes), key=key)]


def _cheapest(tied: list[str], costs: Costs) -> str:
    """The first of ``tied`` that no other tied variant is significantly cheaper than."""
    for name in tied:
        if not any(costs.relation(other, name) < 0 for other in tied if other != name):
            return name
    return tied[0]  # a cycle of "cheaper" cannot happen with one test per pair; kept safe


def _confirm(base: VariantOutcome, chosen: VariantOutcome, measure: str) -> dict[str, Any]:
    """The chosen variant against the base on the test queries: one paired test of a gain."""
    from recallwatch.stats import paired_test

    qids = sorted(base.parts["test"].per_query)
    a, b = _scores(base, "test", qids), _scores(chosen, "test", qids)
    delta = float((b[measure] - a[measure]).mean()) if qids else 0.0
    p = _one_sided(delta, paired_test(a[measure], b[measure]).p_value) if qids else 1.0
    quality = float((b["mean_quality"] - a["mean_quality"]).mean()) if qids else 0.0
    return {"variant": chosen.name, "measure": measure, "delta": delta, "p_gain": p,
            "quality_delta": quality, "n": len(qids),
            "confirmed": p <= ALPHA and delta > 0 and quality >= 0}


def _dominated(outcomes: Sequence[VariantOutcome], part: str, costs: Costs
               ) -> dict[str, list[str]]:
    """Per variant, the variants that dominate it on ``part`` (see the module's docstring)."""
    quality = {o.name: tuple(o.parts[part].metrics[m] or 0.0 for m in DECISION)
               for o in outcomes}
    out: dict[str, list[str]] = {}
    for a in quality:
        out[a] = []
        for b in quality:
            if b == a or any(x < y for x, y in zip(quality[b], quality[a], strict=True)):
                continue
            rel = costs.relation(b, a)  # -1: b is cheaper
            if rel <= 0 and (quality[b] != quality[a] or rel < 0):
                out[a].append(b)
    return out


def choose(outcomes: Sequence[VariantOutcome], costs: Costs) -> Choice:
    """The winner of ``outcomes`` (the base first), or the base, with the evidence."""
    split = "tune" in outcomes[0].parts
    chosen_on, judged_on = ("tune", "test") if split else ("all", "all")
    base = outcomes[0]
    by_name = {o.name: o for o in outcomes}
    tune_tests, n_tune = _tests(outcomes, chosen_on)
    ranked = [n for n in _rank(outcomes, chosen_on) if n != base.name]
    won_on = {n: m for n in ranked if (m := _beat_on(tune_tests.get(n, {}))) is not None}
    qualified = [n for n in ranked if n in won_on]
    tied: list[str] = []
    tie_tests: dict[str, dict[str, dict[str, Any]]] = {}
    candidate = confirmation = None
    if qualified:
        leader = qualified[0]
        if len(qualified) > 1:
            tie_tests, _ = _tests([by_name[n] for n in qualified], chosen_on)
        tied = [leader] + [n for n in qualified[1:]
                           if not any(t["p_holm"] <= ALPHA for t in tie_tests[n].values())]
        candidate = _cheapest(tied, costs)
        if split:
            confirmation = _confirm(base, by_name[candidate], won_on[candidate])
    confirmed = confirmation is None or bool(confirmation["confirmed"])
    winner = candidate if candidate is not None and confirmed else base.name
    others = [n for n in ranked if n not in won_on]
    choice = Choice(base.name, winner, chosen_on, judged_on, n_tune, tune_tests, qualified,
                    won_on, tied, tie_tests, candidate, confirmation,
                    [*qualified, base.name, *others], {},
                    _dominated(outcomes, judged_on, costs), costs)
    choice.status.update(_statuses(choice))
    choice.lines.extend(_evidence(choice))
    return choice


def _statuses(c: Choice) -> dict[str, str]:
    """What the choice made of each variant, in a few words (the table's "choice" column)."""
    out = {c.base: "base, kept" if c.winner == c.base else "base"}
    for n in c.qualified:
        if n == c.winner:
            out[n] = "winner"
        elif n == c.candidate:
            out[n] = "beat base on tune; not confirmed on test"
        elif n in c.tied:
            out[n] = f"tied with {c.candidate}; not cheaper"
        else:
            out[n] = f"beat base; behind {c.tied[0]}"
    for n, tests in c.tune_tests.items():
        if n in out:
            continue
        if any(_significant(t, -1) for t in tests.values()):
            out[n] = "worse than base"
        elif _significant(tests.get("mean_ndcg")):
            out[n] = "better nDCG@K, lower mean quality"
        else:
            out[n] = "no evidence it beats base"
    return out


def _test_text(test: dict[str, Any], measure: str) -> str:
    return (f"{_LABEL[measure]} {format(test['delta'], _FMT[measure])}, p of a gain "
            f"{test['p_gain']:.2g}, after Holm {test['p_gain_holm']:.2g}")


def _evidence(c: Choice) -> list[str]:
    """The choice in words: the verdict first, then each step's outcome with its figures."""
    where = "tune" if c.chosen_on == "tune" else "all"
    if c.candidate is None:
        return [f"no variant beat the base: keep it ({c.base}). {_no_evidence(c)}",
                *_front_lines(c), c.costs.describe()]
    lines = [f"winner: {c.winner}" if c.winner == c.candidate else
             f"no variant beat the base: keep it ({c.base}). {c.candidate} led on the tune "
             "queries, but the test queries do not confirm it"]
    tests, won = c.tune_tests[c.candidate], c.won_on[c.candidate]
    head = (f"{c.candidate} beat the base ({c.base}) on the {c.tune_queries} {where} queries: "
            f"{_test_text(tests[won], won)}")
    if won != "mean_quality":
        head += f", mean quality {format(tests['mean_quality']['delta'], '+.1f')} (not lower)"
    lines.append(f"{head} (paired randomization tests of a gain, Holm across {_family(c)})")
    lines += _tie_lines(c)
    if c.confirmation is not None:
        lines.append(_confirmation_line(c))
    return [*lines, *_front_lines(c), c.costs.describe()]


def _family(c: Choice) -> str:
    """``9 variants × 2 measures``: the tests Holm's correction ran across."""
    n = len(c.tune_tests)
    return f"{n} variant{'' if n == 1 else 's'} × 2 measures"


def _no_evidence(c: Choice) -> str:
    if not c.tune_tests:
        return "The plan has no variant to compare."
    best = min(c.tune_tests, key=lambda n: min(
        (t["p_gain_holm"] for t in c.tune_tests[n].values() if t["delta"] > 0), default=1.0))
    tests = c.tune_tests[best]
    shown = "; ".join(_test_text(tests[m], m) for m in DECISION if m in tests)
    where = "tune" if c.chosen_on == "tune" else "all"
    return (f"On the {c.tune_queries} {where} queries no variant's gain in mean quality or "
            f"nDCG@K over it holds after Holm's correction across {_family(c)} (closest: "
            f"{best}, {shown})")


def _tie_lines(c: Choice) -> list[str]:
    lines = []
    behind = [n for n in c.qualified if n not in c.tied]
    if behind:
        lines.append(f"{', '.join(behind)} also beat the base but did significantly worse "
                     f"than {c.tied[0]}")
    if len(c.tied) > 1:
        others = [n for n in c.tied if n != c.candidate]
        if c.candidate != c.tied[0]:
            why = c.costs.comparison(c.candidate or "", c.tied[0])
            lines.append(f"{', '.join(c.tied)} beat the base and do not differ significantly: "
                         f"the tie goes to the cheaper, {c.candidate} ({why})")
        else:
            costs = "; ".join(c.costs.comparison(c.candidate, n) for n in others)
            lines.append(f"{', '.join(c.tied)} beat the base and do not differ significantly; "
                         f"none is significantly cheaper than {c.candidate}, which ranks first "
                         f"({costs})")
    return lines


def _confirmation_line(c: Choice) -> str:
    t = c.confirmation
    assert t is not None  # called only with a split
    m = t["measure"]
    figures = (f"{_LABEL[m]} {format(t['delta'], _FMT[m])}, p of a gain {t['p_gain']:.2g} on "
               f"the {t['n']} test queries, which the choice never saw; mean quality "
               f"{format(t['quality_delta'], '+.1f')}")
    if t["confirmed"]:
        return f"confirmed on the test queries: {figures}"
    return (f"NOT confirmed on the test queries: {figures} (it must be better there with "
            f"p ≤ {ALPHA:g}, and not lower in mean quality)")


def _front_lines(c: Choice) -> list[str]:
    where = "test" if c.judged_on == "test" else "all"
    dominated = [n for n in c.order if c.dominated_by.get(n)]
    lines = []
    if dominated:
        lines.append(f"dominated on the {where} queries (another variant at least as good on "
                     "mean quality and nDCG@K and not significantly costlier): "
                     + ", ".join(f"{n} (by {', '.join(c.dominated_by[n])})" for n in dominated))
    over = c.dominated_by.get(c.winner) or []
    if not over:
        lines.append(f"{c.winner} is on the quality–cost front of the {where} queries")
        return lines
    reasons = "; ".join(f"{n}: {c.status.get(n, '')}" for n in over)
    why = ("the choice rests on the paired tests on the tune queries, and "
           if c.chosen_on == "tune" else "the choice rests on the paired tests, and ")
    lines.append(f"{c.winner} is not on the quality–cost front of the {where} queries: {why}"
                 f"what dominates it there did not win them ({reasons})")
    return lines
