"""``recallwatch bench …``: the group, with ``bench sweep`` (also ``bench SWEEP.yaml``), ``bench
reference`` and ``bench quantize``; ``bench filtered`` and ``bench streaming`` live in ``live``,
``bench plan`` in ``plan``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from recallwatch.cli._common import emit, register_modules
from recallwatch.cli._options import (
    EngineChoice,
    EngineOption,
    MinOneDepth,
    OutDir,
    PricesFile,
    RayAddress,
    RayWorkers,
    RequiredOutDir,
    Seed,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)


class _BenchGroup(TyperGroup):
    """``bench SWEEP.yaml …`` runs the sweep, as it always has: an argument that names no
    subcommand is the sweep file of ``bench sweep``."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["sweep", *args]
        return super().parse_args(ctx, args)


bench_app = typer.Typer(
    cls=_BenchGroup,
    help="ANN benchmarks on your own vectors: `recallwatch bench SWEEP.yaml` (short for `bench "
    "sweep`) sweeps engines and their parameters; `bench quantize` weighs float16, int8 and "
    "binary vectors against float32; `bench plan` sizes an index before it is built; `bench "
    "reference` runs the reference experiments.",
    no_args_is_help=True,
)


def bench(
    sweep: Annotated[Path, typer.Argument(
        help="Sweep file (YAML): dataset, k, engines with build and query parameter grids. See "
        "docs/bench.md.")],
    out: OutDir = None,
    threads: Annotated[int | None, typer.Option(
        "--threads", min=1, help="Threads for batched search and builds (overrides the sweep's "
        "'threads').")] = None,
    rounds: Annotated[int | None, typer.Option(
        "--rounds", min=1, max=100,
        help="Rounds of the one-query-at-a-time timing (overrides the sweep's timing.rounds; "
        "default 5): each query setting of a build is timed this many times, interleaved "
        "round by round; QPS-1 is the median and the range of the rounds its spread.")] = None,
    fmt: TableJsonFormat = TableJson.table,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress lines on stderr.")] = False,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    prices: PricesFile = None,
) -> None:
    """Sweep ANN engines on one dataset: recall, QPS, latency, memory, the frontier, and the
    fastest configuration at each recall target.

    With --prices, also what serving 1,000 queries costs in money with each setting on the
    frontier (its CPU time one query at a time, and its index held in memory and on disk), with
    the arithmetic, and the cheapest setting at each recall target.

    The one-query-at-a-time timing is repeated in rounds (--rounds, default 5), the query
    settings of each build interleaved round by round: QPS-1 is the median of the rounds, with
    their range; the frontier ranks two settings by speed only when their ranges do not overlap,
    and "fastest at recall ≥ X" names the settings it cannot be told apart from.

    With --out (default: the sweep's 'out', if any) it writes results.json, results.csv and
    three plots there: recall against QPS (frontier.png), against build time (build_time.png)
    and against index size (index_size.png). With --engine ray a Ray task loads and prepares
    the vectors and keeps them in Ray's object store, the exact ground truth is computed by Ray
    tasks in shards of the base, and each engine configuration is built and measured by a Ray
    task of its own: the command's process holds none of the vectors, and gives the same recalls
    and the same frontier as one process, with the timings of the workers."""
    from dataclasses import replace

    from recallwatch._files import check_output_dir
    from recallwatch.bench.output import render_table, sweep_to_dict, write_outputs
    from recallwatch.bench.sweep import ConfigResult, load_sweep, run_sweep

    config = load_sweep(sweep)
    priced = None
    if prices is not None:
        from recallwatch.formats.prices import load_prices

        priced = load_prices(prices)  # a bad file fails before anything is measured
    if threads is not None:
        config = replace(config, threads=threads)
    target = out or (None if config.out is None else Path(config.base_dir) / config.out)
    if target is not None:
        check_output_dir(target, "--out-dir" if out is not None else f"{sweep}: out")
    if rounds is not None:
        config = replace(config, rounds=rounds)

    def progress(r: ConfigResult) -> None:
        if not quiet:
            spread = r.qps_rounds
            typer.echo(f"{r.label} {r.params}: R@{r.k} {r.recall[r.k]:.4f}, "
                       f"{r.qps_single:,.0f} QPS-1 ({min(spread):,.0f}–{max(spread):,.0f} over "
                       f"{len(spread)} rounds)", err=True)

    from recallwatch.scale import engine_session

    with engine_session(engine.value, address, workers) as on_ray:
        if on_ray:
            from recallwatch.scale.ray_bench import sweep_on_ray

            result = sweep_on_ray(config, on_result=progress, workers=workers)
        else:
            result = run_sweep(config, on_result=progress)
    if fmt is TableJson.json:
        emit(json.dumps(sweep_to_dict(result, priced), indent=2, default=str))
    else:
        emit(render_table(result, priced))
    if target is not None:
        for path in write_outputs(result, target, priced):
            typer.echo(f"wrote {path}", err=True)


def quantize(
    base: Annotated[Path | None, typer.Argument(
        help="Vectors (.npy, .fvecs, .fbin, or an ANN-Benchmarks .hdf5 whose train/test are "
        "used).")] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="Query vectors file; default: --sample rows held out of "
        "BASE.")] = None,
    sample: Annotated[int, typer.Option(
        "--sample", min=1, help="Queries held out of BASE when --queries is not given.")] = 1000,
    synthetic: Annotated[str | None, typer.Option(
        "--synthetic", help="Instead of BASE, N synthetic vectors of dimension D clustered around "
        "random topics: NxD, e.g. 20000x128.")] = None,
    metric: Annotated[str, typer.Option(
        "--distance", help="Similarity of the vectors: ip, l2 or cosine (an .hdf5 file brings "
        "its own).")] = "ip",
    k: MinOneDepth = 10,
    depths: Annotated[str, typer.Option(
        "--depths", help="Rescoring depths R for binary + exact rescoring.")] = (
        "10,20,50,100,200,500,1000,2000"),
    seed: Seed = 0,
    store: StoreURIOrNone = None,
    out: OutDir = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """float32 / float16 / int8 / binary: bytes per vector and recall@k against float32, and
    binary screening of the whole collection followed by exact rescoring of its top R.

    With --store, on the store's own vectors (--sample of them held out as queries, cosine), plus
    the store's own quantized indexes measured the same way on a copy (LanceDB IVF_PQ and
    IVF_HNSW_SQ) or read-only (pgvector halfvec and bit): the store is never written.

    --seed draws the held-out queries (or the synthetic data); with --out it writes
    quantization.json and quantization.md there."""
    from recallwatch._files import check_output_dir
    from recallwatch.bench.datasets import dataset_from_spec
    from recallwatch.bench.exact_knn import ground_truth
    from recallwatch.bench.quantize import quantization_study
    from recallwatch.errors import InputError, UsageError

    if sum(x is not None for x in (base, synthetic, store)) != 1:
        raise UsageError("give exactly one of BASE, --synthetic NxD or --store URI")
    if out is not None:
        check_output_dir(out, "--out-dir")
    try:
        rs = [int(v) for v in depths.split(",") if v.strip()]
    except ValueError:
        raise InputError(field="--depths", expected="comma-separated integers",
                         found=depths) from None
    if synthetic is not None:
        try:
            n, d = (int(v) for v in synthetic.lower().split("x"))
        except ValueError:
            raise InputError(field="--synthetic", expected="NxD, e.g. 20000x128",
                             found=synthetic) from None
        spec: dict[str, object] = {"synthetic": {"n": n, "dim": d, "queries": sample,
                                                 "seed": seed}, "metric": metric}
    elif store is not None:
        spec = {"store": store, "queries": {"sample": sample, "seed": seed}}
    elif base is not None and base.suffix.lower() in (".hdf5", ".h5"):
        spec = {"hdf5": str(base)}
    else:
        spec = {"base": str(base), "metric": metric,
                "queries": str(queries) if queries else {"sample": sample, "seed": seed}}
    data = dataset_from_spec(spec, source=str(base or store or "--synthetic"))
    truth = ground_truth(data.base, data.queries, k, data.metric)
    study = quantization_study(data.base, data.queries, k=k, metric=data.metric, depths=rs,
                               truth=truth)
    doc = {"dataset": {"name": data.name, "hash": data.hash, "source": data.source},
           **study.to_dict()}
    markdown = study.markdown()
    if store is not None:
        from recallwatch.bench.native_quant import native_markdown, native_quantization
        from recallwatch.cli._common import open_store

        opened = open_store(store)
        try:
            native = native_quantization(opened, data, truth, k)
        finally:
            opened.close()
        doc["store_indexes"] = [r.to_dict() for r in native]
        markdown += "\n" + native_markdown(native, k)
    if fmt is TableJson.json:
        emit(json.dumps(doc, indent=2))
    else:
        lines = [markdown, f"binary + exact rescoring of the top R (recall@{k}):"]
        lines += [f"  R={p.R:<6} ({p.share:.2%} of the collection)  recall {p.recall:.3f}"
                  for p in study.rescoring]
        emit("\n".join(lines))
    if out is not None:
        from recallwatch.bench.output import write_report_pair

        written = write_report_pair(out, "quantization", doc, markdown)
        typer.echo(f"wrote {', '.join(str(p) for p in written)}", err=True)


# Below ~39 vectors per IVF list (128 lists) faiss warns that k-means has too few to train on;
# past 10M the collection and its copies need tens of GB.
ReferenceSize = Annotated[int, typer.Option(
    "--size", min=5_000, max=10_000_000,
    help="Vectors in the collection the experiments run on (the drift experiment adds half as "
    "many again per wave of new topics). The default is small enough for a laptop; a larger "
    "collection shows the magnitudes of a larger one.")]


def reference(out: RequiredOutDir, n: ReferenceSize = 20_000) -> None:
    """Run the reference experiments with fixed seeds: figures and tables of the metrics, recall
    by depth k, latency against collection size, drift and reindex, quantization and binary
    rescoring, written into --out with experiments.json (the configuration of every number).
    Each file is printed with the size it was made at."""
    from recallwatch._files import check_output_dir
    from recallwatch.bench.reference import ExperimentConfig, figure_sizes, run_experiments

    check_output_dir(out, "--out-dir")
    cfg = ExperimentConfig(n=n)
    result = run_experiments(out, cfg)
    sizes = figure_sizes(cfg)
    for name in result["files"]:
        sys.stdout.write(f"{out / name}  ({sizes[name]})\n")


def register(app: typer.Typer) -> None:
    bench_app.command("sweep")(bench)
    bench_app.command("reference")(reference)
    bench_app.command("quantize")(quantize)
    register_modules(bench_app, __name__, ("live", "plan"))
    app.add_typer(bench_app, name="bench")
