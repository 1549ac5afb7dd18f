"""``recallwatch eval QRELS RUN -m MEASURE …``: trec_eval's numbers from TREC files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from recallwatch.cli._options import EvalFormat, Measures

if TYPE_CHECKING:
    from recallwatch.metrics import EvalResult

__all__ = ["register"]

Format = Literal["table", "json", "tsv"]


def eval_command(
    qrels: Annotated[Path, typer.Argument(
        help="TREC qrels file 'qid iter docid rel' (plain or .gz).")],
    run: Annotated[Path, typer.Argument(
        help="TREC run file 'qid Q0 docid rank score tag' (plain or .gz), or a Parquet or "
        "Arrow file (.parquet, .arrow, .feather) with columns qid, docid and score.")],
    measure: Measures,
    per_query: Annotated[bool, typer.Option(
        "--per-query", help="Also print each query's values.")] = False,
    output_format: EvalFormat = "table",
) -> None:
    """Evaluate a run against TREC qrels (trec_eval -c semantics)."""
    from recallwatch.errors import UsageError
    from recallwatch.metrics import Qrels, evaluate_file, parse_measure

    if output_format not in ("table", "json", "tsv"):
        raise UsageError(f"--format must be table, json or tsv, found {output_format!r}")
    measures = [parse_measure(m) for m in measure]  # bad names fail before any file is read
    # A run grouped by query (as run files are written) is evaluated a block of queries at a
    # time: memory follows the block, not the file; the values are the same.
    done = evaluate_file(Qrels.from_trec(qrels), run, measures)
    if done.note:
        typer.echo(f"note: {done.note}", err=True)
    result = done.result
    if output_format == "json":
        typer.echo(json.dumps(result.to_json(per_query=per_query), indent=2))
    elif output_format == "tsv":
        _print_tsv(result, per_query)
    else:
        _print_table(result, per_query)


def _print_tsv(result: EvalResult, per_query: bool) -> None:
    typer.echo("query_id\t" + "\t".join(str(m) for m in result.measures))
    if per_query:
        for i, qid in enumerate(result.query_ids):
            values = "\t".join(repr(float(result.per_query[m][i])) for m in result.measures)
            typer.echo(f"{qid}\t{values}")
    typer.echo("all\t" + "\t".join(repr(result.aggregate[m]) for m in result.measures))


def _print_table(result: EvalResult, per_query: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_edge=False)
    table.add_column("query")
    for m in result.measures:
        table.add_column(str(m), justify="right")
    if per_query:
        for i, qid in enumerate(result.query_ids):
            table.add_row(qid, *(f"{result.per_query[m][i]:.4f}" for m in result.measures))
        table.add_section()
    table.add_row(
        f"mean ({len(result.query_ids)} queries)",
        *(f"{result.aggregate[m]:.4f}" for m in result.measures),
    )
    Console(soft_wrap=True).print(table)
    err = Console(stderr=True, soft_wrap=True, highlight=False)
    if result.missing_from_run:
        err.print(
            f"{len(result.missing_from_run)} judged queries absent from the run scored 0: "
            + ", ".join(result.missing_from_run)
        )
    if result.not_judged:
        err.print(
            f"{len(result.not_judged)} queries in the run have no judgments and were ignored: "
            + ", ".join(result.not_judged)
        )


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
