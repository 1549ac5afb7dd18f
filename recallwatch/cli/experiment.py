"""``recallwatch experiment PLAN --out-dir DIR``: a base pipeline and its variants on one golden
set."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit, emit_json
from recallwatch.cli._options import (
    EngineChoice,
    EngineOption,
    HistoryOrNone,
    PricesFile,
    RayAddress,
    RayWorkers,
    RequiredOutDir,
    TableJson,
    TableJsonFormat,
)


def experiment(
    plan: Annotated[Path, typer.Argument(
        help="The plan (YAML): golden, corpus, policy (optional), base and variants. See "
        "docs/experiments.md.")],
    out: RequiredOutDir,
    force: Annotated[bool, typer.Option(
        "--force", help="Replace the results of another plan's experiment in --out-dir (a rerun "
        "of the same plan file replaces its own without it).")] = False,
    fmt: TableJsonFormat = TableJson.table,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    history: HistoryOrNone = None,
    timing_rounds: Annotated[int, typer.Option(
        "--timing-rounds", min=0, max=100,
        help="Rounds of the side-by-side latency timing after the builds: up to 20 golden "
        "queries searched through every variant, interleaved call by call, this many times "
        "each (0: none; the latencies are then each gate's own, taken at different moments, "
        "and no variant counts as cheaper).")] = 3,
    prices: PricesFile = None,
) -> None:
    """Try a base pipeline and its variants on one golden set and say which wins, with evidence.

    A variant changes any of: chunking (re-chunk the corpus by sentences, by size with overlap, or
    by paragraph; content anchors in the golden set resolve on every chunking), the embedder,
    retrieval (dense, bm25, or both fused), a reranker, the LanceDB index settings, or a corpus
    variant file (e.g. tables with written descriptions). Each variant is built once and cached
    in DIR/cache by the hash of what it is made of: a rerun builds only what changed. A cached
    build is checked against the record of what it was (the chunks' SHA-256; the index files'
    SHA-256, rows and version) and built again, with a note, when it differs.

    PLAN and DIR are relative to the working folder, the paths inside the plan to the plan. One
    experiment at a time uses DIR (another one is refused, naming its pid); DIR's results of
    another plan file are replaced only with --force. On a terminal the steps are shown on
    stderr (which variant, step n of N, the time left); never in a pipe or with --format json.

    For each variant: the gate's verdict, mean quality, recall@K, nDCG@K, MRR, fact recall@K
    (the share of quoted facts that reached the top K), the ingest time, the store's bytes on
    disk and the search latency p50/p99 (timed side by side, with intervals); a paired
    randomization test against the base, with Holm's correction across the variants, and the
    queries won, tied and lost.

    A variant wins only with evidence: it must beat the base on the tune queries (mean quality,
    or nDCG@K at no loss of quality; Holm across the variants and both measures) and be
    confirmed on the test queries; a tie between variants goes to the significantly cheaper
    one. Otherwise the output says "no variant beat the base: keep it" and the winner is the
    base. Without a tune/test split the winner is chosen and judged on the same queries, and a
    warning says so. Dominated variants (no better on quality, no cheaper) are marked.

    With an answers: section in the plan (the gate's --generator, --answer-judge,
    --answer-labels…; a variant may set its own generator: and prompt:), each variant's
    generator answers every question from its top K and from the expected chunks alone, and
    one judge, measured once against the labelled answers, judges both: per variant,
    faithfulness, answer relevance, correctness, hallucination rate, and the wrong answers named
    retrieval, generation or both. The answers are shown, not used for the choice.

    With --prices, each variant's cost in money of serving 1,000 queries (its gate's search time
    and query embedding on the judged queries, its index in memory, its store on disk), with
    the arithmetic.

    Prints the table (--format json: results.json's record); writes DIR/results.json,
    DIR/results.md (the table in Markdown) and DIR/report.html (with the quality-vs-cost
    frontier). With --history, the results are also recorded in the run history, where
    `recallwatch ops serve` lists them on its experiments page (a team's shared history shows
    every member's experiments). Exit 0 when it ran, 2 on a bad plan or input (or DIR in use),
    130 when interrupted: the message says which builds the cache kept, and the same experiment
    run again reuses them.
    """
    from recallwatch.experiment import load_plan, run_experiment, write_outputs
    from recallwatch.experiment.folder import claim
    from recallwatch.experiment.output import to_text

    loaded = load_plan(plan)
    priced = None
    if prices is not None:
        from recallwatch.formats.prices import load_prices

        priced = load_prices(prices)  # a bad file fails before anything is built
    if history is not None:  # a wrong location is said before the experiment runs, not after
        from recallwatch.history import History

        History(history).close()
    # the folder is held from the first build to the last file written
    with claim(out, loaded, replace=force) as folder:
        result = run_experiment(loaded, folder, engine=engine.value, address=address,
                                workers=workers, replace=force,
                                progress=fmt is TableJson.table and sys.stderr.isatty(),
                                timing_rounds=timing_rounds, prices=priced)
        paths = write_outputs(result, folder)
    if fmt is TableJson.json:
        emit_json(result.to_dict())
    else:
        emit(to_text(result))
    for path in paths:
        typer.echo(f"wrote {out / path.name}", err=True)  # as the user named the folder
    if history is not None:
        from recallwatch.history import History, record_experiment

        with History(history) as h:
            number = record_experiment(h, (folder / "results.json").read_text(encoding="utf-8"),
                                       out_dir=str(folder.resolve()))
            typer.echo(f"recorded experiment {number} in {h.location}", err=True)


def register(app: typer.Typer) -> None:
    app.command("experiment")(experiment)
