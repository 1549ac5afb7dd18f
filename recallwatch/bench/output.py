"""What a sweep answers, and how it is written: text table, JSON, CSV, and the plots of recall
against QPS, build time and index size.

The frontier is read on recall@k (by id) against single-thread, one-query-at-a-time QPS, as
ANN-Benchmarks does, each QPS the median of its timing rounds: two settings are ranked by speed
only when their rounds do not overlap (:mod:`recallwatch.bench.frontier`), and "fastest at
recall ≥ X" names the settings its rounds cannot be told apart from. Every table row shows a
recall beside its QPS and the range of its rounds, and every table starts with the data and k it
was measured on.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from recallwatch._files import atomic_path, output_dir, write_atomic
from recallwatch.acceptance.money import Serving, money_lines, price_serving
from recallwatch.bench._figures import new_figure, save_figure
from recallwatch.bench.frontier import fastest_at, fastest_at_rounds, pareto_mask_rounds
from recallwatch.bench.sweep import SCHEMA_VERSION, ConfigResult, SweepResult
from recallwatch.bench.tradeoffs import COSTS, cost_curve, plot_cost
from recallwatch.formats.prices import Prices

__all__ = ["Answers", "answers", "plot_frontier", "price_sweep", "render_table", "sweep_to_dict",
           "write_outputs", "write_report_pair"]


@dataclass(frozen=True)
class Answers:
    frontier: list[int]  # indices into results, overall
    frontier_by_engine: dict[str, list[int]]  # label -> indices
    fastest: dict[float, int | None]  # recall target -> fastest configuration
    cheapest: dict[float, int | None]  # recall target -> least CPU-seconds per 1,000 queries
    # recall target -> the other configurations reaching it whose rounds overlap the fastest's
    tied: dict[float, list[int]]


def answers(sweep: SweepResult) -> Answers:
    res = sweep.results
    if not res:
        return Answers([], {}, dict.fromkeys(sweep.targets), dict.fromkeys(sweep.targets),
                       {t: [] for t in sweep.targets})
    k = sweep.k
    recall = np.array([r.recall[k] for r in res])
    rounds = [r.qps_rounds for r in res]
    overall = [int(i) for i in np.flatnonzero(pareto_mask_rounds(recall, rounds))]
    by_engine: dict[str, list[int]] = {}
    for label in dict.fromkeys(r.label for r in res):
        idx = np.array([i for i, r in enumerate(res) if r.label == label])
        mask = pareto_mask_rounds(recall[idx], [rounds[i] for i in idx])
        by_engine[label] = [int(i) for i in idx[mask]]
    cpu_speed = -np.array([r.cpu_s_per_1000_single for r in res])  # less CPU is "faster"
    fastest = {t: fastest_at_rounds(recall, rounds, t) for t in sweep.targets}
    return Answers(overall, by_engine, {t: f[0] for t, f in fastest.items()},
                   {t: fastest_at(recall, cpu_speed, t) for t in sweep.targets},
                   {t: f[1] for t, f in fastest.items()})


def _serving(r: ConfigResult) -> Serving:
    """One setting's serving figures: one query at a time on one thread (its QPS-1 and the CPU
    time measured with it), the index's bytes held in memory and on disk."""
    missing = {} if r.index_bytes is not None else dict.fromkeys(
        ("memory", "disk"), "the engine does not report its index size")
    tokens = "a benchmark of vectors: no model is called"
    return Serving(seconds_per_query=1.0 / r.qps_single if r.qps_single > 0 else None,
                   vcpu_seconds_per_query=r.cpu_s_per_1000_single / 1000.0,
                   memory_bytes=r.index_bytes, disk_bytes=r.index_bytes, missing=missing,
                   not_part={"embedding tokens": tokens, "LLM tokens": tokens},
                   sources={"compute": f"{r.cpu_s_per_1000_single:.4g} CPU-s per 1,000 queries "
                            "measured one query at a time on 1 thread",
                            **dict.fromkeys(("memory", "disk"), f"index {r.index_bytes:,} bytes"
                                            if r.index_bytes is not None else "")},
                   quality={f"R@{r.k}": r.recall[r.k], "QPS-1": r.qps_single})


def price_sweep(sweep: SweepResult, prices: Prices) -> dict[str, Any]:
    """What serving 1,000 queries costs with each setting at ``prices``, and the cheapest
    setting at each recall target (by its priced total; a partial total is said to be)."""
    res, k = sweep.results, sweep.k
    priced = [price_serving(prices, _serving(r)) for r in res]
    cheapest: dict[str, int | None] = {}
    for t in sweep.targets:
        reaching = [i for i, r in enumerate(res) if r.recall[k] >= t]
        cheapest[str(t)] = min(reaching, key=lambda i: (priced[i]["total"], i), default=None)
    return {"prices": prices.to_dict(), "per_1000_queries": priced, "cheapest_at": cheapest,
            "how": "one query at a time on one thread, at the setting's QPS-1 and CPU time; "
                   "memory and disk: the index's bytes"}


def _money_text(sweep: SweepResult, ans: Answers, prices: Prices) -> list[str]:
    """The cost lines of a table: each frontier setting with its arithmetic, then the cheapest
    at each recall target."""
    k, res, money = sweep.k, sweep.results, price_sweep(sweep, prices)
    priced = money["per_1000_queries"]
    lines = ["", f"cost in money of each setting on the overall frontier, at your prices "
             f"({prices.source or 'given'}), {money['how']}:"]
    for i in sorted(ans.frontier, key=lambda i: res[i].recall[k]):
        named = " ".join(x for x in (res[i].label, res[i].params) if x)
        lines += [f"  {line}" for line in money_lines(priced[i], f" with {named}")]
    for target in sweep.targets:
        i = money["cheapest_at"][str(target)]
        if i is None:
            lines.append(f"cheapest at R@{k} >= {target:g}: none reaches it")
            continue
        m = priced[i]
        named = " ".join(x for x in (res[i].label, res[i].params) if x)
        lines.append(f"cheapest at R@{k} >= {target:g}: {named}, "
                     f"{m['total']:.4g} {m['currency']} per 1,000 queries at R@{k} "
                     f"{res[i].recall[k]:.4f}" + ("" if m["complete"] else " (partial)"))
    return lines


def _qps(r: ConfigResult) -> str:
    """``34,803 [31,102–36,511]``: the median round and the range of the rounds."""
    rounds = r.qps_rounds
    if len(rounds) < 2:
        return f"{r.qps_single:,.0f}"
    return f"{r.qps_single:,.0f} [{min(rounds):,.0f}–{max(rounds):,.0f}]"


def _p99(r: ConfigResult) -> str:
    """The p99 when the calls bound it (every result measured in rounds says), else —."""
    if r.timing and r.timing.get("p99_ms") is None:
        return "—"
    return f"{r.latency.p99_ms:.3f}"


def _mb(value: int | None) -> str:
    return "-" if value is None else f"{value / 1e6:.1f}"


def _rounds_text(sweep: SweepResult) -> str:
    counts = sorted({len(r.qps_rounds) for r in sweep.results})
    shown = "/".join(str(c) for c in counts) or "0"
    return f"{shown} round{'' if counts == [1] else 's'}, interleaved across a build's settings"


def _tied(sweep: SweepResult, ans: Answers, target: float) -> str:
    """", as fast as X (…) and Y (…) for all the rounds can tell" or nothing."""
    tied = ans.tied.get(target) or []
    if not tied:
        return ""
    k, res = sweep.k, sweep.results
    names = " and ".join(f"{res[i].label} {res[i].params} ({_qps(res[i])} at R@{k} "
                         f"{res[i].recall[k]:.4f})" for i in tied)
    return f", indistinguishable in speed from {names}: their rounds overlap"


def render_table(sweep: SweepResult, prices: Prices | None = None) -> str:
    """The sweep as a plain-text table followed by its answers (and, with ``prices``, the cost
    in money of the frontier's settings)."""
    d, k, ans = sweep.dataset, sweep.k, answers(sweep)
    on_front = set(ans.frontier)
    head = [
        f"data: {d['name']}  n={d['n']}  d={d['d']}  queries={d['queries']}  metric={d['metric']}"
        f"  k={k}  (data sha256 {d['hash'][:12]})",
        f"QPS-1: one query at a time on 1 thread, the median of {_rounds_text(sweep)} "
        "[the range of the rounds]; two settings are ranked by speed only when their ranges do "
        "not overlap; QPS-batch: all queries in one call on "
        f"{sweep.threads['batched_and_build']} thread(s); latency from per-query timings of "
        "every round (p99 only when the calls bound it); * = on the overall frontier",
    ]
    cols = ["", "engine", "parameters", f"R@{k}", f"R@{k} ties", "QPS-1", "QPS-batch",
            "p50 ms", "p99 ms", "build s", "index MB", "B/vec"]
    rows = [[("*" if i in on_front else ""), r.label, r.params, f"{r.recall[k]:.4f}",
             f"{r.recall_ties[k]:.4f}", _qps(r), f"{r.qps_batch:,.0f}",
             f"{r.latency.p50_ms:.3f}", _p99(r), f"{r.build_seconds:.2f}",
             _mb(r.index_bytes), "-" if r.bytes_per_vector is None else f"{r.bytes_per_vector:.1f}"]
            for i, r in enumerate(sweep.results)]
    widths = [max(len(c), *(len(row[j]) for row in rows)) if rows else len(c)
              for j, c in enumerate(cols)]
    lines = [*head, "", "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    for r in sweep.results:
        for p in r.load:
            lines.append(f"load {r.label} {r.params}: {p.threads} client thread(s), "
                         f"{p.seconds:.1f} s: {p.qps:,.0f} QPS, p99 {p.p99_ms:.3f} ms"
                         f"{f', {p.errors} errors' if p.errors else ''} (R@{k} {r.recall[k]:.4f})")
    lines.append("")
    for label, idx in ans.frontier_by_engine.items():
        pts = ", ".join(f"{sweep.results[i].recall[k]:.3f}@{sweep.results[i].qps_single:,.0f}"
                        for i in sorted(idx, key=lambda i: sweep.results[i].recall[k]))
        lines.append(f"frontier {label} (R@{k}@QPS-1): {pts}")
    for target, i in ans.fastest.items():
        if i is None:
            lines.append(f"fastest at R@{k} >= {target:g}: none reaches it")
            continue
        r = sweep.results[i]
        cheap = ans.cheapest[target]
        c = r if cheap is None else sweep.results[cheap]
        lines.append(f"fastest at R@{k} >= {target:g}: {r.label} {r.params} — "
                     f"{_qps(r)} QPS-1 at R@{k} {r.recall[k]:.4f}{_tied(sweep, ans, target)}; "
                     f"least CPU: {c.label} {c.params}, {c.cpu_s_per_1000_single:.3f} CPU-s "
                     f"per 1,000 queries at R@{k} {c.recall[k]:.4f}")
    if prices is not None:
        lines += _money_text(sweep, ans, prices)
    return "\n".join(lines) + "\n"


def sweep_to_dict(sweep: SweepResult, prices: Prices | None = None) -> dict[str, Any]:
    """The stable JSON document (``schema_version`` changes only by extension); with
    ``prices``, its ``money`` holds :func:`price_sweep`."""
    ans = answers(sweep)
    out = {k: v for k, v in asdict(sweep).items() if k != "results"}
    out["schema_version"] = SCHEMA_VERSION
    out["results"] = [r.to_dict() for r in sweep.results]
    out["answers"] = {
        "axis": f"recall@{sweep.k} by id vs single-thread one-query-at-a-time QPS",
        "frontier": ans.frontier,
        "frontier_by_engine": ans.frontier_by_engine,
        "fastest_at": {str(t): i for t, i in ans.fastest.items()},
        "fastest_at_indistinguishable": {str(t): idx for t, idx in ans.tied.items()},
        "timing": "QPS-1 is the median of each setting's rounds; settings are ranked by speed "
                  "only when their rounds do not overlap",
        "least_cpu_at": {str(t): i for t, i in ans.cheapest.items()},
    }
    for cost in COSTS:  # the data behind build_time.png and index_size.png
        curve = cost_curve(sweep, cost)
        out["answers"][f"{cost}_frontier"] = curve.frontier
        out["answers"][f"{cost}_frontier_by_engine"] = curve.frontier_by_engine
    if prices is not None:
        out["money"] = price_sweep(sweep, prices)
    return out


_CSV_FIELDS = ["engine", "label", "build", "query", "k", "recall@1", "recall@10", "recall@100",
               "recall_ties@k", "qps_single", "qps_single_min", "qps_single_max", "rounds",
               "qps_batch", "latency_mean_ms", "latency_p50_ms",
               "latency_p95_ms", "latency_p99_ms", "cpu_s_per_1000_single",
               "cpu_s_per_1000_batch", "build_seconds", "index_bytes", "index_bytes_how",
               "rss_delta_bytes", "bytes_per_vector", "on_frontier", "dataset", "dataset_hash"]


def sweep_to_csv(sweep: SweepResult) -> str:
    front = set(answers(sweep).frontier)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=_CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for i, r in enumerate(sweep.results):
        writer.writerow({
            "engine": r.engine, "label": r.label, "build": json.dumps(r.build, sort_keys=True),
            "query": json.dumps(r.query, sort_keys=True), "k": r.k,
            **{f"recall@{d}": r.recall.get(d, "") for d in (1, 10, 100)},
            "recall_ties@k": r.recall_ties[r.k], "qps_single": r.qps_single,
            "qps_single_min": min(r.qps_rounds), "qps_single_max": max(r.qps_rounds),
            "rounds": len(r.qps_rounds),
            "qps_batch": r.qps_batch, "latency_mean_ms": r.latency.mean_ms,
            "latency_p50_ms": r.latency.p50_ms, "latency_p95_ms": r.latency.p95_ms,
            "latency_p99_ms": r.latency.p99_ms, "cpu_s_per_1000_single": r.cpu_s_per_1000_single,
            "cpu_s_per_1000_batch": r.cpu_s_per_1000_batch, "build_seconds": r.build_seconds,
            "index_bytes": r.index_bytes, "index_bytes_how": r.index_bytes_how,
            "rss_delta_bytes": r.rss_delta_bytes, "bytes_per_vector": r.bytes_per_vector,
            "on_frontier": i in front, "dataset": sweep.dataset["name"],
            "dataset_hash": sweep.dataset["hash"],
        })
    return buf.getvalue()


def plot_frontier(sweep: SweepResult, path: str | Path) -> None:
    """Recall@k against QPS (log scale) per engine, the overall frontier drawn over them."""
    k, res, ans = sweep.k, sweep.results, answers(sweep)
    fig, ax = new_figure()
    for label, idx in ans.frontier_by_engine.items():
        mine = [i for i, r in enumerate(res) if r.label == label]
        line = sorted(idx, key=lambda i: res[i].recall[k])
        (drawn,) = ax.plot([res[i].qps_single for i in line], [res[i].recall[k] for i in line],
                           marker="o", ms=3, lw=1, label=label)
        ax.scatter([res[i].qps_single for i in mine], [res[i].recall[k] for i in mine],
                   s=14, alpha=0.5, color=drawn.get_color())
    front = sorted(ans.frontier, key=lambda i: res[i].recall[k])
    ax.plot([res[i].qps_single for i in front], [res[i].recall[k] for i in front], color="black",
            lw=2.5, alpha=0.35, label="overall frontier")
    d = sweep.dataset
    ax.set_xscale("log")
    ax.set_xlabel("QPS, one query at a time, 1 thread (log)")
    ax.set_ylabel(f"recall@{k}")
    ax.set_title(f"{d['name']} n={d['n']} d={d['d']} {d['metric']} k={k}", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)


def write_outputs(sweep: SweepResult, out_dir: str | Path, prices: Prices | None = None
                  ) -> list[Path]:
    """results.json, results.csv, frontier.png (recall against QPS), build_time.png and
    index_size.png (recall against build time and index size) in ``out_dir``, each written
    atomically."""
    out = output_dir(out_dir, "--out")
    written = []
    doc = json.dumps(sweep_to_dict(sweep, prices), indent=2, default=str)
    for name, text in (("results.json", doc),
                       ("results.csv", sweep_to_csv(sweep))):
        write_atomic(out / name, text + ("\n" if name.endswith(".json") else ""))
        written.append(out / name)
    if sweep.results:
        with atomic_path(out / "frontier.png") as tmp:
            plot_frontier(sweep, tmp)
        written.append(out / "frontier.png")
        for cost, (_, name) in COSTS.items():  # ANN-Benchmarks' other two plots, beside it
            with atomic_path(out / name) as tmp:
                plot_cost(sweep, cost, tmp)
            written.append(out / name)
    return written


def write_report_pair(out_dir: str | Path, name: str, doc: dict[str, Any], markdown: str
                      ) -> list[Path]:
    """``NAME.json`` (``doc``) and ``NAME.md`` (``markdown``) in ``out_dir`` (created when
    missing), each written whole; the benchmarks that write one result and its table use it."""
    out = output_dir(out_dir, "--out")
    files = {out / f"{name}.json": json.dumps(doc, indent=2, default=str) + "\n",
             out / f"{name}.md": markdown if markdown.endswith("\n") else markdown + "\n"}
    for path, text in files.items():
        write_atomic(path, text)
    return list(files)
