"""The footprint planner against real indexes at several sizes: how far its bytes, build seconds
and queries per second land from what faiss, hnswlib and LanceDB really do on this machine.

    .venv/bin/python benchmarks/plan_bench.py [--sizes 5000,20000,50000] [--dim 128]
                                              [--dtypes f32,int8] [--no-lancedb] [--out FILE.json]

The rates are measured once at the start (``recallwatch plan --calibrate`` does the same), then
for each size and representation :func:`recallwatch.bench.plan_check.check_plan` builds the
indexes with one thread. Sizes must land within their stated bound; times are reported as the
ratio planned / measured, which shows how far an extrapolation from small indexes can be trusted
on this machine. The JSON holds the machine record, the rates and every row. Exits 1 if a
bounded size lands outside its bound.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from recallwatch.bench.plan_check import check_plan
from recallwatch.bench.rates import measure_rates


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="5000,20000,50000")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--dtypes", default="f32,int8")
    ap.add_argument("--no-lancedb", action="store_true")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    record = measure_rates()
    rows = []
    outside = 0
    print(f"{'n':>7} {'library':<20} {'index':<5} {'dtype':<6} {'bytes err':>9} {'bound':>7} "
          f"{'build plan/real':>15} {'QPS plan/real':>13}")
    for n in (int(s) for s in args.sizes.split(",")):
        for dtype in args.dtypes.split(","):
            for r in check_plan(n, args.dim, dtype=dtype,  # type: ignore[arg-type]
                                rates=record, lancedb=not args.no_lancedb):
                rows.append(r.to_dict())
                bad = r.bound is not None and abs(r.error) > r.bound
                outside += bad
                build = ("—" if not r.predicted_build_s or not r.measured_build_s
                         else f"{r.predicted_build_s / r.measured_build_s:.2f}")
                qps = ("—" if not r.predicted_qps or not r.measured_qps
                       else f"{r.predicted_qps / r.measured_qps:.2f}")
                bound = "—" if r.bound is None else f"{r.bound:.2%}"
                print(f"{n:>7} {r.library:<20} {r.index:<5} {r.dtype:<6} {r.error:>+9.2%} "
                      f"{bound:>7} {build:>15} {qps:>13}{'  OUTSIDE BOUND' if bad else ''}",
                      flush=True)
    if args.out:
        args.out.write_text(json.dumps({"rates": record, "dim": args.dim, "rows": rows},
                                       indent=2) + "\n", encoding="utf-8")
    return 1 if outside else 0


if __name__ == "__main__":
    sys.exit(main())
