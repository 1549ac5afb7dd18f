"""Running a plan: build every variant once (cached), judge each one, time them side by side,
test each against the base, and choose the winner or keep the base.

With a golden set split into ``tune`` and ``test`` queries, a variant wins only when it beats the
base on ``tune`` with evidence and is confirmed on ``test``, which the choice has not seen
(:mod:`recallwatch.experiment.choice`); the table's paired tests against the base are run on
``test``. Without a split, the winner is chosen and judged on the same queries, and the result
says so.

``engine="ray"`` builds and judges the variants as Ray tasks; the work and its inputs are the
same, so every number but the timings is the same as the local path's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from recallwatch.experiment.build import Build, build_keys, build_variant
from recallwatch.experiment.choice import Choice, choose
from recallwatch.experiment.evaluate import METRICS, VariantOutcome, evaluate_variant
from recallwatch.experiment.plan import Plan, VariantSpec
from recallwatch.experiment.timing import DEFAULT_ROUNDS, Costs, separate_costs, time_variants

__all__ = ["SCHEMA", "ExperimentResult", "run_experiment"]

SCHEMA = "recallwatch.experiment/1"
_ALPHA = 0.05
#: warn when judged@K of two variants differs by more than this (a share, 0 to 1)
JUDGED_SPREAD = 0.2
_T = TypeVar("_T")


@dataclass
class ExperimentResult:
    plan: Plan
    outcomes: list[VariantOutcome]  # the base first, then the variants in the plan's order
    vs_base: dict[str, dict[str, dict[str, Any]]]  # variant -> metric -> delta, p, p_holm…
    choice: Choice  # the winner (or the base), with the evidence of each step
    built: dict[str, list[str]]  # "corpus" / "index" -> the variants whose build ran now
    reused: dict[str, list[str]]  # the variants whose build came from the cache
    warnings: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.outcomes[0].name

    @property
    def winner(self) -> str:
        """The variant that beat the base with evidence, or the base's name."""
        return self.choice.winner

    @property
    def chosen_on(self) -> str:
        return self.choice.chosen_on

    @property
    def judged_on(self) -> str:
        return self.choice.judged_on

    @property
    def confirmed(self) -> bool | None:
        """On test: the chosen variant was confirmed (None: no split, or none was chosen)."""
        return self.choice.confirmed

    def outcome(self, name: str) -> VariantOutcome:
        return next(o for o in self.outcomes if o.name == name)

    def summary(self) -> list[str]:
        """What a person reads first: the winner or "keep the base", the evidence, the
        quality-cost front, how latency was timed, and what was rebuilt."""
        lines = list(self.choice.lines)
        for kind in ("corpus", "index"):
            built, reused = self.built[kind], self.reused[kind]
            if built or reused:
                lines.append(f"{kind} builds: {len(built)} built, {len(reused)} from the cache")
        return [*lines, *self.warnings]

    def to_dict(self) -> dict[str, Any]:
        variants = []
        timed = self.choice.costs.latency if self.choice.costs.how == "interleaved" else {}
        for o in self.outcomes:
            scored = o.parts[self.judged_on]
            cost = o.cost()
            if o.name in timed:
                cost["side_by_side"] = timed[o.name]
            record: dict[str, Any] = {
                "name": o.name, "config": o.config, "verdict": scored.verdict,
                "metrics": scored.metrics, "candidate_recall": scored.candidate_recall,
                "failed_queries": scored.failed_queries, "cost": cost,
                "vs_base": self.vs_base.get(o.name, {}), "build": o.build,
                "per_query": scored.per_query,
                "choice": self.choice.status.get(o.name, ""),
                "dominated_by": self.choice.dominated_by.get(o.name, []),
            }
            if "tune" in o.parts:
                record["metrics_tune"] = o.parts["tune"].metrics
            variants.append(record)
        return {"schema": SCHEMA, "plan": str(self.plan.source), "variants": variants,
                "base": self.base, "winner": self.winner, "chosen_on": self.chosen_on,
                "judged_on": self.judged_on, "confirmed": self.confirmed,
                "choice": self.choice.to_dict(),
                "cache": {"built": self.built, "reused": self.reused},
                "warnings": self.warnings, "summary": self.summary()}


def run_experiment(plan: Plan, out: Path, *, engine: str = "local", address: str | None = None,
                   workers: int | None = None, timing_rounds: int = DEFAULT_ROUNDS
                   ) -> ExperimentResult:
    """Build, judge and compare every variant of ``plan``; caches under ``out/cache``.
    ``timing_rounds``: rounds of the side-by-side latency timing (0: none, each gate's own
    timings are reported, and no variant counts as cheaper than another)."""
    from recallwatch.scale import engine_session

    cache = out / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    specs = plan.all()
    with engine_session(engine, address, workers) as on_ray:  # type: ignore[arg-type]
        run = _ray_map if on_ray else _local_map
        # corpora first, then indexes (each key once), so no two tasks build the same folder
        corpora = _first_of(specs, lambda v: build_keys(plan, v)[0])
        done = run(_build_corpus, [(plan, v, cache) for v in corpora])
        indexes = _first_of([v for v in specs if v.dense], lambda v: str(build_keys(plan, v)[1]))
        done += run(build_variant, [(plan, v, cache) for v in indexes])
        outcomes = run(_build_and_evaluate, [(plan, v, cache) for v in specs])
    costs = time_variants(plan, specs, cache, timing_rounds)
    built: dict[str, list[str]] = {"corpus": [], "index": []}
    reused: dict[str, list[str]] = {"corpus": [], "index": []}
    made = {k for b in done for k in _made(b)}
    for v in specs:
        corpus_key, index_key = build_keys(plan, v)
        for kind, key in (("corpus", corpus_key), ("index", index_key)):
            if key is None:
                continue
            (built if key in made else reused)[kind].append(v.name)
            made.discard(key)  # a later variant with the same key shares the build
    return _judge(plan, outcomes, built, reused, costs)


def _made(b: Build) -> list[str]:
    return [key for kind, key in (("corpus", b.corpus_key), ("index", b.index_key))
            if kind in b.built and key is not None]


def _first_of(specs: Sequence[VariantSpec], key: Callable[[VariantSpec], str]
              ) -> list[VariantSpec]:
    seen: dict[str, VariantSpec] = {}
    for v in specs:
        seen.setdefault(key(v), v)
    return list(seen.values())


def _build_corpus(plan: Plan, variant: VariantSpec, cache: Path) -> Build:
    return build_variant(plan, replace(variant, retrieval="bm25", fuse=None), cache)


def _build_and_evaluate(plan: Plan, variant: VariantSpec, cache: Path) -> VariantOutcome:
    return evaluate_variant(plan, variant, build_variant(plan, variant, cache))


def _local_map(fn: Callable[..., _T], args: list[tuple[Any, ...]]) -> list[_T]:
    return [fn(*a) for a in args]


def _ray_map(fn: Callable[..., _T], args: list[tuple[Any, ...]]) -> list[_T]:
    from recallwatch.scale.ray_engine import require_ray

    ray = require_ray()
    task = ray.remote(num_cpus=1)(fn)
    return list(ray.get([task.remote(*a) for a in args]))


def _judge(plan: Plan, outcomes: list[VariantOutcome], built: dict[str, list[str]],
           reused: dict[str, list[str]], costs: Costs | None = None) -> ExperimentResult:
    split = "tune" in outcomes[0].parts
    judged_on = "test" if split else "all"
    warnings = sorted({w for o in outcomes for w in o.warnings})
    if not split:
        warnings.append("the golden set has no tune/test split, so the winner is chosen and "
                        "judged on the same queries: its lead may not hold on new questions "
                        "(`recallwatch golden split` assigns a split)")
    warnings += _judged_warning(outcomes, judged_on)
    choice = choose(outcomes, costs or separate_costs({o.name: o.cost() for o in outcomes}))
    return ExperimentResult(plan, outcomes, _vs_base(outcomes, judged_on), choice, built,
                            reused, warnings)


def _judged_warning(outcomes: list[VariantOutcome], part: str) -> list[str]:
    """A warning when judged@K differs much between variants: a variant whose top K holds
    chunks nobody labelled is scored as if they were wrong, so it may look worse than it is."""
    shares = {o.name: o.parts[part].metrics.get("judged_at_k") for o in outcomes}
    known = {n: float(s) for n, s in shares.items() if s is not None}
    if len(known) < 2:
        return []
    low = min(known, key=lambda n: known[n])
    high = max(known, key=lambda n: known[n])
    if known[high] - known[low] <= JUDGED_SPREAD:
        return []
    under = [n for n, s in known.items() if known[high] - s > JUDGED_SPREAD]
    return [f"judged@K (the share of each variant's top K that is labelled: an expected chunk, "
            f"a chunk holding a quoted fact, or a judged pair) differs between variants: "
            f"{known[high]:.2f} for {high} but {known[low]:.2f} for {low}. The scores count an "
            f"unlabelled result as not relevant, so {', '.join(under)} may rank low only "
            "because nobody judged what it finds: pool its results (`recallwatch label pool "
            "--pipeline`), judge them, and give the judgments to the plan (`judgments:`) before "
            "trusting the ranking"]


def _vs_base(outcomes: list[VariantOutcome], part: str) -> dict[str, dict[str, dict[str, Any]]]:
    """Each variant against the base on ``part``'s queries, metric by metric: a paired
    randomization test per variant, Holm-corrected across the variants."""
    import numpy as np

    from recallwatch.stats import compare_many_scores

    if len(outcomes) < 2:
        return {}
    names = [o.name for o in outcomes]
    out: dict[str, dict[str, dict[str, Any]]] = {n: {} for n in names[1:]}
    for metric, fieldname in METRICS.items():
        rows = [o.parts[part].per_query for o in outcomes]
        qids = [q for q in rows[0] if all(fieldname in r.get(q, {}) for r in rows)]
        if not qids:
            continue
        scores = {n: {metric: np.array([r[q][fieldname] for q in qids])}
                  for n, r in zip(names, rows, strict=True)}
        table = compare_many_scores(names, qids, scores, alpha=_ALPHA)
        for t in table.tests:
            out[t.b][metric] = {"delta": t.delta, "p": t.p, "p_holm": t.p_holm,
                                "significant": t.p_holm <= _ALPHA, "wins": t.wins,
                                "ties": t.ties, "losses": t.losses}
    return out
