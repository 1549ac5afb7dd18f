"""One gate run against an earlier one: comparability, per-query regressions, rank changes,
paired significance of the aggregate deltas, and "who buried it".

The shape returned by :func:`compare_runs` is what every report reads (``result.comparison``'s
``previous`` and ``last_accepted``)::

    {"run_id", "created_at", "verdict", "index_version", "comparable", "why", "summary",
     "details", "n_shared", "newly_failing", "newly_passing", "still_failing", "rank_changes",
     "deltas", "buried_by", "entered_top_k", "cost", "cost_notes"}

``cost`` holds each cost figure both runs state, a timing with the 95 % interval of its ratio
from the per-call samples; ``cost_notes`` what those figures cannot say (a p99 of too few calls,
the load between two runs timed apart).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recallwatch.acceptance.cost import (
    COST_LABELS,
    LOAD_FACTOR,
    cost_deltas,
    cost_interval,
    cost_notes,
    format_cost,
)
from recallwatch.acceptance.model import GateResult, QueryResult
from recallwatch.formats.golden import normalise_quote

if TYPE_CHECKING:
    from recallwatch.stats import MultiComparison

__all__ = ["TESTED_METRICS", "compare_many_runs", "compare_runs", "config_differences"]

#: Per-query measures whose mean change gets a paired significance test (Holm-corrected together).
TESTED_METRICS: tuple[str, ...] = ("quality", "recall", "rr", "ndcg")
_LABELS = {"quality": "mean quality", "recall": "mean recall", "rr": "MRR", "ndcg": "nDCG@K",
           "precision": "P@K", "noise": "mean noise"}
_ALPHA = 0.05


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):  # an empty mapping has no leaves: {} and absent read alike
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: value}


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "…"


def config_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """The configuration fields that differ, named for a person: the embedder fingerprint as one
    item, every other field by its dotted path (``search.boost.label.SINTESIS_CURADA``)."""
    fa, fb = _flatten(a), _flatten(b)
    out: list[str] = []
    emb_a, emb_b = a.get("embedder"), b.get("embedder")
    if emb_a != emb_b:
        def who(e: Any) -> str:
            if not isinstance(e, Mapping):
                return "none"
            return f"{e.get('name')}@{e.get('version')} #{str(e.get('probe_hash', ''))[:8]}"
        out.append(f"embedder fingerprint ({who(emb_a)} → {who(emb_b)})")
    for key in sorted(set(fa) | set(fb)):
        if key.startswith("embedder.") or key == "embedder":
            continue
        if fa.get(key) != fb.get(key):
            out.append(f"{key} ({_short(fa.get(key, '—'))} → {_short(fb.get(key, '—'))})")
    return out


def _why(base: GateResult, cur: GateResult) -> list[str]:
    reasons = []
    if base.dataset_hash != cur.dataset_hash:
        reasons.append(
            f"dataset hash differs ({base.dataset.get('name')} v{base.dataset.get('version')} "
            f"#{base.dataset_hash[:8]} → {cur.dataset.get('name')} v{cur.dataset.get('version')} "
            f"#{cur.dataset_hash[:8]})"
        )
    if base.policy_hash != cur.policy_hash:
        fields = config_differences(base.policy, cur.policy)
        reasons.append(f"policy hash differs: {', '.join(fields) or 'policy rules'}")
    if base.config_hash != cur.config_hash:
        fields = config_differences(base.config.to_dict(), cur.config.to_dict())
        reasons.append(f"config hash differs: {', '.join(fields) or 'configuration'}")
    return reasons


def _rank(r: int | None) -> str:
    return ">depth" if r is None else str(r)


def _labels(q: QueryResult) -> set[str]:
    """What a query expects, as its golden set wrote it: a content anchor is the same label
    whichever chunks it resolved to (a re-chunking renames them), a chunk id is itself. Between
    a run with ids and one with anchors, the chunks expected are compared instead."""
    from_anchors = {c for a in q.anchors for c in a.get("chunks", ())}
    # a group of alternatives is one label, whichever of its members were counted
    from_groups = {c for g in q.alternatives for c in g.get("chunks", ())}
    return ({h.id for h in q.expected if h.id not in from_anchors | from_groups}
            | {f"{a.get('doc_id')}::{normalise_quote(str(a.get('quote')))}" for a in q.anchors}
            | {json.dumps([g.get("members"), g.get("need")], sort_keys=True)
               for g in q.alternatives})


def _same_question(a: QueryResult, b: QueryResult) -> bool:
    if (a.anchors and b.anchors) or a.alternatives or b.alternatives:
        return _labels(a) == _labels(b) and a.top_k == b.top_k
    return {h.id for h in a.expected} == {h.id for h in b.expected} and a.top_k == b.top_k


def _deltas(pairs: list[tuple[QueryResult, QueryResult]], seed: int,
            n_resamples: int) -> dict[str, dict[str, Any]]:
    import numpy as np

    from recallwatch.stats import holm, paired_test

    out: dict[str, dict[str, Any]] = {}
    for metric in (*TESTED_METRICS, "precision", "noise"):
        a = np.array([float(getattr(old, metric)) for old, _ in pairs])
        b = np.array([float(getattr(new, metric)) for _, new in pairs])
        entry: dict[str, Any] = {"old": float(a.mean()), "new": float(b.mean()),
                                 "delta": float(b.mean() - a.mean()), "n": len(pairs)}
        if metric in TESTED_METRICS:
            t = paired_test(a, b, test="randomization", seed=seed, n_resamples=n_resamples)
            entry.update(p_value=t.p_value, test=f"paired randomization ({t.method})")
        out[metric] = entry
    adjusted = holm([out[m]["p_value"] for m in TESTED_METRICS])
    for metric, p in zip(TESTED_METRICS, adjusted, strict=True):
        out[metric]["p_holm"] = float(p)
        out[metric]["significant"] = bool(p <= _ALPHA)
    return out


def _fmt(metric: str, value: float) -> str:
    return f"{value:.1f}" if metric == "quality" else f"{value:.3f}"


def _fmt_delta(metric: str, d: float) -> str:
    sign = "+" if d > 0 else ("−" if d < 0 else "±")
    return sign + _fmt(metric, abs(d))


def compare_runs(
    base: GateResult,
    current: GateResult,
    *,
    ingested_since: Collection[str] | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
) -> dict[str, Any]:
    """Compare ``current`` with the earlier run ``base``.

    ``ingested_since``: ids of the chunks added or changed in the store since ``base``'s index
    version (``store.ids_since(v)``); with it, each query that passed at ``base`` and fails now
    lists the new chunks that rank above its missing expected chunks (``buried_by``). Without it
    only ``entered_top_k`` (chunks in the top-K now that were not at ``base``) is known.
    Per-query results cover the queries both runs hold with the same expected chunks; the
    comparison is still computed when the runs are not comparable, and says so.
    """
    why = _why(base, current)
    old_by_id = {q.id: q for q in base.queries}
    pairs = [(old_by_id[q.id], q) for q in current.queries
             if q.id in old_by_id and _same_question(old_by_id[q.id], q)]
    changed = [q.id for q in current.queries
               if q.id in old_by_id and not _same_question(old_by_id[q.id], q)]
    only_new = [q.id for q in current.queries if q.id not in old_by_id]
    cur_ids = {q.id for q in current.queries}
    only_old = [q.id for q in base.queries if q.id not in cur_ids]

    newly_failing = [new.id for old, new in pairs if old.passed and not new.passed]
    newly_passing = [new.id for old, new in pairs if not old.passed and new.passed]
    still_failing = [new.id for old, new in pairs if not old.passed and not new.passed]
    rank_changes: dict[str, dict[str, list[int | None]]] = {}
    for old, new in pairs:
        old_ranks = {h.id: h.rank for h in old.expected}
        moved = {h.id: [old_ranks[h.id], h.rank] for h in new.expected
                 if h.id in old_ranks and old_ranks[h.id] != h.rank}
        if moved:
            rank_changes[new.id] = moved
    deltas = _deltas(pairs, seed, n_resamples) if pairs else {}

    since = None if ingested_since is None else set(ingested_since)
    buried_by: dict[str, list[dict[str, Any]]] = {}
    entered: dict[str, list[str]] = {}
    by_new = {new.id: (old, new) for old, new in pairs}
    for qid in newly_failing:
        old, new = by_new[qid]
        old_top = {cid for cid, _ in old.top}
        entered[qid] = [cid for cid, _ in new.top if cid not in old_top]
        if since is not None:
            buried_by[qid] = _buried(new, since)

    c: dict[str, Any] = {
        "run_id": base.run_id,
        "created_at": base.created_at,
        "verdict": base.verdict,
        "index_version": base.store.get("version"),
        "comparable": not why,
        "why": "; ".join(why),
        "n_shared": len(pairs),
        "newly_failing": newly_failing,
        "newly_passing": newly_passing,
        "still_failing": still_failing,
        "rank_changes": rank_changes,
        "deltas": deltas,
        "buried_by": buried_by,
        "entered_top_k": entered,
        "queries_changed": changed,
        "queries_added": only_new,
        "queries_removed": only_old,
        "cost": cost_deltas(base.cost, current.cost),  # search latency, embedding, index bytes
        # what the cost deltas cannot say: quantiles of too few calls, the load between runs
        "cost_notes": cost_notes(base.cost, current.cost,
                                 float(current.policy.get("cost_load_factor") or LOAD_FACTOR)),
    }
    c["summary"] = _summary(c)
    c["details"] = _details(c, base, by_new, since)
    return c


def _buried(q: QueryResult, since: set[str]) -> list[dict[str, Any]]:
    """New chunks (ingested since the baseline) ranked above the query's missing expected chunks
    (the top-K, then the results between K+1 and the deepest missing one), each with the
    highest-ranked expected chunk it now outranks."""
    missing = sorted((h for h in q.expected if not h.in_top_k),
                     key=lambda h: (h.rank is None, h.rank or 0))
    if not missing:
        return []
    first = missing[0]
    return [
        {"id": cid, "rank": rank, "score": score, "expected_id": first.id,
         "expected_rank": first.rank, "expected_missing": [h.id for h in missing]}
        for rank, (cid, score) in enumerate([*q.top, *q.beyond_k], start=1)
        if cid in since and (first.rank is None or rank < first.rank)
    ]


def _summary(c: dict[str, Any]) -> str:
    parts = []
    d = c["deltas"].get("quality")
    if d is not None:
        p = f", p={d['p_value']:.3g}" if d["delta"] else ""
        parts.append(f"mean quality {_fmt('quality', d['old'])} → {_fmt('quality', d['new'])} "
                     f"({_fmt_delta('quality', d['delta'])}{p})")
    parts.append(f"{len(c['newly_failing'])} newly failing")
    parts.append(f"{len(c['newly_passing'])} newly passing")
    if c["still_failing"]:
        parts.append(f"{len(c['still_failing'])} still failing")
    text = ", ".join(parts)
    if not c["n_shared"]:
        text = "no query in common"
    if not c["comparable"]:
        text = f"not comparable ({c['why']}); {text}"
    return text


def _details(c: dict[str, Any], base: GateResult,
             by_new: dict[str, tuple[QueryResult, QueryResult]],
             since: set[str] | None) -> list[str]:
    lines: list[str] = []
    version = base.store.get("version")
    at = f"run {base.run_id}" + (f" (index v{version})" if version is not None else "")
    for qid in c["newly_failing"]:
        old, new = by_new[qid]
        head = (f"{qid} passed at {at} and fails now on {'+'.join(new.failed_rules)} (recall "
                f"{old.recall:.3f} → {new.recall:.3f})")
        missing = [h for h in new.expected if not h.in_top_k]
        old_rank = {h.id: h.rank for h in old.expected}
        fell = ", ".join(f"{h.id} {_rank(old_rank.get(h.id))} → {_rank(h.rank)}" for h in missing)
        if since is not None and c["buried_by"].get(qid):
            culprits = c["buried_by"][qid]
            first = culprits[0]
            if len(culprits) == 1:
                who = f"chunk {first['id']} now ranks {first['rank']}"
            else:
                who = "chunks " + ", ".join(f"{b['id']} (rank {b['rank']})" for b in culprits[:5])
                who += (f" and {len(culprits) - 5} more" if len(culprits) > 5 else "") + " now rank"
            lines.append(f"{head}: ingested since v{version}, {who} above its expected "
                         f"{first['expected_id']} (rank {_rank(first['expected_rank'])})")
        elif since is not None and missing:
            lines.append(f"{head}: nothing ingested since v{version} ranks above its expected "
                         f"chunks ({fell}); look at what changed in them, not at new content")
        elif missing:
            newcomers = c["entered_top_k"].get(qid, [])
            top = {cid: r for r, (cid, _) in enumerate(new.top, start=1)}
            shown = ", ".join(f"{x} ({top[x]})" for x in newcomers[:5]) or "none"
            lines.append(f"{head}: {fell}; new in its top-{new.top_k}: {shown}")
        else:
            lines.append(f"{head}: noise {old.noise} → {new.noise} (allowed {new.allowed_noise})")
        changed_expected = sorted({h.id for h in new.expected} & since) if since else []
        if changed_expected:
            lines.append(f"  (its expected chunk(s) {', '.join(changed_expected)} were themselves "
                         f"re-ingested since v{version})")
    for metric, d in c["deltas"].items():
        if d.get("significant"):
            lines.append(
                f"{_LABELS[metric]} {_fmt(metric, d['old'])} → {_fmt(metric, d['new'])} "
                f"({_fmt_delta(metric, d['delta'])}): significant, p={d['p_value']:.3g} "
                f"(Holm {d['p_holm']:.3g}), paired over {d['n']} queries"
            )
    if c["cost"]:
        lines.append("cost: " + ", ".join(
            f"{COST_LABELS[k]} {format_cost(k, d['old'])} → {format_cost(k, d['new'])}"
            + (f" ({d['increase']:+.0%}{cost_interval(d)})" if d["increase"] is not None
               else "")
            for k, d in c["cost"].items()))
    lines += [f"cost: {note}" for note in c["cost_notes"]]
    for qid in c["newly_passing"]:
        old, new = by_new[qid]
        lines.append(f"{qid} failed at run {base.run_id} and passes now (recall "
                     f"{old.recall:.3f} → {new.recall:.3f})")
    drops = sorted(
        ((qid, cid, r) for qid, moves in c["rank_changes"].items() for cid, r in moves.items()
         if qid not in c["newly_failing"] and _worse(r[0], r[1])),
        key=lambda t: -_gap(t[2][0], t[2][1]),
    )
    for qid, cid, (a, b) in drops[:5]:
        lines.append(f"{qid}: expected {cid} fell {_rank(a)} → {_rank(b)}")
    for key, label in (("queries_changed", "changed their expected chunks"),
                       ("queries_added", "are new"), ("queries_removed", "were removed")):
        if c[key]:
            ids = c[key]
            lines.append(f"{len(ids)} quer{'y' if len(ids) == 1 else 'ies'} {label} "
                         f"(not compared): {', '.join(ids[:8])}{' …' if len(ids) > 8 else ''}")
    return lines


def _worse(a: int | None, b: int | None) -> bool:
    if a is None:
        return False
    return b is None or b > a


def _gap(a: int | None, b: int | None) -> int:
    return (10**6 if b is None else b) - (a or 0)


def compare_many_runs(runs: Sequence[GateResult], *, all_pairs: bool = False, seed: int = 0,
                      n_resamples: int = 10_000) -> MultiComparison:
    """Several gate runs side by side on the queries all of them scored (same id, same expected
    chunks and K): the mean of each tested measure per run, and paired randomization tests
    against the first run (or every pair), Holm-corrected across the whole table. Runs on
    different golden sets or policies are refused: their numbers do not measure the same thing."""
    import numpy as np

    from recallwatch.errors import UsageError
    from recallwatch.stats import compare_many_scores

    first = runs[0]
    for run in runs[1:]:
        if first.dataset_hash != run.dataset_hash or first.policy_hash != run.policy_hash:
            why = [w for w in _why(first, run) if not w.startswith("config")]
            raise UsageError(f"run {run.run_id} is not comparable with {first.run_id}: "
                             f"{'; '.join(why)}")
    by_id = [{q.id: q for q in run.queries} for run in runs]
    shared = [qid for qid in by_id[0]
              if all(qid in m and _same_question(by_id[0][qid], m[qid]) for m in by_id[1:])]
    if not shared:
        raise UsageError("the runs share no query with the same expected chunks and K")
    scores = {run.run_id: {m: np.array([float(getattr(table[q], m)) for q in shared])
                           for m in TESTED_METRICS}
              for run, table in zip(runs, by_id, strict=True)}
    return compare_many_scores([r.run_id for r in runs], shared, scores, all_pairs=all_pairs,
                               seed=seed, n_resamples=n_resamples, alpha=_ALPHA)
