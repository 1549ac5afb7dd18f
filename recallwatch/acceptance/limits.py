"""The policy's run-level limits, applied: rank-measure targets and the latency cap on the run
itself; ``max_drop`` and ``max_cost_increase`` against a baseline run (the history's last accepted
run of the same golden set and policy).

A drop blocks only when it is larger than ``max_drop`` *and* a paired randomization test over the
queries both runs share tells it from chance after Holm correction across every ``max_drop``
measure (alpha 0.05): a drop within noise never blocks, and its check says why. ``max_drop`` may
also name an answer measure (:data:`~recallwatch.formats.policy_answers.ANSWER_DROPS`:
faithfulness, answer relevance, correctness, and the hallucination rate, whose drop is a rise):
it is tested over the queries both runs answered, in the same Holm family, and its evidence adds
the bootstrap interval of the change. It is compared only when both runs' answers were judged by
the same judge (same thresholds, or same model and prompt) trusted with the measure; a baseline
without such answers makes it "not applied", saying why, and this run's judge not trusted with it
stops the run on rule ``answer_judge``, as the answer rules do.

A cost increase blocks only when it is larger than ``max_cost_increase`` *and* the per-call
timings say it is real (:func:`recallwatch.acceptance.cost.compare_figure`): the 95 % interval of
the ratio lies above 1 when the baseline's index was timed interleaved in the same run, above the
load factor when the two runs were timed apart. An increase within noise never blocks, and its
check says why. Index bytes compare exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from recallwatch.acceptance.cost import (
    CAPPED,
    COST_LABELS,
    LOAD_FACTOR,
    FigureChange,
    compare_figure,
    format_cost,
)
from recallwatch.acceptance.latency_cap import latency_check
from recallwatch.acceptance.model import Check, GateResult, QueryResult, Reason
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.policy import Policy
from recallwatch.formats.policy_answers import ANSWER_DROPS
from recallwatch.stats import calls_needed

__all__ = ["ALPHA", "against_baseline", "check_measures", "measure_values", "run_checks"]

ALPHA = 0.05
_SEED = 0
_RESAMPLES = 10_000
_FILLER = "\x1frecallwatch-unjudged-"  # a non-relevant placeholder no chunk id can equal


def check_measures(policy: Policy) -> None:
    """Every measure name in targets and max_drop is a measure of the catalog (or, in max_drop,
    an answer measure), else a located error (the policy file's line, the key, the catalog's own
    suggestion)."""
    from recallwatch._registry import nearest
    from recallwatch.metrics import parse_measure

    for where, name in policy.limits.measures():
        if name in ANSWER_DROPS:
            if where == "max_drop":
                continue  # an answer measure, compared with the baseline's answers
            raise InputError(source=policy.source, line=policy.limits.lines.get(where),
                             field=f"{where}.{name}", expected="a rank measure name such as "
                             "nDCG@10, RR, P@5, R@20, AP", found=name,
                             hint="an answer measure's floor is a policy key of its own: "
                             "min_faithfulness, min_answer_relevance, max_hallucination_rate")
        try:
            measure = parse_measure(name)
        except UsageError as exc:
            answer = nearest(name, list(ANSWER_DROPS)) if where == "max_drop" else None
            raise InputError(source=policy.source, line=policy.limits.lines.get(where),
                             field=f"{where}.{name}", expected="a rank measure name such as "
                             "nDCG@10, RR, P@5, R@20, AP" + (
                                 ", or an answer measure: " + ", ".join(ANSWER_DROPS)
                                 if where == "max_drop" else ""), found=name,
                             hint=f"did you mean {answer!r}?" if answer else str(exc)) from None
        if measure.family.needs == "subtopics":
            raise InputError(source=policy.source, line=policy.limits.lines.get(where),
                             field=f"{where}.{name}", expected="a measure computed from the "
                             "ranks of the expected chunks", found=name,
                             hint=f"{measure.family.name} needs subtopic judgments (which need "
                             "of the question each chunk answers), which a golden set does not "
                             "record; evaluate it with recallwatch eval --subtopics FILE on TREC "
                             "files instead")
        if measure.family.needs != "relevant":
            raise InputError(source=policy.source, line=policy.limits.lines.get(where),
                             field=f"{where}.{name}", expected="a measure computed from the "
                             "ranks of the expected chunks", found=name,
                             hint=f"{measure.family.name} also needs judged non-relevant chunks "
                             "or every result the search returned, which a golden set does not "
                             "record; evaluate it with recallwatch eval on TREC files instead")
        if measure.rel > 1:
            raise InputError(source=policy.source, line=policy.limits.lines.get(where),
                             field=f"{where}.{name}", expected="a measure of 0/1 relevance",
                             found=name, hint="a golden set judges an expected chunk relevant "
                             "(1) or not: rel=2 would score every query 0")


def measure_values(queries: Sequence[QueryResult], names: Sequence[str]) -> dict[str, np.ndarray]:
    """Per-query values of each measure, in the order of ``queries``.

    Computed from the ranks of each query's expected chunks in the deep search (the run records
    them), which is all a measure of 0/1 relevance depends on: the gate's own run and a run
    loaded from the history give the same values, whatever measure a policy names later."""
    from recallwatch.metrics import Qrels, Run, evaluate, parse_measure

    if not queries or not names:
        return {n: np.zeros(len(queries)) for n in names}
    ranked: dict[str, list[str]] = {}
    for q in queries:
        at = {h.rank: h.id for h in q.expected if h.rank is not None}
        depth = max([*at, 1])
        ranked[q.id] = [at.get(r, f"{_FILLER}{r}") for r in range(1, depth + 1)]
    qrels = Qrels.from_dict({q.id: dict.fromkeys((h.id for h in q.expected), 1)
                             for q in queries})
    res = evaluate(qrels, Run.from_ranked(ranked), list(names))
    pos = {qid: i for i, qid in enumerate(res.query_ids)}
    out: dict[str, np.ndarray] = {}
    for name in names:
        col = res.per_query[parse_measure(name)]
        out[name] = np.array([float(col[pos[q.id]]) if q.id in pos else 0.0 for q in queries])
    return out


def run_checks(queries: Sequence[QueryResult], policy: Policy,
               cost: dict[str, Any] | None) -> tuple[list[Reason], list[Check]]:
    """Targets (over all queries and per domain) and the latency cap: judged on the run alone.
    A target applies to the measure's own figure over the queries: their mean, or their sum for
    a count, or their geometric mean for GMAP."""
    from recallwatch.metrics import combine, parse_measure

    limits = policy.limits
    reasons: list[Reason] = []
    checks: list[Check] = []
    groups: list[tuple[str | None, dict[str, float]]] = [(None, limits.targets)]
    groups += [(d, t) for d, t in sorted(limits.targets_per_domain.items())]
    for domain, targets in groups:
        subset = [q for q in queries if domain is None or (q.domain or "(none)") == domain]
        values = measure_values(subset, list(targets))
        for name, target in targets.items():
            subject = name if domain is None else f"{name} in {domain}"
            if not subset:
                checks.append(Check("target", subject, "not applied",
                                    f"{subject}: no query of this domain in the golden set"))
                continue
            mean = combine(parse_measure(name), values[name])
            figures = {"measure": name, "domain": domain, "value": mean, "target": target,
                       "n": len(subset)}
            if mean + 1e-12 >= target:
                checks.append(Check("target", subject, "pass",
                                    f"{subject} {mean:.3f} meets the target {target:g}", figures))
                continue
            message = (f"{subject} {mean:.3f} is below the target {target:g} "
                       f"(mean over {len(subset)} quer{'y' if len(subset) == 1 else 'ies'})")
            below = sorted(zip(values[name], subset, strict=True), key=lambda t: t[0])
            reasons.append(Reason("target", message,
                                  tuple(q.id for v, q in below if v < target)))
            checks.append(Check("target", subject, "stop", message, figures))
    if limits.max_latency_p99_ms is not None:
        reasons_, checks_ = _latency_cap(cost, limits.max_latency_p99_ms)
        reasons += reasons_
        checks += checks_
    return reasons, checks


def _latency_cap(cost: dict[str, Any] | None, cap: float) -> tuple[list[Reason], list[Check]]:
    """The run's own search p99 against ``max_latency_p99_ms``, by the rule the monitor's
    latency alarms use (:mod:`recallwatch.acceptance.latency_cap`): a stop only when the p99's
    whole 95 % interval lies above the cap (or, with too few calls for the whole interval, its low
    end); a p99 over the cap whose interval reaches below it passes, *within noise*."""
    subject = COST_LABELS["search_p99_ms"]
    if cost is None:
        return [], [Check("latency_p99", subject, "not applied",
                          "no search latency measured (a results file carries none)")]
    samples = (cost.get("samples") or {}).get("search_ms") or []
    queries = int(cost.get("queries") or len(samples))
    calls = (f"the {queries} golden quer{'y' if queries == 1 else 'ies'}, one search call each"
             + (", taken again in rounds" if len(samples) > queries else ""))
    check = latency_check(samples, cap, probes=queries, what="search latency", calls=calls,
                          limit="as many as the run timed", consequence="a stop")
    figures = {"value": check.point, "cap": cap, "p50": check.p50.value, "n": check.calls,
               "interval": None if check.p99.low is None else [check.p99.low, check.p99.high],
               "low_end": check.p99_low}
    rule = f"max_latency_p99_ms {cap:g}"
    if check.status == "no cap":
        return [], [Check("latency_p99", subject, "not applied",
                          "no per-call search timings recorded", figures)]
    if check.status == "over":
        message = f"{check.alarm} ({rule})"
        return [Reason("latency_p99", message)], [Check("latency_p99", subject, "stop",
                                                        message, figures)]
    if check.status == "not judged":
        return [], [Check("latency_p99", subject, "not applied",
                          f"{check.note} ({rule}): time more calls (leave --latency-sample out, "
                          f"or give at least {calls_needed(0.99)})", figures)]
    if check.status == "within noise":
        return [], [Check("latency_p99", subject, "pass", f"{check.note} ({rule})", figures)]
    low, high = check.p99.low, check.p99.high
    text = (f"search latency p99 {check.point:.2f} ms"
            + (f" (95 % interval {low:.2f}–{high:.2f} ms)" if low is not None else "")
            + f" over {check.calls} calls")
    return [], [Check("latency_p99", subject, "pass", f"{text} is within the cap {cap:g} ms",
                      figures)]


def against_baseline(result: GateResult, base: GateResult | None) -> GateResult:
    """``result`` with ``max_drop`` and ``max_cost_increase`` judged against ``base`` (the last
    accepted run of its golden set and policy): their checks added, a blocking one among the
    reasons and the verdict STOP. The limits are read from the run's own recorded policy."""
    max_drop: dict[str, float] = dict(result.policy.get("max_drop") or {})
    increase = result.policy.get("max_cost_increase")
    if not max_drop and increase is None:
        return result
    reasons: list[Reason] = []
    checks: list[Check] = []
    if base is None:
        for rule, subjects in (("max_drop", list(max_drop)),
                               ("cost_increase", [] if increase is None else ["cost"])):
            checks += [Check(rule, s, "not applied",
                             "no accepted baseline run of this golden set and policy to compare "
                             "with (the first accepted run becomes it)")
                       for s in subjects]
    else:
        if max_drop:
            r, c = _drops(result, base, max_drop)
            reasons += r
            checks += c
        if increase is not None:
            r, c = _cost(result, base, float(increase))
            reasons += r
            checks += c
    all_reasons = (*result.reasons, *reasons)
    return replace(result, reasons=all_reasons, checks=(*result.checks, *checks),
                   verdict="STOP" if all_reasons else "ACCEPT")


@dataclass(frozen=True)
class _Paired:
    """One ``max_drop`` measure's per-query values in the baseline (``old``) and this run
    (``new``), over the queries both have (``ids``)."""

    name: str
    old: np.ndarray
    new: np.ndarray
    ids: list[str]
    higher_is_better: bool = True
    answers: bool = False  # an answer measure: its evidence also states the interval


_Outcome = tuple[Reason | None, Check]


def _drops(result: GateResult, base: GateResult,
           max_drop: dict[str, float]) -> tuple[list[Reason], list[Check]]:
    """Each ``max_drop`` measure against ``base``: the rank measures over the queries both runs
    share, the answer measures over the queries both runs answered; one paired randomization
    test each, Holm-corrected across all of them."""
    from recallwatch.stats import holm, paired_test

    outcomes: dict[str, _Outcome] = {}
    paired: list[_Paired] = []
    rank = [n for n in max_drop if n not in ANSWER_DROPS]
    if rank:
        found = _rank_pairs(result, base, rank)
        if isinstance(found, dict):
            outcomes.update(found)
        else:
            paired += found
    for name in (n for n in max_drop if n in ANSWER_DROPS):
        answered = _answer_pairs(result, base, name)
        if isinstance(answered, _Paired):
            paired.append(answered)
        else:
            outcomes[name] = answered
    tests = [paired_test(p.old, p.new, test="randomization", seed=_SEED,
                         n_resamples=_RESAMPLES) for p in paired]
    adjusted = [float(x) for x in holm([t.p_value for t in tests])] if tests else []
    for p, t, p_holm in zip(paired, tests, adjusted, strict=True):
        outcomes[p.name] = _drop_outcome(p, t.p_value, p_holm, len(paired),
                                         max_drop[p.name], base.run_id)
    reasons = [r for n in max_drop if (r := outcomes[n][0]) is not None]
    return reasons, [outcomes[n][1] for n in max_drop]


def _rank_pairs(result: GateResult, base: GateResult,
                names: list[str]) -> list[_Paired] | dict[str, _Outcome]:
    """The rank measures over the queries both runs share with the same expected chunks (or
    each one's "not applied" when there is none)."""
    old_by_id = {q.id: q for q in base.queries}
    pairs = [(old_by_id[q.id], q) for q in result.queries if q.id in old_by_id
             and {h.id for h in old_by_id[q.id].expected} == {h.id for h in q.expected}]
    if not pairs:
        return {n: (None, Check("max_drop", n, "not applied",
                                f"{n}: no query in common with run {base.run_id}"))
                for n in names}
    old = measure_values([a for a, _ in pairs], names)
    new = measure_values([b for _, b in pairs], names)
    ids = [q.id for _, q in pairs]
    return [_Paired(n, old[n], new[n], ids) for n in names]


# What describes a judge without its counters (an LLM judge's requests and bad replies): two runs'
# answers compare only when the same judge, with the same thresholds or model, judged both.
_JUDGE_COUNTERS = frozenset({"requests", "bad_replies", "bad_reply_examples"})


def _judge_of(answers: dict[str, Any]) -> dict[str, Any]:
    described = (answers.get("judge") or {}).get("judge") or {}
    return {k: v for k, v in described.items() if k not in _JUDGE_COUNTERS}


def _trusted(answers: dict[str, Any], measure: str) -> bool:
    return measure in ((answers.get("judge") or {}).get("trusted") or ())


def _answer_pairs(result: GateResult, base: GateResult, name: str) -> _Paired | _Outcome:
    """An answer measure over the queries both runs answered and the judge is trusted with, or
    why it is not compared: not applied (no answers judged here or in the baseline, another
    judge), or a stop on rule ``answer_judge`` when this run's judge is not trusted with it."""
    drop = ANSWER_DROPS[name]
    mine, theirs = result.answers, base.answers

    def not_applied(why: str) -> _Outcome:
        return None, Check("max_drop", name, "not applied", f"{name}: {why}")

    if mine is None:
        return not_applied("no answers were judged in this run (give --answers FILE or "
                           "--generator SPEC)")
    if not _trusted(mine, drop.measure):
        message = (f"the answer judge is not trusted with {drop.measure} in this run, so "
                   f"max_drop {name} cannot be checked against run {base.run_id}")
        return Reason("answer_judge", message), Check("max_drop", name, "stop", message)
    if theirs is None:
        return not_applied(f"the baseline run {base.run_id} judged no answers: there is "
                           "nothing to compare with (the next accepted run with answers "
                           "becomes the baseline)")
    if not _trusted(theirs, drop.measure):
        return not_applied(f"the baseline run {base.run_id}'s answer judge was not trusted "
                           f"with {drop.measure}")
    if _judge_of(mine) != _judge_of(theirs):
        return not_applied(f"the baseline run {base.run_id}'s answers were judged by another "
                           f"judge ({_judge_of(theirs)}; this run: {_judge_of(mine)}), so their "
                           "figures do not compare")
    old_by_id = {q.id: v for q in base.queries
                 if (v := (q.answer or {}).get(drop.key)) is not None}
    pairs = [(float(old_by_id[q.id]), float(v), q.id) for q in result.queries
             if q.id in old_by_id and (v := (q.answer or {}).get(drop.key)) is not None]
    if not pairs:
        return not_applied(f"no query answered in both this run and run {base.run_id}")
    return _Paired(name, np.array([a for a, _, _ in pairs]), np.array([b for _, b, _ in pairs]),
                   [i for _, _, i in pairs], drop.higher_is_better, answers=True)


def _drop_outcome(p: _Paired, p_value: float, p_holm: float, m: int, limit: float,
                  base_run: str) -> _Outcome:
    """Pass (within ``limit``), stop (beyond it and significant) or within noise."""
    a, b = float(p.old.mean()), float(p.new.mean())
    drop = a - b if p.higher_is_better else b - a
    figures: dict[str, Any] = {"measure": p.name, "baseline": a, "value": b, "drop": drop,
                               "max_drop": limit, "p_value": p_value, "p_holm": p_holm,
                               "n": len(p.ids), "baseline_run": base_run}
    fell = "fell" if p.higher_is_better else "rose"
    said = (f"{p.name} {fell} {drop:.3f} ({a:.3f} → {b:.3f}) against run {base_run}"
            if drop > 0 else f"{p.name} {a:.3f} → {b:.3f} against run {base_run}")
    test = (f"p={p_value:.3g}, Holm-adjusted p={p_holm:.3g} over {m} "
            f"measure{'s' if m != 1 else ''}; paired randomization test over {len(p.ids)} "
            + ("queries both runs answered" if p.answers else "queries"))
    if p.answers:
        from recallwatch.stats import bootstrap_ci

        ci = bootstrap_ci(p.old, p.new, seed=_SEED, n_resamples=_RESAMPLES)
        figures["interval"] = [ci.low, ci.high]
        test += f"; 95 % interval of the change {ci.low:+.3f} to {ci.high:+.3f}"
    if drop <= limit + 1e-12:
        return None, Check("max_drop", p.name, "pass", f"{said}: within max_drop {limit:g}",
                           figures)
    if p_holm <= ALPHA:
        message = f"{said}, more than max_drop {limit:g}; significant ({test})"
        worse = [i for i, va, vb in zip(p.ids, p.old, p.new, strict=True)
                 if (vb < va if p.higher_is_better else vb > va)]
        return (Reason("max_drop", message, tuple(worse)),
                Check("max_drop", p.name, "stop", message, figures))
    return None, Check("max_drop", p.name, "within noise",
                       f"{said}, more than max_drop {limit:g}, but the drop is within noise "
                       f"({test}, alpha {ALPHA:g}): not blocking", figures)


def _cost(result: GateResult, base: GateResult,
          cap: float) -> tuple[list[Reason], list[Check]]:
    if not result.cost or not base.cost:
        side = "this run" if not result.cost else f"run {base.run_id}"
        return [], [Check("cost_increase", "cost", "not applied",
                          f"no cost recorded for {side} (a results file carries none)")]
    load = float(result.policy.get("cost_load_factor") or LOAD_FACTOR)
    embedder = result.config.embedder
    same_embedder = embedder is not None and embedder == base.config.embedder
    reasons: list[Reason] = []
    checks: list[Check] = []
    for key in CAPPED:
        change = compare_figure(key, base.cost, result.cost, base_run=base.run_id,
                                load_factor=load, same_embedder=same_embedder)
        if key == "index_bytes" and (change.old is None or change.new is None):
            continue  # the store cannot say its index size
        reason, check = _cost_check(change, base.run_id, cap)
        if reason is not None:
            reasons.append(reason)
        checks.append(check)
    return reasons, checks


def _cost_check(change: FigureChange, base_run: str, cap: float) -> tuple[Reason | None, Check]:
    """One capped figure's outcome: pass, stop (larger than the cap and real), within noise
    (larger than the cap, but not beyond what noise explains) or not applied."""
    label = change.label
    figures = {**change.to_dict(), "figure": change.key, "cap": cap, "baseline_run": base_run}
    if change.old is None or change.new is None:
        return None, Check("cost_increase", label, "not applied", f"{label}: {change.note}",
                           figures)
    key = change.judged_as or change.key
    old, new = format_cost(key, change.old), format_cost(key, change.new)
    if change.increase is None:
        return None, Check("cost_increase", label, "not applied",
                           f"{label} {old} → {new}: the baseline's is 0, no ratio", figures)
    note = f"; {change.note}" if change.note else ""
    evidence = change.evidence()
    said = f"{label} {change.increase:+.0%} ({old} → {new}) against run {base_run}"
    if change.increase <= cap + 1e-12:
        return None, Check("cost_increase", label, "pass",
                           f"{said} is within max_cost_increase {cap:.0%}{note}", figures)
    rose = (f"{label} rose {change.increase:+.0%} ({old} → {new}) against run {base_run}, above "
            f"max_cost_increase {cap:.0%}")
    if change.real:
        message = f"{rose}; beyond noise ({evidence}){note}"
        return Reason("cost_increase", message), Check("cost_increase", label, "stop", message,
                                                       figures)
    hint = ("" if change.ratio is None or change.ratio.paired or change.explained else
            "; timing the baseline's index in the same run (the same store, its version kept) "
            "judges smaller increases")
    return None, Check(
        "cost_increase", label, "within noise",
        f"{rose}, but the increase is within noise ({evidence}): not blocking{note}{hint}",
        figures)
