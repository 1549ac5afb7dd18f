"""Memory per log line of the commands that read a query or interaction log.

    .venv/bin/python benchmarks/logs_bench.py
        [--steps read probes golden online] [--lines 200000 2000000] [--queries 50000]
        [--out FILE.json]

One seeded synthetic interaction log per size (JSON Lines, one impression a line: ``query_id``,
``query``, ``domain``, ``ts``, ``user``, ``shown`` the query's top 10 of its 20 documents, two
neighbours swapped in one impression in five and the tenth another of the 20 in one in ten,
``clicks`` each shown result with probability 0.3 / rank). The queries asked follow a
Zipf law (weight 1 / rank) over ``--queries`` distinct questions of 3 to 7 words; one asking in
ten is written in lower case with a ``?`` (a second wording, merged by ``golden sample``). The
same file is read by every step, each step in a fresh process per size:

* ``read``: :class:`recallwatch.online.log.InteractionLog` iterated to the end, nothing kept
  (the reading every command below pays: the line, its impression, an 8-byte hash a line);
* ``probes``: the command ``recallwatch ops probes OUT --queries LOG --sample 500`` (its
  ``query`` field read as the logged text);
* ``golden``: the command ``recallwatch golden sample LOG --out OUT --n 200`` (the log read
  into one count per distinct wording and domain, near-duplicates merged, 200 drawn);
* ``online``: the command ``recallwatch online clicks LOG`` (default: the PBM click model on
  every impression; the one ``online`` command whose work is the whole log and nothing else,
  ``ab`` and ``interleave`` need variants or teams in the log).

A command runs as a process of its own (as ``unit_cost_bench.ingest_worker`` runs ``ingest``):
its wall time and peak resident memory (``ru_maxrss`` of the finished child). The memory per log
line is the growth of the peak between the two sizes divided by the growth of the lines (see
``unit_cost_bench.py``): what a line costs, distinct questions and (query, result) pairs that
the larger log adds included; for ``golden`` the same growth is also divided by the growth of
the distinct texts, for ``online`` by that of the (query, result) pairs. Speed is what this
machine gave at that moment: the load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _unit import begun, finish, in_process, peak_bytes, per_unit, worker_options

ROOT = Path(__file__).resolve().parent.parent
GOAL = ("B per log line", None, 1.0)
STEPS = ("read", "probes", "golden", "online")
SAMPLE = {"probes": 500, "golden": 200}
DOMAINS = ("billing", "account", "shipping", "returns", "product")


def make_log(path: Path, n: int, queries: int) -> dict[str, Any]:
    """The seeded interaction log of ``n`` impressions at ``path`` (see the module's text)."""
    import numpy as np

    rng = np.random.default_rng(0)  # the questions: the same at every size
    syllables = [a + b for a in "bdfgklmnprstvz" for b in ("a", "e", "i", "o", "u", "ai", "ou")]
    words = sorted({"".join(syllables[i] for i in rng.integers(0, len(syllables),
                                                              int(rng.integers(1, 4))))
                    for _ in range(6000)})
    texts = []
    for _ in range(queries):
        picked = [words[i] for i in rng.integers(0, len(words), int(rng.integers(3, 8)))]
        texts.append(" ".join([picked[0].capitalize(), *picked[1:]]))
    weights = 1.0 / np.arange(1, queries + 1)
    weights /= weights.sum()
    rng = np.random.default_rng(1)  # the askings: this size's
    exam = 0.3 / np.arange(1, 11)
    lines = 0
    with open(path, "w", encoding="utf-8") as out:
        for start in range(0, n, 100_000):
            size = min(100_000, n - start)
            asked = rng.choice(queries, size, p=weights)
            variant = rng.random(size) < 0.1
            # the query's ranking, its top 10 (documents 0..9), with a little churn: in one
            # impression in five two neighbours swap, in one in ten the tenth is another
            order = np.broadcast_to(np.arange(10), (size, 10)).copy()
            swap = np.flatnonzero(rng.random(size) < 0.2)
            at = rng.integers(0, 9, swap.size)
            order[swap, at], order[swap, at + 1] = at + 1, at
            tenth = np.flatnonzero(rng.random(size) < 0.1)
            order[tenth, 9] = rng.integers(10, 20, tenth.size)
            clicked = rng.random((size, 10)) < exam
            users = rng.integers(0, 100_000, size)
            block = []
            for i in range(size):
                q = int(asked[i])
                text = texts[q].lower() + "?" if variant[i] else texts[q]
                shown = [f"d{q}-{j}" for j in order[i].tolist()]
                second = start + i
                ts = f"2026-01-{1 + second // 86400:02d}T{second // 3600 % 24:02d}:" \
                     f"{second // 60 % 60:02d}:{second % 60:02d}Z"
                block.append(json.dumps({
                    "query_id": f"q{q}", "query": text, "domain": DOMAINS[q % len(DOMAINS)],
                    "ts": ts, "user": f"u{int(users[i])}",
                    "shown": [{"id": d} for d in shown],
                    "clicks": [{"id": d} for d, hit in zip(shown, clicked[i].tolist()) if hit]},
                    separators=(",", ":")) + "\n")
            out.writelines(block)
            lines += size
    return {"lines": lines, "bytes": path.stat().st_size}


def _command(args: list[str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "recallwatch", *args], capture_output=True,
                         text=True, check=False)
    took = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"recallwatch {' '.join(args)} exited {out.returncode}: "
                         f"{out.stderr[-3000:]}")
    return took, out.stdout


def worker(step: str, path: Path, n: int) -> dict[str, Any]:
    log = path / f"log-{n}.jsonl"
    answer: dict[str, Any] = {"n": n, "lines": n, "log_bytes": log.stat().st_size}
    if step == "read":
        from recallwatch.online.log import InteractionLog

        before = peak_bytes()
        t0 = time.perf_counter()
        reader = InteractionLog(log)
        for _ in reader:
            pass
        took = time.perf_counter() - t0
        return {**answer, "seconds": took, "peak_bytes": peak_bytes(),
                "peak_before_bytes": before, "duplicate_lines": reader.summary.duplicate_lines}
    if step == "probes":
        took, printed = _command(["ops", "probes", str(path / f"probes-{n}.json"),
                                  "--queries", str(log), "--sample", str(SAMPLE["probes"])])
    elif step == "golden":
        took, printed = _command(["golden", "sample", str(log), "--out",
                                  str(path / f"golden-{n}.yaml"), "--n", str(SAMPLE["golden"]),
                                  "--format", "json"])
        told = json.loads(printed)
        answer["distinct_texts"] = told["log"]["distinct_texts"]
        printed = (f"{told['log']['distinct_texts']:,} distinct texts, "
                   f"{told['distinct_queries']:,} queries after merging, {told['sampled']} drawn")
    else:
        took, printed = _command(["online", "clicks", str(log)])
        seen = re.search(r"pairs\s+([\d,]+) seen", printed)
        if seen is None:
            raise SystemExit(f"online clicks printed no pair count: {printed[:2000]}")
        answer["pairs"] = int(seen.group(1).replace(",", ""))
        printed = f"{answer['pairs']:,} (query, result) pairs"
    return {**answer, "seconds": took, "peak_bytes": peak_bytes(children=True),
            "output": printed.strip()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", nargs="+", choices=STEPS, default=list(STEPS))
    p.add_argument("--lines", type=int, nargs=2, default=[200_000, 2_000_000])
    p.add_argument("--queries", type=int, default=50_000,
                   help="distinct questions the askings are drawn from (Zipf, weight 1/rank)")
    p.add_argument("--out", type=Path, default=None)
    worker_options(p, ["make", *STEPS])
    a = p.parse_args()
    if a.worker == "make":
        print(json.dumps(make_log(a.path / f"log-{a.n}.jsonl", a.n, a.queries)))
        return
    if a.worker:
        print(json.dumps(worker(a.worker, a.path, a.n)))
        return
    result = begun(code=str(ROOT), queries=a.queries, sample=SAMPLE)
    lines = []
    with tempfile.TemporaryDirectory(prefix="rw-logs-") as tmp:
        path = Path(tmp)
        result["logs"] = [in_process(__file__, "make", path, n, ROOT,
                                     ["--queries", str(a.queries)]) for n in a.lines]
        for made in result["logs"]:
            lines.append(f"log {made['lines']:>11,} lines  {made['bytes'] / 2**20:8.1f} MiB")
        for step in a.steps:
            runs = [in_process(__file__, step, path, n, ROOT) for n in a.lines]
            out = {"runs": runs, **per_unit(GOAL, runs[0], runs[1], "lines")}
            result[step] = out
            for r in runs:
                said = f"  ({r['output'].splitlines()[0][:90]})" if r.get("output") else ""
                lines.append(f"{step:7} {r['lines']:>11,} log lines  {r['seconds']:7.1f} s"
                             f"  peak {r['peak_bytes'] / 2**20:6.0f} MiB{said}")
            lines.append(f"{step:7} memory per log line {out['per_unit']:.1f} B")
            for units, name in (("distinct_texts", "distinct text"), ("pairs", "pair")):
                if units in runs[0]:  # what else grew with the log, the same growth divided
                    other = per_unit((f"B per {name}", None, 1.0), runs[0], runs[1], units)
                    out[f"per_{units}"] = other
                    lines.append(f"{step:7} or, all of it put on the {name}s: "
                                 f"{other['per_unit']:.1f} B per {name}")
    finish(result, lines, a.out)


if __name__ == "__main__":
    main()
