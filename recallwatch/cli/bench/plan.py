"""``recallwatch bench plan``: memory, disk, build time and queries per second of an index before
it is built, with the formulas; ``--check`` compares the sizes with real indexes built small.

Exit codes: 0 done, 2 usage or input error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from recallwatch.cli._common import emit, emit_json
from recallwatch.cli._options import TableJson, TableJsonFormat


def plan(
    vectors: Annotated[str, typer.Option(
        "--vectors", help="How many vectors: 100M, 1.5B, 20k, 1e8 or 100000000.")],
    dim: Annotated[int, typer.Option("--dim", min=1, help="Dimensions of each vector.")],
    dtype: Annotated[str, typer.Option(
        "--dtype", help="How each component is stored: f32, f16, int8 or binary (one bit).")] = (
        "f32"),
    index: Annotated[str, typer.Option(
        "--index", help="flat (exact scan), ivf (inverted lists) or hnsw (a graph).")] = "flat",
    m: Annotated[int, typer.Option("--m", min=2, help="HNSW: links per vector and layer "
                                   "(2M on the bottom layer).")] = 16,
    ef_construction: Annotated[int, typer.Option(
        "--ef-construction", min=1, help="HNSW: candidates examined per insertion.")] = 200,
    ef_search: Annotated[int, typer.Option(
        "--ef-search", min=1, help="HNSW: candidates examined per query.")] = 64,
    nlist: Annotated[int | None, typer.Option(
        "--nlist", min=1, help="IVF: number of lists (default about 4 × √n).")] = None,
    nprobe: Annotated[int, typer.Option(
        "--nprobe", min=1, help="IVF: lists searched per query.")] = 32,
    replicas: Annotated[int, typer.Option(
        "--replicas", min=1, help="Copies of the index that serve queries.")] = 1,
    rates: Annotated[Path | None, typer.Option(
        "--rates", help="This machine's measured rates (JSON); default "
        "$RECALLWATCH_RATES or ~/.cache/recallwatch/machine.json, measured when absent.")] = None,
    calibrate: Annotated[bool, typer.Option(
        "--calibrate", help="Measure this machine's rates again (a few seconds) and store "
        "them.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Also build real faiss, hnswlib and LanceDB indexes of --check-vectors "
        "random vectors of --dim dimensions and report the plan's error on each.")] = False,
    check_vectors: Annotated[int, typer.Option(
        "--check-vectors", min=100, help="Vectors in the --check indexes.")] = 20000,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Plan an index of --vectors vectors of --dim dimensions: memory of the vectors and of the
    index, disk, build time and queries per second per core, each with its formula.

    Sizes are arithmetic on the shape (1 GB = 10^9 bytes). Times use rates measured on this
    machine with small faiss indexes (one thread, one query at a time), stored with the
    machine's description; they are estimates, and --check shows how far they land on real
    indexes."""
    from recallwatch.bench.plan import footprint, parse_count
    from recallwatch.bench.rates import (
        default_rates_path,
        load_rates,
        measure_rates,
        same_machine,
        save_rates,
    )

    n = parse_count(vectors)
    # the shape first: a plan that cannot be made is refused before any measuring
    footprint(n, dim, dtype, index, m=m, ef_construction=ef_construction,  # type: ignore[arg-type]
              ef_search=ef_search, nlist=nlist, nprobe=nprobe, replicas=replicas)
    path = rates or default_rates_path()
    record = None if calibrate else load_rates(path)
    if record is None:
        typer.echo("measuring this machine's rates (a few seconds)…", err=True)
        record = measure_rates()
        save_rates(record, path)
        typer.echo(f"wrote {path}", err=True)
    elif not same_machine(record):
        typer.echo(f"note: the rates in {path} were measured on another machine "
                   f"({record['machine'].get('processor')}); run with --calibrate to measure "
                   "this one", err=True)
    fp = footprint(n, dim, dtype, index, m=m, ef_construction=ef_construction,  # type: ignore[arg-type]
                   ef_search=ef_search, nlist=nlist, nprobe=nprobe, replicas=replicas,
                   rates=record)
    rows = None
    if check:
        from recallwatch.bench.plan_check import check_plan

        typer.echo(f"building indexes of {check_vectors:,} vectors to check the plan…", err=True)
        rows = check_plan(check_vectors, dim, dtype=fp.dtype, m=m,  # type: ignore[arg-type]
                          nlist=nlist, rates=record)
    if fmt is TableJson.json:
        doc: dict[str, Any] = {"plan": fp.to_dict(), "rates_file": str(path)}
        if rows is not None:
            doc["check"] = [r.to_dict() for r in rows]
        emit_json(doc)
        return
    emit(_render(fp, str(path), record))
    if rows is not None:
        emit(_render_check(rows))


def _render(fp: Any, path: str, record: dict[str, Any]) -> str:
    params = "".join(f", {k}={v}" for k, v in fp.params.items())
    out = [f"{fp.n:,} vectors × {fp.d} dimensions, "
           f"{fp.dtype}, index {fp.index}{params}, {fp.replicas} replica(s)", ""]
    width = max(len(line.name) for line in fp.lines)
    for line in fp.lines:
        out.append(f"{line.name:<{width}}  {line.formula}")
        out.append(f"{'':<{width}}    = {line.worked}")
    cal = record["calibration"]
    out += ["", f"rates measured {record['measured_at']} on {record['machine'].get('processor')} "
            f"(n={cal['n']}, d={cal['d']}, M={cal['M']}, one thread), from {path}"]
    return "\n".join(out)


def _render_check(rows: list[Any]) -> str:
    out = ["", "check against real indexes (error = (plan − real) / real):",
           f"{'library':<20} {'index':<5} {'dtype':<6} {'plan bytes':>12} {'real bytes':>12} "
           f"{'error':>8} {'bound':>7} {'build s plan/real':>19} {'QPS/core plan/real':>19}"]
    for r in rows:
        bound = "—" if r.bound is None else f"{r.bound:.2%}"
        build = _pair(r.predicted_build_s, r.measured_build_s, "{:.2f}")
        qps = _pair(r.predicted_qps, r.measured_qps, "{:,.0f}")
        out.append(f"{r.library:<20} {r.index:<5} {r.dtype:<6} {r.predicted_bytes:>12,} "
                   f"{r.actual_bytes:>12,} {r.error:>+8.2%} {bound:>7} {build:>19} {qps:>19}")
    return "\n".join(out)


def _pair(a: float | None, b: float | None, f: str) -> str:
    return f"{'—' if a is None else f.format(a)}/{'—' if b is None else f.format(b)}"


def register(app: typer.Typer) -> None:
    app.command("plan")(plan)
