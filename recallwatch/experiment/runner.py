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
from typing import TYPE_CHECKING, Any, TypeVar

from recallwatch._progress import Step
from recallwatch.acceptance.money import gate_serving, money_lines, price_serving
from recallwatch.errors import Interrupted
from recallwatch.experiment.build import Build, build_corpus, build_index, build_keys
from recallwatch.experiment.checks import check_golden_ids
from recallwatch.experiment.choice import Choice, choose
from recallwatch.experiment.evaluate import METRICS, VariantOutcome, evaluate_variant
from recallwatch.experiment.folder import claim, plan_path
from recallwatch.experiment.plan import Plan, VariantSpec
from recallwatch.experiment.timing import DEFAULT_ROUNDS, Costs, separate_costs, time_variants
from recallwatch.formats.prices import Prices

if TYPE_CHECKING:
    from recallwatch.stats import PairTest

__all__ = ["SCHEMA", "ExperimentResult", "run_experiment"]

SCHEMA = "recallwatch.experiment/1"
_ALPHA = 0.05
#: warn when judged@K of two variants differs by more than this (a share, 0 to 1)
JUDGED_SPREAD = 0.2
_T = TypeVar("_T")
_NO_GENERATOR = "the plan has no answers: section, so no generator answered"


@dataclass
class ExperimentResult:
    plan: Plan
    outcomes: list[VariantOutcome]  # the base first, then the variants in the plan's order
    vs_base: dict[str, dict[str, PairTest]]  # variant -> metric -> its test against the base
    choice: Choice  # the winner (or the base), with the evidence of each step
    built: dict[str, list[str]]  # "corpus" / "index" -> the variants whose build ran now
    reused: dict[str, list[str]]  # the variants whose build came from the cache
    warnings: list[str] = field(default_factory=list)
    prices: Prices | None = None  # each variant's cost in money is priced at these
    # the judge of the variants' answers, its agreement with people and how the answers were
    # used (recallwatch.experiment.answers.AnswerStep.judge_block); None: no answers: section
    answers: dict[str, Any] | None = None

    def money(self, name: str) -> dict[str, Any] | None:
        """What serving 1,000 queries costs with variant ``name`` at :attr:`prices` (None
        without prices): its gate's mean search call on the judged queries, its store's bytes,
        held in memory and on disk, and, with the plan's answers, its generator's tokens per
        answer as its model reported them."""
        if self.prices is None:
            return None
        o = self.outcome(name)
        part = o.parts[self.judged_on]
        m = part.metrics
        quality = {"mean quality": m.get("mean_quality"), "nDCG@K": m.get("mean_ndcg"),
                   "recall@K": m.get("mean_recall")}
        serving = gate_serving(part.cost, part.answers, quality)
        held = ("memory", "disk")
        missing = {k: v for k, v in serving.missing.items() if k not in held}
        sources = {k: v for k, v in serving.sources.items() if k not in held}
        if o.store_bytes is None:
            missing.update(dict.fromkeys(held, "no dense index: the store's bytes were not "
                                         "measured (BM25's index is not measured)"))
        else:
            sources.update(dict.fromkeys(held, f"the variant's store, {o.store_bytes:,} bytes"))
        not_part = dict(serving.not_part)
        if part.answers is None:
            not_part["LLM tokens"] = _NO_GENERATOR
        serving = replace(serving, memory_bytes=o.store_bytes, disk_bytes=o.store_bytes,
                          missing=missing, sources=sources, not_part=not_part)
        return price_serving(self.prices, serving)

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
        lines = [*self.choice.lines, *self._answer_lines()]
        for kind in ("corpus", "index"):
            built, reused = self.built[kind], self.reused[kind]
            if built or reused:
                lines.append(f"{kind} builds: {len(built)} built, {len(reused)} from the cache")
        for o in self.outcomes:
            money = self.money(o.name)
            if money is not None:
                lines += money_lines(money, f" with {o.name} (on the {self.judged_on} queries)")
        return [*lines, *self.warnings]

    def _answer_lines(self) -> list[str]:
        """The answers in words: the judge and its agreement, each variant's measures and
        failures, and that the choice did not use them."""
        if self.answers is None:
            return []
        from recallwatch.experiment.answers import answer_line

        lines = [f"answers on the {self.judged_on} queries, judged by the "
                 f"{self.answers['judge']['kind']} judge, {self.answers['line']}"]
        lines += [answer_line(o.name, o.parts[self.judged_on].answers) for o in self.outcomes]
        return [*lines, f"{self.answers['choice_note']}; {self.answers['cache_note']}"]

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
                "vs_base": {metric: _versus_base(test)
                            for metric, test in self.vs_base.get(o.name, {}).items()},
                "build": o.build,
                "per_query": scored.per_query,
                "choice": self.choice.status.get(o.name, ""),
                "dominated_by": self.choice.dominated_by.get(o.name, []),
                "money": self.money(o.name),
            }
            record["answers"] = scored.answers
            if "tune" in o.parts:
                record["metrics_tune"] = o.parts["tune"].metrics
                record["answers_tune"] = o.parts["tune"].answers
            variants.append(record)
        return {"schema": SCHEMA, "plan": str(self.plan.source),
                "plan_path": plan_path(self.plan), "variants": variants,
                "base": self.base, "winner": self.winner, "chosen_on": self.chosen_on,
                "judged_on": self.judged_on, "confirmed": self.confirmed,
                "choice": self.choice.to_dict(),
                "cache": {"built": self.built, "reused": self.reused},
                "answers": self.answers,
                "warnings": self.warnings, "summary": self.summary()}


def run_experiment(plan: Plan, out: Path, *, engine: str = "local", address: str | None = None,
                   workers: int | None = None, replace: bool = False,
                   progress: bool = False, timing_rounds: int = DEFAULT_ROUNDS,
                   prices: Prices | None = None) -> ExperimentResult:
    """Build, judge and compare every variant of ``plan``; caches under ``out/cache``.

    ``out`` (relative to the working folder) is held for the run: another experiment on it is
    refused, and so are another plan's results there unless ``replace``
    (:func:`recallwatch.experiment.folder.claim`). ``progress`` draws the steps on stderr.
    ``timing_rounds``: rounds of the side-by-side latency timing (0: none, each gate's own
    timings are reported, and no variant counts as cheaper than another). ``prices``: each
    variant's cost in money of serving 1,000 queries (:meth:`ExperimentResult.money`)."""
    from recallwatch._progress import steps
    from recallwatch.experiment.answers import answer_variant, open_answers
    from recallwatch.scale import engine_session

    with claim(out, plan, replace=replace) as folder:
        cache = folder / "cache"
        cache.mkdir(exist_ok=True)
        specs = plan.all()
        keys = {v.name: build_keys(plan, v) for v in specs}
        corpora = _first_of(specs, lambda v: keys[v.name][0])
        indexes = _first_of([v for v in specs if v.dense], lambda v: str(keys[v.name][1]))
        session = engine_session(engine, address, workers)  # type: ignore[arg-type]
        answering = open_answers(plan)  # a generator or judge that fails does so before builds
        shown = steps(len(corpora) + len(indexes) + len(specs) * (1 + (answering is not None)),
                      "experiment", enabled=progress)
        try:
            with session as on_ray, shown as step:
                work = _Work(plan, cache, keys, _ray_map if on_ray else _local_map, step)
                builds = work.build(corpora, indexes, progress and not on_ray)
                outcomes = work.run(evaluate_variant, [(plan, v, builds[v.name]) for v in specs],
                                    [f"judging {v.name}" for v in specs])
                if answering is not None:  # in this process: the generators are opened here
                    outcomes = _local_map(
                        lambda v, o: answer_variant(answering, v, o, builds[v.name].corpus_file),
                        list(zip(specs, outcomes, strict=True)),
                        [f"answers of {v.name}" for v in specs], step)
            costs = time_variants(plan, specs, cache, timing_rounds)
        except (KeyboardInterrupt, Interrupted):
            raise Interrupted(_kept(plan, folder, keys)) from None
    built = {kind: [v.name for v in specs if kind in builds[v.name].built]
             for kind in ("corpus", "index")}
    reused = {kind: [v.name for v in specs if kind not in builds[v.name].built
                     and (kind == "corpus" or v.dense)] for kind in ("corpus", "index")}
    result = _judge(plan, outcomes, built, reused, costs)
    result.prices = prices
    result.answers = None if answering is None else answering.judge_block()
    notes = {n: None for v in specs for n in builds[v.name].notes}
    result.warnings[:0] = list(notes)  # the cache entries rebuilt, first
    return result


@dataclass
class _Work:
    """One run's builds and judgings, in the order that lets no two tasks build one folder:
    the corpora (each key once), then the indexes, then every variant judged."""

    plan: Plan
    cache: Path
    keys: dict[str, tuple[str, str | None]]  # variant -> (corpus key, index key)
    map: Callable[..., list[Any]]  # _local_map or _ray_map
    step: Step

    def run(self, fn: Callable[..., _T], args: list[tuple[Any, ...]], labels: list[str]
            ) -> list[_T]:
        return list(self.map(fn, args, labels, self.step))

    def build(self, corpora: list[VariantSpec], indexes: list[VariantSpec],
              show_progress: bool) -> dict[str, Build]:
        """Each variant's build; ``built`` names what was built for it (the first variant with
        a key builds it, the others share it)."""
        by_corpus = dict(zip([self.keys[v.name][0] for v in corpora], self.run(
            build_corpus, [(self.plan, v, self.cache) for v in corpora],
            [f"chunks of {v.name}" + ("" if v.chunking is None else " (re-chunking)")
             for v in corpora]), strict=True))
        check_golden_ids(self.plan, self.keys, by_corpus)
        by_index = dict(zip([self.keys[v.name][1] for v in indexes], self.run(
            build_index, [(self.plan, v, self.cache, by_corpus[self.keys[v.name][0]],
                           show_progress) for v in indexes],
            [f"index of {v.name} ({v.embedder})" for v in indexes]), strict=True))
        builder: dict[tuple[str, str | None], str] = {
            **{("corpus", self.keys[v.name][0]): v.name for v in corpora},
            **{("index", self.keys[v.name][1]): v.name for v in indexes}}
        out = {}
        for v in self.plan.all():
            corpus_key, index_key = self.keys[v.name]
            corpus = by_corpus[corpus_key]
            b = corpus if index_key is None else by_index[index_key]
            mine = [kind for kind, key, made in (("corpus", corpus_key, corpus),
                                                 ("index", index_key, b))
                    if kind in made.built and builder.get((kind, key)) == v.name]
            out[v.name] = replace(b, built=tuple(mine))
        return out


def _first_of(specs: Sequence[VariantSpec], key: Callable[[VariantSpec], str]
              ) -> list[VariantSpec]:
    seen: dict[str, VariantSpec] = {}
    for v in specs:
        seen.setdefault(key(v), v)
    return list(seen.values())


def _local_map(fn: Callable[..., _T], args: list[tuple[Any, ...]], labels: list[str],
               step: Step) -> list[_T]:
    out = []
    for a, label in zip(args, labels, strict=True):
        step(label)
        out.append(fn(*a))
    return out


def _ray_map(fn: Callable[..., _T], args: list[tuple[Any, ...]], labels: list[str],
             step: Step) -> list[_T]:
    from recallwatch.scale.ray_engine import require_ray

    ray = require_ray()
    task = ray.remote(num_cpus=1)(fn)
    refs = [task.remote(*a) for a in args]
    label_of = dict(zip(refs, labels, strict=True))
    pending = list(refs)
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        step(f"{label_of[done[0]]}, done on Ray")
    return list(ray.get(refs))


def _kept(plan: Plan, folder: Path, keys: dict[str, tuple[str, str | None]]) -> str:
    """What an interrupted experiment leaves, and how to finish it."""
    cache = folder / "cache"
    corpora = {c for c, _ in keys.values()}
    indexes = {i for _, i in keys.values() if i is not None}
    kept = [sum((cache / f"{kind}-{k[:16]}" / "done.json").is_file() for k in group)
            for kind, group in (("corpus", corpora), ("index", indexes))]
    return (f"experiment interrupted before its results were written: {cache} keeps "
            f"{kept[0]} of the plan's {len(corpora)} chunk builds and {kept[1]} of its "
            f"{len(indexes)} index builds, each complete (a build cut short is built again); "
            f"any earlier results in {folder} are as they were. Run the same experiment again "
            f"(plan {plan.source}, the same output folder) to finish it: the builds kept are "
            "reused")


def _judge(plan: Plan, outcomes: list[VariantOutcome], built: dict[str, list[str]],
           reused: dict[str, list[str]], costs: Costs | None = None) -> ExperimentResult:
    split = "tune" in outcomes[0].parts
    judged_on = "test" if split else "all"
    warnings = sorted({w for o in outcomes for w in o.warnings})
    if not split:
        warnings.append("the golden set has no tune/test split, so the winner is chosen and "
                        "judged on the same queries: its lead may not hold on new questions "
                        "(`recallwatch golden split` assigns a split)")
    choice = choose(outcomes, costs or separate_costs({o.name: o.cost() for o in outcomes}))
    warnings += _judged_warning(outcomes, judged_on, choice.order)
    return ExperimentResult(plan, outcomes, _vs_base(outcomes, judged_on), choice, built,
                            reused, warnings)


def _judged_warning(outcomes: list[VariantOutcome], part: str, ranked: list[str]) -> list[str]:
    """A warning when judged@K differs much between variants: a variant whose top K holds
    chunks nobody labelled is scored as if they were wrong, so its scores are lower bounds. Each
    little-judged variant is named with the place it took in the ranking (``ranked``, best
    first): one ranked low may deserve better; one ranked top did so even with that handicap."""
    shares = {o.name: o.parts[part].metrics.get("judged_at_k") for o in outcomes}
    known = {n: float(s) for n, s in shares.items() if s is not None}
    if len(known) < 2:
        return []
    low = min(known, key=lambda n: known[n])
    high = max(known, key=lambda n: known[n])
    if known[high] - known[low] <= JUDGED_SPREAD:
        return []
    under = [n for n in ranked if n in known and known[high] - known[n] > JUDGED_SPREAD]
    places = "; ".join(
        f"{n} ranked {_ordinal(ranked.index(n) + 1)} of {len(ranked)}"
        + (" even so" if ranked.index(n) == 0 else ", and may deserve better") for n in under)
    return [f"judged@K (the share of each variant's top K that is labelled: an expected chunk, "
            f"a chunk holding a quoted fact, or a judged pair) differs between variants: "
            f"{known[high]:.2f} for {high} but {known[low]:.2f} for {low}. The scores count an "
            f"unlabelled result as not relevant, so those of a little-judged variant are lower "
            f"bounds: {places}. Pool their results (`recallwatch label pool --pipeline`), judge "
            "them, and give the judgments to the plan (`judgments:`) before trusting the "
            "ranking"]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _versus_base(t: PairTest) -> dict[str, Any]:
    """A variant's test against the base, as results.json keeps it."""
    return {"delta": t.delta, "p": t.p, "p_holm": t.p_holm, "significant": t.p_holm <= _ALPHA,
            "wins": t.wins, "ties": t.ties, "losses": t.losses}


def _vs_base(outcomes: list[VariantOutcome], part: str) -> dict[str, dict[str, PairTest]]:
    """Each variant against the base on ``part``'s queries, metric by metric: a paired
    randomization test per variant, Holm-corrected across the variants."""
    import numpy as np

    from recallwatch.stats import compare_many_scores

    if len(outcomes) < 2:
        return {}
    names = [o.name for o in outcomes]
    out: dict[str, dict[str, PairTest]] = {n: {} for n in names[1:]}
    for metric, fieldname in METRICS.items():
        rows = [o.parts[part].per_query for o in outcomes]
        qids = [q for q in rows[0] if all(fieldname in r.get(q, {}) for r in rows)]
        if not qids:
            continue
        scores = {n: {metric: np.array([r[q][fieldname] for q in qids])}
                  for n, r in zip(names, rows, strict=True)}
        table = compare_many_scores(names, qids, scores, alpha=_ALPHA)
        for t in table.tests:
            out[t.b][metric] = t
    return out
