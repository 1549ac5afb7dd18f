"""How often each automated decision is wrong: its false-alarm rate on unchanged inputs under
varying load, and its detection rate on a real change of known size. Real gates on the example
knowledge base (LanceDB + USE multilingual, built as examples/demo.sh builds it).

    .venv/bin/python benchmarks/decisions_bench.py [--decisions cost_rule,max_drop] [--gates 6]
                                                   [--changed 3] [--busy 2] [--out FILE.json]

One function per decision, each taking the shared :class:`Bench` and returning its figures;
:data:`DECISIONS` lists them by name (add the experiment winner, the reindex switch, the monitor
and drift alarms the same way):

* ``cost_rule`` — ``max_cost_increase: 0.25``, in both of its modes: the baseline's index timed
  interleaved in the same run (``interleaved``: the history's last accepted run on this same
  store), and the two runs timed apart (``apart``: no baseline index reachable). One accepted
  run on an idle machine, then ``--gates`` gates on the unchanged store, every other one with
  ``--busy`` CPU-bound processes running beside it: each ``cost_increase`` STOP is a false
  alarm. Then ``--changed`` gates (again alternating the load) on the store made 3× slower (a
  wrapper sleeping twice each single-query search call's own time): each STOP is a detection.
* ``max_drop`` — ``max_drop: {nDCG@10: 0.02}``: ``--gates`` gates on the unchanged store under
  alternating load (false alarms), then ``--changed`` gates each on a store whose top 10 is
  reversed for a random 10 % and for a random 30 % of the queries (a quality drop of known
  size: the nDCG@10 drop is printed), detections counted per size.
* ``latency_cap`` — ``max_latency_p99_ms`` 1.5× above an idle run's p99: stops on the unchanged
  store (idle and loaded gates apart: the cap is absolute, and load slows the users too) and on
  the store made 3× slower, beside what the point p99 alone would have stopped.

The machine's load average is recorded before and after; the figures go to stdout and, with
``--out``, to a JSON file.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from recallwatch.acceptance.gate import run_gate  # noqa: E402
from recallwatch.acceptance.model import GateResult  # noqa: E402
from recallwatch.embedders import get_embedder  # noqa: E402
from recallwatch.embedders.base import Embedder  # noqa: E402
from recallwatch.formats.golden import GoldenSet, load_golden  # noqa: E402
from recallwatch.formats.policy import Policy, load_policy  # noqa: E402
from recallwatch.formats.policy_limits import Limits  # noqa: E402
from recallwatch.history import latency_baseline, record_gate_run  # noqa: E402
from recallwatch.ops.ingest import ingest  # noqa: E402
from recallwatch.stores.base import Hits, VectorStore  # noqa: E402
from recallwatch.stores.lancedb.store import LanceStore  # noqa: E402

KB = ROOT / "examples" / "kb"


@dataclass
class Bench:
    """What every decision's function shares: the example store, its golden set and policy,
    the embedder, a scratch folder, and the run's settings."""

    store: LanceStore
    golden: GoldenSet
    policy: Policy
    embedder: Embedder
    scratch: Path
    gates: int
    changed: int
    busy: int

    def history(self, name: str) -> Path:
        return self.scratch / f"{name}.db"

    def loaded(self, i: int) -> bool:
        """Every other gate runs beside the busy processes (gate 0 on an idle machine)."""
        return i % 2 == 1


def _spin() -> None:
    x = 0
    while True:
        x += 1


@contextmanager
def busy_machine(processes: int, on: bool) -> Iterator[None]:
    """``processes`` CPU-bound loops running beside the block when ``on`` (a shared CI runner)."""
    if not on or processes <= 0:
        yield
        return
    spawn = multiprocessing.get_context("spawn")  # LanceDB is not fork-safe
    procs = [spawn.Process(target=_spin, daemon=True) for _ in range(processes)]
    for p in procs:
        p.start()
    try:
        time.sleep(1.0)  # the loops are running before the gate starts
        yield
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.join()


class SlowerIndex:
    """The store made ``factor`` times slower on single-query searches (the ones the gate
    times): each call sleeps ``factor - 1`` times its own duration, or with ``spin`` keeps its
    core busy that long (as an index doing that much more work would: a sleeping call on a
    loaded machine also waits for a core when it wakes). Exact searches keep their speed, and
    so do its baseline versions (``checkout``). ``calls``: the milliseconds of every slowed
    call, delay included (with ``factor`` 1, the store's own timed calls)."""

    def __init__(self, inner: Any, factor: float, spin: bool = False) -> None:
        self.inner, self.factor, self.spin = inner, factor, spin
        self.calls: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, vectors: np.ndarray, k: int, **kw: Any) -> list[Hits]:
        t0 = time.perf_counter()
        out: list[Hits] = self.inner.search(vectors, k, **kw)
        if len(vectors) == 1 and not kw.get("exact"):
            extra = (self.factor - 1.0) * (time.perf_counter() - t0)
            if not self.spin and extra > 0:
                time.sleep(extra)
            until = time.perf_counter() + extra
            while self.spin and time.perf_counter() < until:
                pass
            self.calls.append((time.perf_counter() - t0) * 1e3)
        return out


class ReversedFor:
    """The store with the top 10 reversed for the queries whose vectors are ``rows`` of the
    golden set's batch: the same chunks, a worse order (a quality drop of known size)."""

    def __init__(self, inner: LanceStore, reversed_rows: set[int]) -> None:
        self.inner, self.rows = inner, reversed_rows

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, vectors: np.ndarray, k: int, **kw: Any) -> list[Hits]:
        hits = self.inner.search(vectors, k, **kw)
        if len(vectors) == 1:
            return hits
        return [Hits(h.ids[:10][::-1] + h.ids[10:], h.scores) if i in self.rows else h
                for i, h in enumerate(hits)]


def _gate(bench: Bench, store: VectorStore, policy: Policy, history: Path, *,
          interleaved: bool, latency_sample: int | None = None) -> GateResult:
    baseline = None
    if interleaved:
        baseline = latency_baseline(history)(store, bench.golden.hash, policy.hash)
    try:
        result = run_gate(bench.golden, store=store, embedder=bench.embedder, policy=policy,
                          latency_sample=latency_sample, latency_baseline=baseline)
    finally:
        if baseline is not None:
            baseline.close()
    return record_gate_run(result, history)


def _stopped_by(result: GateResult, rule: str) -> bool:
    return any(r.rule == rule for r in result.reasons)


def _p99_ratio(result: GateResult) -> float | None:
    check = next((c for c in result.checks if c.rule == "cost_increase"
                  and c.figures.get("figure") == "search_p99_ms"), None)
    if check is None or check.figures.get("increase") is None:
        return None
    return 1.0 + float(check.figures["increase"])


def cost_rule(bench: Bench) -> dict[str, Any]:
    """False alarms of max_cost_increase on the unchanged store, and detections of a 3×
    slower index, timed interleaved with the baseline and timed apart."""
    policy = replace(bench.policy, limits=replace(bench.policy.limits, max_cost_increase=0.25))
    out: dict[str, Any] = {}
    for mode in ("interleaved", "apart"):
        history = bench.history(f"cost_{mode}")
        first = _gate(bench, bench.store, policy, history, interleaved=False)
        rows: list[dict[str, Any]] = []
        for i in range(bench.gates + bench.changed):
            changed = i >= bench.gates
            store = SlowerIndex(bench.store, 3.0) if changed else bench.store
            with busy_machine(bench.busy, bench.loaded(i)):
                t0 = time.perf_counter()
                result = _gate(bench, store, policy, history,  # type: ignore[arg-type]
                               interleaved=mode == "interleaved")
            cost = result.cost or {}
            rows.append({"changed": changed, "loaded": bench.loaded(i),
                         "stopped": _stopped_by(result, "cost_increase"),
                         "p99_ratio": _p99_ratio(result),
                         # this run's own calls against the first (idle) run's: what load alone
                         # does to the median and to the p99 of the same index
                         "p50_vs_first": _vs(cost, first.cost, "search_p50_ms"),
                         "p99_vs_first": _vs(cost, first.cost, "search_p99_ms"),
                         "statuses": [c.status for c in result.checks
                                      if c.rule == "cost_increase"],
                         "seconds": time.perf_counter() - t0})
            print(f"  cost_rule {mode:<11} {'3x slower' if changed else 'unchanged':<9} "
                  f"{'loaded' if bench.loaded(i) else 'idle':<6} p99 ×"
                  f"{rows[-1]['p99_ratio'] or float('nan'):.2f} (own p50 ×"
                  f"{rows[-1]['p50_vs_first'] or float('nan'):.2f}, p99 ×"
                  f"{rows[-1]['p99_vs_first'] or float('nan'):.2f} vs the first run) "
                  f"{'STOP' if rows[-1]['stopped'] else 'no stop'} {rows[-1]['statuses']}",
                  flush=True)
        out[mode] = _rates(rows, first)
    return out


def _vs(cost: dict[str, Any], first: dict[str, Any] | None, key: str) -> float | None:
    a, b = cost.get(key), (first or {}).get(key)
    return None if a is None or not b else float(a) / float(b)


def _rates(rows: list[dict[str, Any]], first: GateResult) -> dict[str, Any]:
    same = [r for r in rows if not r["changed"]]
    changed = [r for r in rows if r["changed"]]
    loaded = [r for r in same if r["loaded"] and r["p50_vs_first"] is not None]
    return {
        "baseline_run": first.run_id,
        "false_alarms": sum(r["stopped"] for r in same), "unchanged_gates": len(same),
        "unchanged_loaded": sum(r["loaded"] for r in same),
        "detections": sum(r["stopped"] for r in changed), "changed_gates": len(changed),
        "max_p99_ratio_unchanged": max((r["p99_ratio"] or 0.0 for r in same), default=None),
        # the unchanged index under load against the first, idle run: median and p99
        "loaded_p50_vs_idle": [round(r["p50_vs_first"], 2) for r in loaded],
        "loaded_p99_vs_idle": [round(r["p99_vs_first"], 2) for r in loaded
                               if r["p99_vs_first"] is not None],
        "rows": rows,
    }


def max_drop(bench: Bench) -> dict[str, Any]:
    """False alarms of max_drop on the unchanged store under load, and detections of the top 10
    reversed for 10 % and 30 % of the queries."""
    policy = replace(bench.policy, limits=Limits(max_drop={"nDCG@10": 0.02}))
    history = bench.history("max_drop")
    first = _gate(bench, bench.store, policy, history, interleaved=False, latency_sample=0)
    base_ndcg = first.aggregate.mean_ndcg
    same = []
    for i in range(bench.gates):
        with busy_machine(bench.busy, bench.loaded(i)):
            result = _gate(bench, bench.store, policy, history, interleaved=False,
                           latency_sample=0)
        same.append(_stopped_by(result, "max_drop"))
    sizes: dict[str, Any] = {}
    rng = np.random.default_rng(0)
    n = len(bench.golden.queries)
    for share in (0.10, 0.30):
        rows = []
        for i in range(bench.changed):
            picked = set(rng.choice(n, size=max(1, round(share * n)), replace=False).tolist())
            with busy_machine(bench.busy, bench.loaded(i)):
                result = _gate(bench, ReversedFor(bench.store, picked),  # type: ignore[arg-type]
                               policy, history, interleaved=False, latency_sample=0)
            rows.append({"ndcg_drop": base_ndcg - result.aggregate.mean_ndcg,
                         "stopped": _stopped_by(result, "max_drop")})
        key = f"{share:.0%}"
        sizes[key] = {"detections": sum(r["stopped"] for r in rows), "gates": len(rows),
                      "rows": rows}
        drops = ", ".join(f"{r['ndcg_drop']:.3f}" for r in rows)
        print(f"  max_drop top 10 reversed for {key} of the queries: nDCG@10 drops {drops}; "
              f"{sizes[key]['detections']}/{len(rows)} stopped", flush=True)
    print(f"  max_drop unchanged: {sum(same)}/{len(same)} stopped", flush=True)
    return {"false_alarms": sum(same), "unchanged_gates": len(same), "changed": sizes}


def latency_cap(bench: Bench) -> dict[str, Any]:
    """``max_latency_p99_ms`` set 1.5× above an idle run's p99 on the unchanged store: the
    gates that stop (the rule on the p99's interval) against those the point p99 alone would
    have stopped (the rule before), on the unchanged store under alternating load and on the
    store made 3× slower. The cap is absolute, so a loaded gate that stops may be right: the
    idle and loaded gates are counted apart."""
    probe = replace(bench.policy, limits=Limits(max_latency_p99_ms=1e9))
    first = _gate(bench, bench.store, probe, bench.history("latency_probe"), interleaved=False)
    first_p99 = float(np.percentile((first.cost or {})["samples"]["search_ms"], 99))
    cap = round(1.5 * first_p99, 3)
    policy = replace(bench.policy, limits=Limits(max_latency_p99_ms=cap))
    rows: list[dict[str, Any]] = []
    for i in range(bench.gates + bench.changed):
        changed = i >= bench.gates
        store = SlowerIndex(bench.store, 3.0) if changed else bench.store
        with busy_machine(bench.busy, bench.loaded(i)):
            result = _gate(bench, store, policy, bench.history("latency_cap"),  # type: ignore[arg-type]
                           interleaved=False)
        ms = (result.cost or {})["samples"]["search_ms"]
        (check,) = [c for c in result.checks if c.rule == "latency_p99"]
        rows.append({"changed": changed, "loaded": bench.loaded(i), "calls": len(ms),
                     "p99_ms": float(np.percentile(ms, 99)), "interval": check.figures["interval"],
                     "stopped": _stopped_by(result, "latency_p99"),
                     "point_over": float(np.percentile(ms, 99)) > cap, "status": check.status})
        r = rows[-1]
        print(f"  latency_cap {cap:.2f} ms {'3x slower' if changed else 'unchanged':<9} "
              f"{'loaded' if r['loaded'] else 'idle':<6} p99 {r['p99_ms']:.2f} ms over "
              f"{r['calls']} calls {'STOP' if r['stopped'] else 'no stop'} (point rule: "
              f"{'STOP' if r['point_over'] else 'no stop'})", flush=True)

    def count(changed: bool, loaded: bool, key: str) -> list[int]:
        picked = [r for r in rows if r["changed"] == changed and r["loaded"] == loaded]
        return [sum(r[key] for r in picked), len(picked)]

    return {"first_p99_ms": first_p99, "cap_ms": cap,
            **{f"{'changed' if c else 'unchanged'}_{'loaded' if ld else 'idle'}": {
                "stops": count(c, ld, "stopped"), "point_rule_stops": count(c, ld, "point_over")}
               for c in (False, True) for ld in (False, True)},
            "rows": rows}


DECISIONS: dict[str, Callable[[Bench], dict[str, Any]]] = {
    "cost_rule": cost_rule,
    "max_drop": max_drop,
    "latency_cap": latency_cap,
}


def build(scratch: Path) -> tuple[LanceStore, Embedder]:
    """The example knowledge base as examples/demo.sh builds it: version 1, then the fix."""
    embedder = get_embedder()
    store = LanceStore(scratch / "kb", create=True)
    for part in ("corpus_v1.jsonl", "fix_v2.jsonl"):
        ingest(KB / part, store, embedder, embedder_spec="use-multilingual")
    return store, embedder


def chosen_names(ap: argparse.ArgumentParser, text: str, known: list[str],
                 what: str) -> list[str]:
    """The comma-separated names of ``text``, each one of ``known`` (else the parser's error)."""
    names = [d.strip() for d in text.split(",") if d.strip()]
    unknown = [d for d in names if d not in known]
    if unknown:
        ap.error(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def machine(load_before: tuple[float, float, float]) -> dict[str, Any]:
    """The machine a bench ran on, and its load average before and now."""
    return {"cpus": os.cpu_count(), "processor": platform.processor(),
            "python": platform.python_version(), "load_before": load_before,
            "load_after": os.getloadavg()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--decisions", default=",".join(DECISIONS))
    ap.add_argument("--gates", type=int, default=6, help="gates on the unchanged store")
    ap.add_argument("--changed", type=int, default=3, help="gates on each changed store")
    ap.add_argument("--busy", type=int, default=2, help="CPU-bound processes on loaded gates")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    chosen = chosen_names(ap, args.decisions, list(DECISIONS), "decision")
    started = datetime.now(UTC)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        store, embedder = build(Path(tmp))
        bench = Bench(store, load_golden(KB / "golden.yaml"), load_policy(KB / "policy.yaml"),
                      embedder, Path(tmp), args.gates, args.changed, args.busy)
        figures = {name: DECISIONS[name](bench) for name in chosen}
        store.close()
    report = {"started": started.isoformat(timespec="seconds"),
              "seconds": time.perf_counter() - t0,
              "machine": machine(load_before),
              "settings": {"gates": args.gates, "changed": args.changed, "busy": args.busy},
              "decisions": figures}
    print(json.dumps({k: v for k, v in report.items() if k != "decisions"}, indent=1))
    for name, fig in figures.items():
        print(name, json.dumps(_summary(fig)))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


def _summary(fig: dict[str, Any]) -> dict[str, Any]:
    """The figures without the per-gate rows."""
    if isinstance(fig, dict):
        return {k: _summary(v) for k, v in fig.items() if k != "rows"}
    return fig


if __name__ == "__main__":
    sys.exit(main())
