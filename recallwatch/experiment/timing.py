"""The variants' search latency, timed side by side so that it compares.

Each variant's gate times its own queries while it is judged, and the variants are judged one
after another: on a shared machine their latencies then differ by the load of the moment as much
as by the pipelines. Here every built variant is opened at once and the same queries are searched
through each of them interleaved, one call at a time: for each round and each query, every
variant in turn, in a random order (seeded), after a garbage collection, so that none is always
first or always follows the same variant. A variant's latency is the median
of its calls with a distribution-free 95 % interval (:func:`recallwatch.stats.quantile_interval`);
two variants are compared query by query (the median of each query's calls over the rounds, as a
log ratio), with a paired randomization test and Holm's correction across every pair: one is
*cheaper* than another only when that test says so.

Without timing (``rounds=0``) the latencies are the ones each gate measured, at different
moments; :class:`Costs` then holds no comparison, and no variant counts as cheaper than another.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch.errors import UsageError

if TYPE_CHECKING:
    import numpy as np

    from recallwatch.experiment.plan import Plan, VariantSpec

__all__ = ["DEFAULT_ROUNDS", "TIMED_QUERIES", "Costs", "compare_latencies", "time_interleaved",
           "time_variants"]

#: Rounds of the interleaved timing by default: each query searched this many times per variant.
DEFAULT_ROUNDS = 3
#: At most this many golden queries are timed (spread evenly over the set).
TIMED_QUERIES = 20
_ALPHA = 0.05


@dataclass(frozen=True)
class Costs:
    """Each variant's search latency and which variant is cheaper than which, with evidence.

    ``how`` is ``"interleaved"`` (timed here, side by side) or ``"separate"`` (each gate's own
    timings, at different moments: no comparison is made). ``latency[name]`` is the p50 with its
    interval (:meth:`recallwatch.stats.QuantileInterval.to_dict`) and the p99 when the calls
    can bound it; ``pairs`` holds the tests, ``(a, b) -> {"ratio", "ci", "p", "p_holm"}`` with
    ``ratio`` b's latency over a's (the geometric mean over the queries)."""

    how: str
    latency: dict[str, dict[str, Any]]
    pairs: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    rounds: int = 0
    queries: int = 0
    alpha: float = _ALPHA

    def p50(self, name: str) -> float | None:
        entry = self.latency.get(name)
        return None if entry is None else float(entry["p50"]["value"])

    def relation(self, a: str, b: str) -> int:
        """-1 when ``a`` is significantly cheaper than ``b``, 1 when ``b`` is cheaper than ``a``,
        0 when the timings cannot tell (or were not compared)."""
        if a == b:
            return 0
        test = self.pairs.get((a, b))
        flip = 1
        if test is None:
            test, flip = self.pairs.get((b, a)), -1
        if test is None or test["p_holm"] > self.alpha or test["ratio"] == 1.0:
            return 0
        # ratio = latency(second) / latency(first): above 1, the first of the pair is cheaper
        first_cheaper = test["ratio"] > 1.0
        return -flip if first_cheaper else flip

    def comparison(self, a: str, b: str) -> str:
        """How ``b``'s latency compares with ``a``'s, in words, with the evidence."""
        test = self.pairs.get((a, b))
        inverse = test is None
        if inverse:
            test = self.pairs.get((b, a))
        if test is None:
            return "not compared (timed at different moments)"
        ratio, (lo, hi) = test["ratio"], test["ci"]
        if inverse:
            ratio, lo, hi = 1.0 / ratio, 1.0 / hi, 1.0 / lo
        return (f"{b}'s latency is {ratio:.2f}× {a}'s (95 % interval {lo:.2f}–{hi:.2f}, "
                f"p {test['p']:.2g}, after Holm {test['p_holm']:.2g})")

    def describe(self) -> str:
        """How the latencies were measured, for the report's legend."""
        if self.how == "interleaved":
            return (f"search latency timed side by side after the builds: {self.queries} "
                    f"queries × {self.rounds} rounds per variant, the variants interleaved "
                    "call by call; p50 with its 95 % interval, p99 only when the calls can "
                    "bound it; a variant is cheaper than another only when a paired test on "
                    "the queries says so (Holm across the pairs)")
        return ("search latency: each variant's gate timed its own queries, one call each, at "
                "a different moment from the others (load differs between them), so no "
                "variant counts as cheaper than another")

    def to_dict(self) -> dict[str, Any]:
        return {"how": self.how, "rounds": self.rounds, "queries": self.queries,
                "alpha": self.alpha, "latency": self.latency,
                "tests": [{"a": a, "b": b, **t} for (a, b), t in self.pairs.items()]}


def time_interleaved(searches: Mapping[str, Callable[[str], object]], texts: Sequence[str],
                     rounds: int, *, clock: Callable[[], float] = time.perf_counter,
                     seed: int = 0, collect: Callable[[], object] = gc.collect,
                     ) -> dict[str, np.ndarray]:
    """Seconds of each call: ``out[name][r, j]`` is round ``r``'s search of ``texts[j]`` by
    variant ``name``. An untimed round first: every query through every variant, so that what
    a store loads lazily on its first searches (index partitions, caches) is loaded for all of
    them before any call is timed. For each query the variants run in a fresh random order
    (seeded), after a garbage collection: a variant that leaves garbage behind (a Python
    reranker) must not slow down whichever variant always comes next."""
    import numpy as np

    if rounds < 1:
        raise UsageError(f"timing rounds must be at least 1, got {rounds}")
    names = list(searches)
    rng = np.random.default_rng(seed)
    out = {n: np.empty((rounds, len(texts)), dtype=np.float64) for n in names}
    for r in range(-1, rounds):  # round -1: the warm-up
        for j, text in enumerate(texts):
            collect()
            for i in rng.permutation(len(names)):
                n = names[int(i)]
                t0 = clock()
                searches[n](text)
                if r >= 0:
                    out[n][r, j] = clock() - t0
    return out


def compare_latencies(seconds: Mapping[str, np.ndarray], *, alpha: float = _ALPHA,
                      seed: int = 0) -> Costs:
    """:class:`Costs` from interleaved timings (``seconds[name]``: rounds × queries)."""
    import numpy as np

    from recallwatch.stats import bootstrap_ci, holm, paired_test, quantile_interval

    names = list(seconds)
    latency: dict[str, dict[str, Any]] = {}
    for n in names:
        ms = np.asarray(seconds[n], dtype=np.float64) * 1000.0
        p99 = quantile_interval(ms, 0.99)
        latency[n] = {"calls": int(ms.size), "p50": quantile_interval(ms, 0.5).to_dict(),
                      "p99": p99.to_dict() if p99.bounded else None}
    # per query, the median of its rounds, as a log: a ratio of latencies is a difference here
    logs = {n: np.log(np.maximum(np.median(seconds[n], axis=0), 1e-9)) for n in names}
    raw: list[tuple[str, str, float, tuple[float, float], float]] = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if logs[a].size < 2:
                continue
            ci = bootstrap_ci(logs[a], logs[b], seed=seed)
            p = paired_test(logs[a], logs[b], seed=seed).p_value
            ratio = float(np.exp(np.mean(logs[b] - logs[a])))
            raw.append((a, b, ratio, (float(np.exp(ci.low)), float(np.exp(ci.high))), p))
    adjusted: list[float] = [float(x) for x in holm([r[4] for r in raw])] if raw else []
    pairs = {(a, b): {"ratio": ratio, "ci": list(ci), "p": p, "p_holm": float(ph)}
             for (a, b, ratio, ci, p), ph in zip(raw, adjusted, strict=True)}
    shape = next(iter(seconds.values())).shape if seconds else (0, 0)
    return Costs("interleaved", latency, pairs, rounds=int(shape[0]), queries=int(shape[1]),
                 alpha=alpha)


def separate_costs(costs: Mapping[str, Mapping[str, Any]]) -> Costs:
    """:class:`Costs` from each gate's own timings (``VariantOutcome.cost()``): no comparison."""
    latency = {n: {"calls": int(c.get("latency_queries") or 0),
                   "p50": {"value": c["search_p50_ms"], "low": None, "high": None,
                           "n": int(c.get("latency_queries") or 0), "level": 0.95},
                   "p99": None}
               for n, c in costs.items() if c.get("search_p50_ms") is not None}
    return Costs("separate", latency)


def time_variants(plan: Plan, specs: Sequence[VariantSpec], cache: Path, rounds: int,
                  *, queries: int = TIMED_QUERIES) -> Costs | None:
    """Open every built variant's pipeline (the builds are in ``cache``) and time them
    interleaved on up to ``queries`` golden queries; None with ``rounds`` 0."""
    from recallwatch.acceptance.retrieve import latency_rows
    from recallwatch.experiment.build import build_variant
    from recallwatch.experiment.evaluate import pipeline_spec
    from recallwatch.formats.golden import load_golden
    from recallwatch.retrievers.pipeline import Pipeline

    if rounds == 0:
        return None
    golden = load_golden(plan.golden)
    texts = [golden.queries[i].text for i in latency_rows(len(golden.queries), queries)]
    with ExitStack() as stack:
        searches: dict[str, Callable[[str], object]] = {}
        for v in specs:
            pipe = stack.enter_context(Pipeline.from_spec(
                pipeline_spec(plan, v, build_variant(plan, v, cache)), base_dir=plan.base_dir))
            searches[v.name] = _one_search(pipe, plan.depth)
        seconds = time_interleaved(searches, texts, rounds)
    return compare_latencies(seconds)


def _one_search(pipe: Any, depth: int) -> Callable[[str], object]:
    def search(text: str) -> object:
        return pipe.search([text], depth)

    return search
