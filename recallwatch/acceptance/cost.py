"""What a gate run on a store cost, with its spread, and how two runs' costs differ.

Comparing quality while ignoring cost favours the more expensive system, so every run on a store
records its cost next to its quality:

* search latency: the wall time of one search call for one golden query, in milliseconds, as p50
  and p99 with their 95 % intervals (from the order statistics of the calls: no shape assumed).
  A quantile is stated only from the calls it needs (6 for the p50, 368 for the p99); with fewer
  the run says "not enough calls for a p99: 13 of 368 needed" instead. The calls are spread over
  the golden queries (the ranked lists the gate scores come from one batched call): by default as
  many as fit in 10 % of the time spent retrieving the whole set, at most 100; when the policy
  judges cost, 368 within 10 s (the queries taken again in rounds); or the number the run asks
  for (``latency_sample``, recorded in the run's configuration; 0 measures no cost);
* query embedding: the golden queries are embedded in one batch (its time divided by the number
  of queries); when the policy judges cost, up to 100 queries are also embedded alone, one call
  each, for a median with an interval;
* index bytes: the ANN index's size, where the store can say (``SupportsIndexSize``);
* the queries' embedding tokens (``embed_tokens``: ``{texts, tokens, unknown, from, hosted}``),
  where the embedder tells them: a hosted endpoint's ``usage.prompt_tokens``, or a local model's
  own tokenizer; the cost in money prices the hosted ones.

Every per-call time is kept (``samples``), so that a later run is compared with this one call for
call, not figure for figure.

How two runs' timings compare (:func:`compare_figure`). A run's calls vary by themselves (the
per-call spread, measured) and with the load of the machine at that moment, which slows every call
of a run and is invisible within it. So:

* when the baseline's index was timed in the same run, interleaved call for call with the
  candidate's (:class:`~recallwatch.acceptance.retrieve.LatencyBaseline`: the baseline run's
  index version, on the same store or on the store it searched if that can still be opened),
  both shared the load, and an increase is real when the candidate's quantile is surely above
  the baseline's: the low end of its 95 % interval above the high end of the baseline's
  (:func:`recallwatch.stats.quantile_ratio`);
* otherwise the stored calls of both runs are compared the same way, and an increase is real
  only when the candidate's low end is above the baseline's high end times the load factor
  (default 2: a run on a busy machine may be up to twice as slow as the same index on an idle
  one; the policy's ``cost_load_factor``). Load inflates a run's slowest calls far more than its
  bulk, so for a p99 timed apart the evidence is read from the median: the p99 must rise past
  the cap and the median past the load factor;
* the query embedding, when both runs used the same embedder (its fingerprint), cannot have
  changed with the deployment: a change of its time is the machine's, and never blocks.

Index bytes do not vary with load: they compare exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the history reads the labels below without loading the retrieval code
    from recallwatch.acceptance.retrieve import Timings
    from recallwatch.stats import QuantileRatio

__all__ = ["CAPPED", "COST_LABELS", "LOAD_FACTOR", "MIN_CALLS", "FigureChange", "compare_figure",
           "cost_deltas", "cost_interval", "cost_line", "cost_notes", "format_cost",
           "measure_cost"]

#: The cost figures a run records, as a reader names them.
COST_LABELS: dict[str, str] = {
    "search_p50_ms": "search latency p50 (ms)",
    "search_p99_ms": "search latency p99 (ms)",
    "embed_ms_per_query": "query embedding (ms/query)",
    "embed_p50_ms": "query embedding alone p50 (ms)",
    "index_bytes": "index bytes",
}
#: The figures ``max_cost_increase`` caps (the search p99 judged by its median when the calls
#: are too few for a p99; the embedding by its per-call median).
CAPPED: tuple[str, ...] = ("search_p99_ms", "embed_p50_ms", "index_bytes")
#: How much slower machine load alone may make a run timed apart from its baseline.
LOAD_FACTOR = 2.0
#: Fewest calls on each side for a comparison of timings.
MIN_CALLS = 20
LEVEL = 0.95
# Figures compared from per-call samples: figure -> (samples key, quantile)
_TIMED: dict[str, tuple[str, float]] = {
    "search_p50_ms": ("search_ms", 0.5),
    "search_p99_ms": ("search_ms", 0.99),
    "embed_p50_ms": ("embed_ms", 0.5),
}


def measure_cost(timings: Timings, index_bytes: int | None) -> dict[str, Any] | None:
    """The cost of a run from its source's timings (None when nothing was searched)."""
    import numpy as np

    if not timings.search_each:
        return None
    ms = np.asarray(timings.search_each, dtype=np.float64) * 1000.0
    embed = np.asarray(timings.embed_each, dtype=np.float64) * 1000.0
    cost: dict[str, Any] = {
        "queries": timings.timed_queries or int(ms.size),
        "calls": int(ms.size),
        **_quantiles("search", ms, (0.5, 0.99)),
        "search_mean_ms": float(ms.mean()),
        "search_max_ms": float(ms.max()),
        "embed_ms_per_query": (timings.embed * 1000.0 / timings.embedded
                               if timings.embedded else None),
        "embed_calls": int(embed.size),
        **_quantiles("embed", embed, (0.5,)),
        "index_bytes": index_bytes,
        # the golden queries' tokens as the embedder counted them (None: it does not tell)
        "embed_tokens": (None if timings.embed_tokens is None
                         else timings.embed_tokens.to_dict()),
        "level": LEVEL,
        "samples": {"search_ms": _rounded(ms), "embed_ms": _rounded(embed)},
    }
    if timings.baseline is not None and timings.baseline_each:
        base = np.asarray(timings.baseline_each, dtype=np.float64) * 1000.0
        cost["baseline"] = {**timings.baseline, "calls": int(base.size),
                            **_quantiles("search", base, (0.5, 0.99)),
                            "search_ms": _rounded(base)}
    return cost


def _rounded(ms: Any) -> list[float]:
    return [round(float(x), 4) for x in ms]


def _quantiles(prefix: str, ms: Any, qs: tuple[float, ...]) -> dict[str, Any]:
    """``{prefix}_p50_ms`` and its interval, and so on: None (and the reason) where the calls are
    too few."""
    from recallwatch.stats import quantile

    out: dict[str, Any] = {}
    for q in qs:
        est = quantile(ms, q, LEVEL)
        key = f"{prefix}_{est.name}_ms"
        out[key] = est.value
        out[f"{prefix}_{est.name}_ci_ms"] = None if est.low is None else [est.low, est.high]
        if not est.enough and ms.size:
            out[f"{prefix}_{est.name}_missing"] = est.missing()
    return out


def _calls(cost: Mapping[str, Any], key: str) -> int:
    """How many calls a run's figure rests on (a run recorded before ``calls`` existed timed
    one call per query)."""
    if key.startswith("embed"):
        return int(cost.get("embed_calls") or 0)
    return int(cost.get("calls", cost.get("queries")) or 0)


def _samples(cost: Mapping[str, Any], name: str) -> list[float]:
    return list((cost.get("samples") or {}).get(name) or [])


@dataclass(frozen=True)
class FigureChange:
    """One cost figure of a run against a baseline's: the values, and for a timing the ratio of
    their per-call samples (or why there is none)."""

    key: str
    old: float | None
    new: float | None
    ratio: QuantileRatio | None = None
    # why the figure is not compared, or compared in another's place ("the p99 needs 368 calls:
    # judged by the median")
    note: str | None = None
    judged_as: str | None = None  # the figure actually compared, when not ``key`` itself
    # why a change of this figure cannot be the deployment's (the same embedder as the
    # baseline's: its time changes only with the machine)
    explained: str | None = None
    # the ratio whose interval decides whether the change is real, when not ``ratio`` itself:
    # timed apart, the median's (load inflates the slowest calls of a run far more than its
    # bulk, so a p99 of two moments says more about the machine than about the index)
    test: QuantileRatio | None = None

    @property
    def evidence_ratio(self) -> QuantileRatio | None:
        return self.test if self.test is not None else self.ratio

    @property
    def label(self) -> str:
        return COST_LABELS[self.judged_as or self.key]

    @property
    def increase(self) -> float | None:
        if self.old is None or self.new is None or self.old <= 0:
            return None
        return (self.new - self.old) / self.old

    @property
    def real(self) -> bool:
        """The increase is more than noise: the whole interval of the ratio lies above its bound
        (1 timed interleaved, the load factor timed apart); an exact figure rose at all."""
        if self.explained is not None:
            return False
        t = self.evidence_ratio
        if t is None:
            return self.increase is not None and self.increase > 0
        return t.real

    def evidence(self) -> str:
        """The figures behind the comparison, in words."""
        r, t = self.ratio, self.evidence_ratio
        if self.explained is not None:
            return self.explained
        if r is None or t is None:
            return "exact figures" if self.key == "index_bytes" else (self.note or "")
        interval = (f"{r.new.name} now {r.new.low:.2f}–{r.new.high:.2f} ms, at the baseline "
                    f"{r.old.low:.2f}–{r.old.high:.2f} ms (95 % intervals over {r.calls[1]} and "
                    f"{r.calls[0]} calls): ×{r.low:.2f} to ×{r.high:.2f}")
        if r.paired:
            return (f"{interval}, timed interleaved in this run, call for call (the load of the "
                    "moment is shared)")
        if t is r:
            return (f"{interval}, timed apart, when a busy machine alone can make a run up to "
                    f"×{r.bound:g} slower")
        return (f"{interval}, timed apart; the median ×{t.low:.2f} to ×{t.high:.2f}, when a busy "
                f"machine alone can make a run's median up to ×{t.bound:g} slower and its "
                "slowest calls slower still")

    def to_dict(self) -> dict[str, Any]:
        r, t = self.ratio, self.evidence_ratio
        return {"old": self.old, "new": self.new,
                "delta": None if self.old is None or self.new is None else self.new - self.old,
                "increase": self.increase, "judged_as": self.judged_as, "note": self.note,
                "interval": None if r is None else [r.low, r.high],
                "calls": None if r is None else list(r.calls),
                "paired": None if r is None else r.paired,
                "bound": None if t is None else t.bound,
                "evidence_quantile": None if t is None else t.q,
                "evidence_interval": None if t is None else [t.low, t.high],
                "real": self.real if self.old is not None and self.new is not None else None}


def compare_figure(key: str, base: Mapping[str, Any], current: Mapping[str, Any], *,
                   base_run: str | None = None, load_factor: float = LOAD_FACTOR,
                   same_embedder: bool = False) -> FigureChange:
    """``key`` of ``current`` against ``base`` (two runs' cost dicts). A timing is compared from
    the per-call samples: interleaved pairs when ``current`` timed the baseline run ``base_run``'s
    index beside its own, else both runs' stored calls with the load factor as the bound. A p99
    whose calls are too few is judged by the median instead, and so said. ``same_embedder``: both
    runs embedded with the same embedder (fingerprint), so a change of the embedding time is the
    machine's, never real."""
    if key not in _TIMED:
        old, new = base.get(key), current.get(key)
        return FigureChange(key, old, new, note=None if old is not None and new is not None
                            else f"{COST_LABELS[key]} not measured in both runs")
    sample, q = _TIMED[key]
    old_calls, new_calls, paired = _sides(sample, base, current, base_run)
    if min(len(old_calls), len(new_calls)) < MIN_CALLS:
        why = _missing_samples(base, current, sample, len(old_calls), len(new_calls), base_run)
        return FigureChange(key, None, None, note=why)
    judged, note = key, None
    if q > 0.5 and not (_enough(old_calls, q) and _enough(new_calls, q)):
        from recallwatch.stats import calls_needed

        short = min(len(old_calls), len(new_calls))
        note = (f"not enough calls for a p99: {short} of {calls_needed(q, LEVEL)} needed; "
                "judged by the median instead")
        judged, q = "search_p50_ms", 0.5
    from recallwatch.stats import quantile_ratio

    bound = 1.0 if paired else load_factor
    ratio = quantile_ratio(new_calls, old_calls, q, bound=bound, paired=paired, level=LEVEL)
    test = (None if paired or q <= 0.5 else
            quantile_ratio(new_calls, old_calls, 0.5, bound=bound, level=LEVEL))
    import numpy as np

    old = float(np.percentile(old_calls, 100 * q))
    new = float(np.percentile(new_calls, 100 * q))
    explained = None
    if same_embedder and sample == "embed_ms":
        explained = (f"×{ratio.low:.2f} to ×{ratio.high:.2f} (95 % intervals over "
                     f"{ratio.calls[1]} and {ratio.calls[0]} calls), with the embedder "
                     f"{'the baseline' if base_run is None else 'run ' + base_run} used (the "
                     "same fingerprint): its time changes with the machine, not with the "
                     "deployment")
    return FigureChange(key, old, new, ratio, note, None if judged == key else judged, explained,
                        test)


def _sides(sample: str, base: Mapping[str, Any], current: Mapping[str, Any],
           base_run: str | None) -> tuple[list[float], list[float], bool]:
    """(old calls, new calls, paired): the interleaved pairs of this run when it timed the
    baseline run's index, else each run's own calls."""
    timed = current.get("baseline") or {}
    if (sample == "search_ms" and base_run is not None and timed.get("run_id") == base_run
            and len(timed.get("search_ms") or ()) == len(_samples(current, sample))):
        return list(timed["search_ms"]), _samples(current, sample), True
    return _samples(base, sample), _samples(current, sample), False


def _enough(calls: list[float], q: float) -> bool:
    from recallwatch.stats import calls_needed

    return len(calls) >= calls_needed(q, LEVEL)


def _missing_samples(base: Mapping[str, Any], current: Mapping[str, Any], sample: str,
                     n_old: int, n_new: int, base_run: str | None) -> str:
    what = "query embedding calls" if sample == "embed_ms" else "search calls"
    if "samples" not in base:
        run = f"run {base_run}" if base_run else "the baseline run"
        return (f"{run} kept no per-call timings (recorded before they were kept), so an "
                "increase cannot be told from noise; the next accepted run will serve")
    if sample == "embed_ms" and not (n_old and n_new):
        return ("the query embedding was not timed one query per call in both runs (it is "
                "when the policy sets max_cost_increase)")
    return (f"not enough {what} to tell an increase from noise: {min(n_old, n_new)} of "
            f"{MIN_CALLS} needed on each side (raise --latency-sample)")


def cost_deltas(base: Mapping[str, Any] | None,
                current: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per cost figure both runs state: old, new, delta and the relative increase (None when the
    old value is 0: an increase from nothing has no ratio); for a timing also ``interval`` (the
    95 % interval of new / old from the per-call samples, None without them), ``calls``,
    ``paired`` and ``real`` (see :class:`FigureChange`). A quantile either run states from
    fewer calls than it needs is left out (:func:`cost_notes` says why)."""
    if not base or not current:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for key in COST_LABELS:
        old, new = base.get(key), current.get(key)
        if old is None or new is None or _unstated(key, base) or _unstated(key, current):
            continue
        entry: dict[str, Any] = {"old": old, "new": new, "delta": new - old,
                                 "increase": (new - old) / old if old > 0 else None}
        if key in _TIMED:
            change = compare_figure(key, base, current)
            if change.ratio is not None and change.judged_as is None:
                entry.update({k: v for k, v in change.to_dict().items()
                              if k in ("interval", "calls", "paired", "real")})
        out[key] = entry
    return out


def _unstated(key: str, cost: Mapping[str, Any]) -> bool:
    """A quantile recorded from fewer calls than it needs (runs recorded before that was
    checked stated one anyway)."""
    if key not in _TIMED:
        return False
    return not _enough([0.0] * _calls(cost, key), _TIMED[key][1])


def cost_notes(base: Mapping[str, Any] | None, current: Mapping[str, Any] | None,
               load_factor: float = LOAD_FACTOR) -> list[str]:
    """What a reader of two runs' cost deltas must know: the quantiles left out for want of calls,
    and, for timings measured at different moments, how far load alone moves them."""
    if not base or not current:
        return []
    from recallwatch.stats import calls_needed

    notes = []
    for key, (_, q) in _TIMED.items():
        short = [n for n in (_calls(base, key), _calls(current, key))
                 if n < calls_needed(q, LEVEL)]
        if short and (base.get(key) is not None or current.get(key) is not None
                      or key == "search_p99_ms"):
            name = key.split("_")[1]
            notes.append(f"{COST_LABELS[key]} not compared: not enough calls for a {name}: "
                         f"{min(short)} of {calls_needed(q, LEVEL)} needed")
    timed = [k for k in COST_LABELS if k != "index_bytes" and not _unstated(k, base)
             and not _unstated(k, current)]
    if any(base.get(k) is not None and current.get(k) is not None for k in timed):
        notes.append(f"timings of two runs measured at different moments: a busy machine alone "
                     f"can make a run up to ×{load_factor:g} slower, so only a change whose "
                     "interval lies beyond that says the index changed")
    return notes


def cost_interval(delta: Mapping[str, Any]) -> str:
    """The interval of a :func:`cost_deltas` entry in words (empty without one): ``", 95 %
    interval ×0.91–×1.37 over 368 and 368 calls"``."""
    interval, calls = delta.get("interval"), delta.get("calls")
    if not interval or not calls:
        return ""
    return (f", 95 % interval ×{interval[0]:.2f}–×{interval[1]:.2f} over {calls[0]} and "
            f"{calls[1]} calls")


def cost_line(cost: Mapping[str, Any]) -> str:
    """One line for a report: what the run cost, each quantile with its interval or the reason
    it is not stated."""
    n, queries = _calls(cost, "search"), cost.get("queries", 0)
    over = f"{n} calls" + (f" on {queries} queries" if queries != n else "")
    parts = [f"search latency {_stated(cost, 'search', 'p50')}, {_stated(cost, 'search', 'p99')} "
             f"over {over}"]
    if cost.get("embed_ms_per_query") is not None:
        parts.append(f"query embedding {cost['embed_ms_per_query']:.1f} ms/query")
    if cost.get("embed_calls"):
        parts.append(f"one query embedded alone {_stated(cost, 'embed', 'p50')} over "
                     f"{cost['embed_calls']} calls")
    if cost.get("baseline"):
        b = cost["baseline"]
        parts.append(f"baseline run {b.get('run_id')}'s index (v{b.get('version')}) timed "
                     f"interleaved: {_stated(b, 'search', 'p50')}, {_stated(b, 'search', 'p99')}")
    if cost.get("index_bytes") is not None:
        parts.append(f"ANN index {_bytes(cost['index_bytes'])}")
    return "cost: " + "; ".join(parts)


def _stated(cost: Mapping[str, Any], prefix: str, name: str) -> str:
    value = cost.get(f"{prefix}_{name}_ms")
    if value is None:
        return cost.get(f"{prefix}_{name}_missing") or f"{name} not measured"
    ci = cost.get(f"{prefix}_{name}_ci_ms")
    interval = f" [{ci[0]:.1f}–{ci[1]:.1f}]" if ci else ""
    return f"{name} {value:.1f} ms{interval}"


def format_cost(key: str, value: float) -> str:
    if key == "index_bytes":
        return _bytes(value)
    return f"{value:.2f}"


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"
