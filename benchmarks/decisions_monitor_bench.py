"""How often the monitor's alarms are wrong: each alarm's false-alarm rate on unchanged inputs
under varying load, and its detection rate on a real change of known size. Real
``run_monitor`` calls on real stores (hnswlib index files, LanceDB), real interaction logs read
from disk.

    PYTHONPATH=. .venv/bin/python benchmarks/decisions_monitor_bench.py [--alarms A,B] \\
        [--rounds 6] [--changed 2] [--drift-rounds 20] [--live-rounds 40] [--busy 2] \\
        [--out FILE.json]

One function per alarm, each taking the shared :class:`Bench` and returning its figures
(:data:`ALARMS` lists them by name). Every other monitor run has ``--busy`` CPU-bound processes
beside it (as in ``decisions_bench.py``); the inputs are generated with fixed seeds and hashed
(SHA-256 of their bytes, printed with the configuration).

* ``recall_floor`` — ``floor 0.95``, recall@10 against exact search, 200 probes. An hnswlib
  index of 4,000 clustered 32-dimension vectors built with ``m=16, ef_construction=100``
  (``ef=20``): ``--rounds`` monitor runs on it (each alarm a false alarm), then ``--changed``
  runs on each of three indexes of the same rows rebuilt with weaker settings (``m=8``, still
  over the floor; ``m=6`` and ``m=4``), whose true recall, measured on a pool of 2,000 other
  probes, falls by a known amount (an alarm under the floor a detection, over it a false
  alarm). The probe set is fixed, so a run on an unchanged
  index repeats the same recall; what the probe *sample* does is measured apart: the rule applied
  to 500 probe sets of 200 drawn from the pool, for each index.
* ``latency_cap`` — ``--max-probe-latency-p99``: a LanceDB IVF_PQ store of the same rows, 40
  probes. The cap is set from the store's own idle p99 (one monitor run with the probes taken
  in rounds, before the others): the monitor's decision at 2× that p99, the same rule re-applied
  to each run's calls at 4× and 8×, and the rule used before (the p99 of the probes' single pass
  over the cap) on the same calls. ``--rounds`` runs on the unchanged store, then ``--changed``
  runs on the store made 3× and 10× slower (``decisions_bench.SlowerIndex`` with ``spin``: each
  live search call keeps its core busy for ``factor − 1`` times its own duration; sleeping
  instead, on a loaded machine a call also waits for a core when it wakes, which made a nominal
  3× read ×13–×23 at the p99 in a first run of this bench). Runs on an idle and on a loaded machine
  are counted apart: an absolute cap judges the machine as well as the index.
* ``drift`` — ``drift_alarm_p: 0.01``: the LanceDB store's index trained on 2,000 rows; each
  round writes 300 rows, runs the monitor, and deletes them. ``--drift-rounds`` rounds of rows
  drawn afresh from the trained rows' own distribution (A/A: each alarm false), then ``--changed``
  rounds at each share of rows from five topics the index never saw (5 %, 10 %, 25 %).
* ``live_signals`` — the live signals of real traffic with the default thresholds (no-result
  rate ≤ 0.30, CTR ≥ 0.05, abandonment ≤ 0.90, latency p99 ≤ 2,000 ms, a 20 % worsening against
  the 7-day baseline at p < 0.01): ``--live-rounds`` interaction logs (a 7-day baseline of 1,000
  impressions a day and a judged day of 1,000) whose traffic never changes but sits near the
  thresholds (no-result rate 0.28, abandonment 0.885, latency p99 about 1,700 ms), each read from
  disk as ``ops monitor --log`` reads it; then logs whose last day changed by a known amount. The
  rule used before (the window's value past its threshold) is scored on the same logs. A log's
  figures do not depend on the machine, so no load is added.

The machine's load average is recorded at the start and the end; the figures go to stdout and,
with ``--out``, to a JSON file. The defaults take about five minutes on a loaded 2-core machine;
the figures in docs/measured-figures.md were taken with more rounds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from decisions_bench import SlowerIndex, busy_machine, chosen_names, machine  # noqa: E402

from recallwatch.bench.datasets import topic_collection  # noqa: E402
from recallwatch.ops.monitor import run_monitor  # noqa: E402
from recallwatch.ops.probe_latency import probe_latency_check  # noqa: E402
from recallwatch.ops.probes import ProbeSet  # noqa: E402
from recallwatch.ops.recall import recall_vs_exact  # noqa: E402
from recallwatch.stats import wilson_interval  # noqa: E402
from recallwatch.stores import open_store  # noqa: E402
from recallwatch.stores.base import Chunk, VectorStore  # noqa: E402
from recallwatch.stores.lancedb.store import LanceStore  # noqa: E402

DIM, ROWS, TOPICS = 32, 4000, 20
FLOOR = 0.95
RECALL_PROBES, LATENCY_PROBES, POOL = 200, 40, 2000
HNSW_LIVE = "m=16&ef_construction=100&ef=20"
HNSW_WEAK = {"m=8": "m=8&ef_construction=60&ef=20", "m=6": "m=6&ef_construction=40&ef=20",
             "m=4": "m=4&ef_construction=20&ef=20"}
CAP_FACTORS = (2.0, 4.0, 8.0)  # the latency cap, times the store's idle p99
MONITOR_CAP = "2x"  # the cap the monitor runs are given (the others re-applied to their calls)
SLOWER = (3.0, 10.0)
TRAINED, NEW_ROWS, DRIFT_P = 2000, 300, 0.01
NEW_TOPIC_SHARES = (0.05, 0.10, 0.25)


@dataclass
class Bench:
    """What every alarm's function shares: the data, a scratch folder and the run's settings."""

    scratch: Path
    rounds: int
    changed: int
    drift_rounds: int
    live_rounds: int
    busy: int
    centres: np.ndarray = field(init=False)
    rows: np.ndarray = field(init=False)
    inputs: dict[str, str] = field(default_factory=dict)  # name -> sha256 of its bytes

    def __post_init__(self) -> None:
        rng = np.random.default_rng(37)
        self.centres = rng.standard_normal((TOPICS, DIM)) * 3
        self.rows = topic_collection(self.centres, ROWS, rng).astype(np.float32)
        self.hashed("rows", self.rows)

    def hashed(self, name: str, data: np.ndarray | bytes) -> None:
        raw = data if isinstance(data, bytes) else np.ascontiguousarray(data).tobytes()
        self.inputs[name] = hashlib.sha256(raw).hexdigest()

    def fresh(self, n: int, seed: int | list[int]) -> np.ndarray:
        """``n`` new points of the rows' own topics (the same distribution, other draws)."""
        return topic_collection(self.centres, n, np.random.default_rng(seed)).astype(np.float32)

    @staticmethod
    def loaded(i: int) -> bool:
        """Every other run beside the busy processes (run 0 on an idle machine)."""
        return i % 2 == 1


def _chunks(prefix: str, n: int) -> list[Chunk]:
    return [Chunk(id=f"{prefix}{i:05d}", text="", content_hash=f"{prefix}{i}") for i in range(n)]


def _rate(hits: int, runs: int) -> dict[str, Any]:
    """A rate with its 95 % Wilson interval (recallwatch.stats.wilson_interval)."""
    if runs == 0:
        return {"hits": 0, "runs": 0, "rate": None, "ci": None}
    low, high = wilson_interval(hits, runs)
    return {"hits": hits, "runs": runs, "rate": hits / runs, "ci": [float(low), float(high)]}


def _said(r: dict[str, Any]) -> str:
    if r["rate"] is None:
        return "no runs"
    return f"{r['hits']}/{r['runs']} ({r['rate']:.3f} [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}])"


# -- recall floor ---------------------------------------------------------------------------------


def _hnsw(bench: Bench, name: str, params: str) -> VectorStore:
    store = open_store(f"hnswlib://{bench.scratch / name}/idx?{params}", create=True)
    store.upsert(_chunks("c", ROWS), bench.rows)
    store.promote(store.current_version())
    return store


def recall_floor(bench: Bench) -> dict[str, Any]:
    """False alarms of the floor on the unchanged index, detections on indexes rebuilt weaker,
    and the rule over probe sets drawn from a pool (the sampling the fixed set hides)."""
    probes = bench.fresh(RECALL_PROBES, 101)
    pool = bench.fresh(POOL, 102)
    bench.hashed("recall_probes", probes)
    bench.hashed("recall_pool", pool)
    stores = {"m=16 (live)": _hnsw(bench, "live", HNSW_LIVE)}
    stores.update({name: _hnsw(bench, name, params) for name, params in HNSW_WEAK.items()})
    per_probe = {name: recall_vs_exact(s, pool, 10, batched=True)[0] for name, s in
                 stores.items()}
    truth = {name: float(r.mean()) for name, r in per_probe.items()}
    out: dict[str, Any] = {"floor": FLOOR, "probes": RECALL_PROBES, "pool": POOL,
                           "true_recall": truth, "indexes": {}}
    for name, store in stores.items():
        live = name.endswith("(live)")
        runs = bench.rounds if live else bench.changed
        rows = []
        for i in range(runs):
            with busy_machine(bench.busy, bench.loaded(i)):
                report = run_monitor(store, ProbeSet("p", "1", vectors=probes), k=10, floor=FLOOR)
            rows.append({"loaded": bench.loaded(i), "recall": report.recall,
                         "recall_ci": report.recall_ci,
                         "alarm": any(a.startswith("recall@10") for a in report.alarms)})
        recalls = [r["recall"] for r in rows]
        draws = _probe_draws(per_probe[name])
        out["indexes"][name] = {
            "true_recall": truth[name], "true_delta": truth[name] - truth["m=16 (live)"],
            "measures": "false alarm rate" if truth[name] >= FLOOR else "detection rate",
            "monitor_runs": _rate(sum(r["alarm"] for r in rows), runs),
            "recall_spread": [min(recalls), max(recalls)], "recall_ci": rows[0]["recall_ci"],
            "probe_draws": draws, "rows": rows}
        print(f"  recall_floor {name:<12} true recall {truth[name]:.4f}: alarms in "
              f"{_said(out['indexes'][name]['monitor_runs'])} runs (recall "
              f"{min(recalls):.4f}–{max(recalls):.4f}); over {draws['runs']} probe sets of "
              f"{RECALL_PROBES} drawn from the pool: {_said(draws)}", flush=True)
    for store in stores.values():
        store.close()
    return out


def _probe_draws(recalls: np.ndarray, draws: int = 500) -> dict[str, Any]:
    """The floor's rule (mean recall of the probe set < floor) over probe sets drawn from the
    pool's per-probe recalls."""
    rng = np.random.default_rng(7)
    alarms = sum(float(recalls[rng.choice(len(recalls), RECALL_PROBES, replace=False)].mean())
                 < FLOOR for _ in range(draws))
    return _rate(int(alarms), draws)


# -- latency cap ----------------------------------------------------------------------------------


def _lance(bench: Bench, name: str) -> LanceStore:
    """A LanceDB IVF_PQ store of the rows, its index trained on the first ``TRAINED``."""
    uri = (f"lancedb://{bench.scratch / name}?table=t&index_type=IVF_PQ&nprobes=4"
           f"&refine_factor=2&index_threshold={TRAINED}")
    store = LanceStore.open(uri, create=True)
    store.upsert(_chunks("c", TRAINED), bench.rows[:TRAINED])
    return store


def _timed_run(store: Any, probes: np.ndarray, cap: float,
               factor: float = 1.0) -> tuple[Any, list[float]]:
    """A monitor run on the store made ``factor`` times slower, and the milliseconds of each of
    its live calls (what the monitor timed: not its untimed first search), so that other caps
    and the old rule are judged on the same calls."""
    timed = SlowerIndex(store, factor, spin=True)
    report = run_monitor(timed, ProbeSet("p", "1", vectors=probes),  # type: ignore[arg-type]
                         k=10, floor=0.0, max_latency_p99_ms=cap)
    return report, timed.calls[1:]  # the first is the monitor's untimed warm-up search


def latency_cap(bench: Bench) -> dict[str, Any]:
    store = _lance(bench, "latency")
    probes = bench.fresh(LATENCY_PROBES, 201)
    bench.hashed("latency_probes", probes)
    _timed_run(store, probes, 1e9)  # warm the store's caches
    _, idle_calls = _timed_run(store, probes, 1e9)
    p99 = float(np.percentile(idle_calls, 99))
    caps = {f"{f:g}x": f * p99 for f in CAP_FACTORS}
    print(f"  latency_cap idle p99 {p99:.2f} ms over {len(idle_calls)} calls: caps "
          + ", ".join(f"{k} = {v:.2f} ms" for k, v in caps.items()), flush=True)
    rows = []
    for change in (1.0, *SLOWER):
        runs = bench.rounds if change == 1.0 else bench.changed
        for i in range(runs):
            with busy_machine(bench.busy, bench.loaded(i)):
                report, calls = _timed_run(store, probes, caps[MONITOR_CAP], change)
            rows.append(_latency_row(report, calls, caps, change, bench.loaded(i)))
    store.close()
    out: dict[str, Any] = {"idle_p99_ms": p99, "idle_p50_ms": float(np.percentile(idle_calls, 50)),
                           "idle_calls": len(idle_calls), "caps_ms": caps,
                           "monitor_cap": MONITOR_CAP, "probes": LATENCY_PROBES, "by_change": {}}
    idle_p50 = float(np.percentile(idle_calls, 50))
    for change in (1.0, *SLOWER):
        for loaded in (False, True):
            mine = [r for r in rows if r["factor"] == change and r["loaded"] == loaded]
            key = ("unchanged" if change == 1.0 else f"{change:g}x slower") + \
                (", loaded" if loaded else ", idle")
            entry: dict[str, Any] = {
                "monitor": _rate(sum(r["monitor_alarm"] for r in mine), len(mine)),
                "now": {c: _rate(sum(r["now"][c] for r in mine), len(mine)) for c in caps},
                "before": {c: _rate(sum(r["before"][c] for r in mine), len(mine)) for c in caps},
                "p50_vs_idle": [round(r["p50_ms"] / idle_p50, 2) for r in mine],
                "p99_vs_idle": [round(r["p99_ms"] / p99, 2) for r in mine],
                "calls": [r["calls"] for r in mine], "rows": mine}
            out["by_change"][key] = entry
            print(f"  latency_cap {key:<17} monitor (cap {MONITOR_CAP}) "
                  f"{_said(entry['monitor'])}; "
                  + "; ".join(f"{c}: now {entry['now'][c]['hits']}, before "
                              f"{entry['before'][c]['hits']}" for c in caps)
                  + f"; p50 vs idle {entry['p50_vs_idle']}, p99 vs idle {entry['p99_vs_idle']}, "
                  f"calls {entry['calls']}", flush=True)
    return out


def _latency_row(report: Any, calls: list[float], caps: dict[str, float], factor: float,
                 loaded: bool) -> dict[str, Any]:
    ms = np.asarray(calls)
    first = ms[:LATENCY_PROBES]
    return {"factor": factor, "loaded": loaded, "calls": len(ms),
            "monitor_alarm": any(a.startswith("probe latency") for a in report.alarms),
            "monitor_status": report.latency["status"],
            "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
            "p99_ci_ms": report.latency["p99_ci_ms"],
            "first_pass_p99_ms": float(np.percentile(first, 99)),
            "now": {c: probe_latency_check(ms, cap, probes=LATENCY_PROBES, what="probe latency",
                                           how="one live search each").alarm is not None
                    for c, cap in caps.items()},
            "before": {c: float(np.percentile(first, 99)) > cap for c, cap in caps.items()}}


# -- drift ----------------------------------------------------------------------------------------


def drift(bench: Bench) -> dict[str, Any]:
    store = _lance(bench, "drift")
    probes = bench.fresh(10, 301)
    far = np.random.default_rng(302).standard_normal((5, DIM)) * 3  # topics never seen
    bench.hashed("drift_new_topics", far)
    rows: list[dict[str, Any]] = []
    cases = [(0.0, bench.drift_rounds), *((s, bench.changed) for s in NEW_TOPIC_SHARES)]
    for share, runs in cases:
        for i in range(runs):
            new = _new_rows(bench, far, share, [int(1000 * share), i])
            ids = _chunks(f"r{int(1000 * share)}_{i}_", NEW_ROWS)
            store.upsert(ids, new)
            with busy_machine(bench.busy, bench.loaded(i)):
                report = run_monitor(store, ProbeSet("p", "1", vectors=probes), k=10, floor=0.0,
                                     drift_alarm_p=DRIFT_P)
            store.delete([c.id for c in ids])
            test = report.drift.test if report.drift is not None else None
            rows.append({"share_new_topics": share, "loaded": bench.loaded(i),
                         "p_value": None if test is None else test.p_value,
                         "permutations": None if test is None else test.permutations,
                         "new_rows": None if report.drift is None else report.drift.new_rows,
                         "alarm": any(a.startswith("data drift") for a in report.alarms)})
    store.close()
    out: dict[str, Any] = {"drift_alarm_p": DRIFT_P, "trained_rows": TRAINED,
                           "new_rows": NEW_ROWS, "by_share": {}}
    for share, _ in cases:
        mine = [r for r in rows if r["share_new_topics"] == share]
        ps = [r["p_value"] for r in mine if r["p_value"] is not None]
        key = "same distribution" if share == 0.0 else f"{share:.0%} from new topics"
        entry = {"measures": "false alarm rate" if share == 0.0 else "detection rate",
                 "alarms": _rate(sum(r["alarm"] for r in mine), len(mine)),
                 "at_p_0.05": _rate(sum(p < 0.05 for p in ps), len(ps)),
                 "p_values": ps, "rows": mine}
        out["by_share"][key] = entry
        print(f"  drift {key:<20} alarms (p < {DRIFT_P:g}) {_said(entry['alarms'])}; at p < 0.05 "
              f"{_said(entry['at_p_0.05'])}; median p {np.median(ps):.3f}", flush=True)
    return out


def _new_rows(bench: Bench, far: np.ndarray, share: float, seed: list[int]) -> np.ndarray:
    """``NEW_ROWS`` rows, a ``share`` of them around the unseen topics, the rest fresh draws of
    the trained rows' own topics."""
    rng = np.random.default_rng([303, *seed])
    n_far = round(share * NEW_ROWS)
    same = topic_collection(bench.centres, NEW_ROWS - n_far, rng)
    other = topic_collection(far, n_far, rng) if n_far else np.empty((0, DIM))
    return np.vstack([same, other]).astype(np.float32)


# -- live signals ---------------------------------------------------------------------------------

T0 = datetime(2026, 1, 1, tzinfo=UTC)
PER_DAY, DAYS = 1000, 8
#: The traffic of an unchanged service, near the default thresholds.
HEALTHY = {"no_result": 0.28, "click_if_shown": 0.16, "latency_median_ms": 420.0,
           "latency_sigma": 0.6}
CHANGES: dict[str, dict[str, float]] = {
    "no-result rate 0.28 → 0.40": {"no_result": 0.40},
    "clicks halved (CTR 0.115 → 0.058, abandonment 0.885 → 0.942)": {"click_if_shown": 0.08},
    "latency 2× slower (p99 ≈ 1,700 → 3,400 ms)": {"latency_median_ms": 840.0},
}


def _log(path: Path, seed: int, last_day: dict[str, float]) -> None:
    """Seven days of healthy traffic, then a day of ``last_day``'s (HEALTHY when empty)."""
    rng = np.random.default_rng([404, seed])
    n = PER_DAY * DAYS
    last = np.arange(n) >= PER_DAY * (DAYS - 1)
    t = {key: np.where(last, last_day.get(key, v), v) for key, v in HEALTHY.items()}
    empty = rng.random(n) < t["no_result"]
    clicked = ~empty & (rng.random(n) < t["click_if_shown"])
    which = rng.integers(0, 5, n)
    latency = t["latency_median_ms"] * np.exp(t["latency_sigma"] * rng.normal(size=n))
    shown = json.dumps([{"id": f"d{k}", "score": 1.0} for k in range(5)])
    with path.open("w", encoding="utf-8") as f:
        for j in range(n):
            ts = T0 + timedelta(seconds=86400 * (j + 0.5) / PER_DAY)
            clicks = f'[{{"id": "d{which[j]}"}}]' if clicked[j] else "[]"
            f.write(f'{{"query_id": "q{j % 97}", "ts": "{ts.isoformat()}", "shown": '
                    f'{"[]" if empty[j] else shown}, "clicks": {clicks}, "latency_ms": '
                    f"{latency[j]:.2f}}}\n")


def _live(path: Path) -> Any:
    """What ``ops monitor --log PATH`` holds the log to (the default window and thresholds)."""
    from recallwatch.online import InteractionLog
    from recallwatch.online.live import DEFAULT_BASELINE, window_and_baseline
    from recallwatch.ops.live_signals import check_live

    source = InteractionLog(path)
    signals, before = window_and_baseline(source, None, baseline=DEFAULT_BASELINE)
    return check_live({**signals.to_dict(), "log": source.summary.to_dict()}, None,
                      None if before is None else before.to_dict())


def _old_alarms(check: Any) -> list[str]:
    """The rule used before: a value past its threshold, whatever its interval."""
    from recallwatch.ops.live_signals import LIVE_SIGNALS

    out = []
    for s in LIVE_SIGNALS:
        limit, value = getattr(check.policy, s.bound), check.value(s.path)
        if limit is not None and value is not None and ((value > limit) if s.upper
                                                        else (value < limit)):
            out.append(s.label)
    return out + [c["signal"] for c in check.changes if c["alarm"]]


def live_signals(bench: Bench) -> dict[str, Any]:
    from recallwatch.ops.live_signals import LIVE_SIGNALS

    labels = [s.label for s in LIVE_SIGNALS]
    cases = [("unchanged", {}, bench.live_rounds),
             *((name, change, bench.changed) for name, change in CHANGES.items())]
    out: dict[str, Any] = {"per_day": PER_DAY, "days": DAYS, "healthy": HEALTHY, "cases": {}}
    digest = hashlib.sha256()
    for name, change, runs in cases:
        now = {label: 0 for label in labels}
        now_any = before_any = 0
        relative = 0
        for i in range(runs):
            path = bench.scratch / "log.jsonl"
            _log(path, hash_seed(name, i), change)
            digest.update(path.read_bytes())
            check = _live(path)
            fired = [s.label for s in LIVE_SIGNALS if any(a.startswith(f"live {s.label} is")
                                                          for a in check.alarms)]
            for label in fired:
                now[label] += 1
            relative += any(" went from " in a for a in check.alarms)
            now_any += bool(check.alarms)
            before_any += bool(_old_alarms(check))
        entry = {"measures": "false alarm rate" if not change else "detection rate",
                 "any_alarm_now": _rate(now_any, runs), "any_alarm_before": _rate(before_any, runs),
                 "by_signal_now": {k: _rate(v, runs) for k, v in now.items()},
                 "relative_alarms": _rate(relative, runs)}
        out["cases"][name] = entry
        print(f"  live_signals {name}: any alarm now {_said(entry['any_alarm_now'])}, before "
              f"{_said(entry['any_alarm_before'])}; by signal now "
              + ", ".join(f"{k} {v}" for k, v in now.items() if v)
              + f"; relative {relative}", flush=True)
    bench.inputs["live_logs"] = digest.hexdigest()
    return out


def hash_seed(name: str, i: int) -> int:
    return int(hashlib.sha256(f"{name}/{i}".encode()).hexdigest()[:8], 16)


ALARMS: dict[str, Callable[[Bench], dict[str, Any]]] = {
    "recall_floor": recall_floor,
    "latency_cap": latency_cap,
    "drift": drift,
    "live_signals": live_signals,
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--alarms", default=",".join(ALARMS))
    ap.add_argument("--rounds", type=int, default=6,
                    help="monitor runs on the unchanged store (recall floor, latency cap)")
    ap.add_argument("--changed", type=int, default=2, help="runs on each changed input")
    ap.add_argument("--drift-rounds", type=int, default=20,
                    help="rounds of new rows from the trained rows' own distribution")
    ap.add_argument("--live-rounds", type=int, default=40, help="logs of unchanged traffic")
    ap.add_argument("--busy", type=int, default=2, help="CPU-bound processes on loaded runs")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    chosen = chosen_names(ap, args.alarms, list(ALARMS), "alarm")
    started, load_before, t0 = datetime.now(UTC), os.getloadavg(), time.perf_counter()
    settings = {"rounds": args.rounds, "changed": args.changed, "drift_rounds": args.drift_rounds,
                "live_rounds": args.live_rounds, "busy": args.busy, "floor": FLOOR,
                "cap_factors": CAP_FACTORS, "slower": SLOWER, "drift_alarm_p": DRIFT_P,
                "rows": ROWS, "dim": DIM, "topics": TOPICS}
    print("settings", json.dumps(settings), flush=True)
    with tempfile.TemporaryDirectory(prefix="rw-monitor-bench-") as tmp:
        bench = Bench(Path(tmp), args.rounds, args.changed, args.drift_rounds, args.live_rounds,
                      args.busy)
        figures, seconds = {}, {}
        for name in chosen:
            t = time.perf_counter()
            figures[name] = ALARMS[name](bench)
            seconds[name] = time.perf_counter() - t
    report = {"started": started.isoformat(timespec="seconds"), "command": " ".join(sys.argv),
              "seconds": time.perf_counter() - t0, "seconds_by_alarm": seconds,
              "machine": machine(load_before),
              "settings": settings, "inputs_sha256": bench.inputs, "alarms": figures}
    print(json.dumps({k: v for k, v in report.items() if k != "alarms"}, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
