"""``recallwatch bench filtered`` and ``recallwatch bench streaming``: a store's own search measured
with metadata filters of 1 %, 10 % and 50 % selectivity, and while rows are being inserted.

Exit codes: 0 done, 2 usage or input error (a store that already holds rows included).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import (
    MinOneDepth,
    OutDir,
    Seed,
    StoreURI,
    SyntheticSpec,
    TableJson,
    TableJsonFormat,
)

_Base = Annotated[Path | None, typer.Argument(
    help="Vectors (.npy, .fvecs, .fbin); default: --synthetic.")]
_Queries = Annotated[int, typer.Option(
    "--queries", min=1, help="Query vectors: fresh synthetic ones, or rows held out of BASE.")]


def filtered(
    store: StoreURI,
    base: _Base = None,
    synthetic: SyntheticSpec = "20000x128",
    queries: _Queries = 200,
    k: MinOneDepth = 10,
    selectivity: Annotated[str, typer.Option(
        "--selectivity", help="Shares of the rows the filters let through, increasing, "
        "comma-separated.")] = "0.01,0.1,0.5",
    seed: Seed = 0,
    out: OutDir = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Filtered search as VectorDBBench measures it: recall@k and queries per second when each
    query carries a metadata filter that lets through 1 %, 10 % or 50 % of the rows (its
    selectivity), next to the unfiltered search.

    The rows are written into --store, which must be new or empty (a store that already holds
    chunks is refused), with a filter tag in their domain field; each query runs
    alone through the store's own search and filter (LanceDB filters before the ANN search;
    pgvector walks its index until k rows pass, or filters afterwards with
    ?iterative_scan=off), and recall is measured against the exact top-k among the rows that
    pass the filter (brute force). With --out it writes filtered.json and filtered.md there."""
    from recallwatch._files import check_output_dir
    from recallwatch.bench.filtered import run_filtered
    from recallwatch.bench.live import open_empty
    from recallwatch.errors import InputError

    try:
        shares = [float(v) for v in selectivity.split(",") if v.strip()]
    except ValueError:
        raise InputError(field="--selectivity", expected="comma-separated fractions, e.g. "
                         "0.01,0.1,0.5", found=selectivity) from None
    if out is not None:
        check_output_dir(out, "--out-dir")
    data = _dataset(base, synthetic, queries, seed)
    opened = open_empty(store)
    try:
        result = run_filtered(opened, data, k, selectivities=shares, seed=seed)
    finally:
        opened.close()
    _report(result.to_dict(), result.markdown(), fmt, out, "filtered")


def streaming(
    store: StoreURI,
    base: _Base = None,
    synthetic: SyntheticSpec = "20000x128",
    queries: _Queries = 200,
    k: MinOneDepth = 10,
    initial: Annotated[float, typer.Option(
        "--initial", min=0.0, max=1.0, help="Share of the rows written in one go before the "
        "stream starts (the store builds its ANN index on them if its settings say so).")] = 0.5,
    batch: Annotated[int, typer.Option(
        "--batch", min=1, help="Rows per inserted batch (pgvector rebuilds its whole index "
        "after a batch of 1,000 rows or more: keep them smaller to measure its inserts).")] = 500,
    seed: Seed = 0,
    out: OutDir = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Recall and latency while rows are being inserted (insert-while-search), and after the
    stream ends.

    --initial of the rows go into --store (new or empty) first, then the rest in batches of
    --batch rows, written by a second handle on the store while queries run one at a time
    (their latency under writes). After each batch every query runs again: recall@k against
    the exact top-k over the rows inserted so far (brute force), with p50/p99 latency. With
    --out it writes streaming.json and streaming.md there."""
    from recallwatch._files import check_output_dir
    from recallwatch.bench.live import open_empty
    from recallwatch.bench.streaming import run_streaming

    if out is not None:
        check_output_dir(out, "--out-dir")
    data = _dataset(base, synthetic, queries, seed)
    first = max(1, round(initial * data.base.shape[0]))
    opened = open_empty(store)
    try:
        result = run_streaming(store, opened, data, k, initial=first, batch=batch)
    finally:
        opened.close()
    _report(result.to_dict(), result.markdown(), fmt, out, "streaming")


def _dataset(base: Path | None, synthetic: str, queries: int, seed: int) -> Any:
    from recallwatch.bench.datasets import dataset_from_spec
    from recallwatch.errors import InputError

    if base is not None:
        spec: dict[str, object] = {"base": str(base), "metric": "cosine",
                                   "queries": {"sample": queries, "seed": seed}}
        return dataset_from_spec(spec, source=str(base))
    try:
        n, d = (int(v) for v in synthetic.lower().split("x"))
    except ValueError:
        raise InputError(field="--synthetic", expected="NxD, e.g. 20000x128",
                         found=synthetic) from None
    spec = {"synthetic": {"n": n, "dim": d, "queries": queries, "seed": seed},
            "metric": "cosine"}
    return dataset_from_spec(spec, source="--synthetic")


def _report(doc: dict[str, Any], markdown: str, fmt: TableJson, out: Path | None,
            name: str) -> None:
    from recallwatch.bench.output import write_report_pair

    emit(json.dumps(doc, indent=2, default=str) if fmt is TableJson.json else markdown)
    if out is not None:
        written = write_report_pair(out, name, doc, markdown)
        typer.echo(f"wrote {', '.join(str(p) for p in written)}", err=True)


def register(app: typer.Typer) -> None:
    app.command("filtered")(filtered)
    app.command("streaming")(streaming)
