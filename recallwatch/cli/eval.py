"""``recallwatch eval QRELS RUN -m MEASURE …``: trec_eval's numbers from TREC files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import EvalFormat, Measures, Subtopics

if TYPE_CHECKING:
    from recallwatch.metrics import EvalResult

__all__ = ["register"]

Format = Literal["table", "json", "tsv"]


def eval_command(
    qrels: Annotated[Path, typer.Argument(
        help="TREC qrels file 'qid iter docid rel' (plain or .gz); or a public collection's "
        "judgments: irds:DATASET_ID (ir_datasets) or beir:DIR[#split].")],
    run: Annotated[Path, typer.Argument(
        help="TREC run file 'qid Q0 docid rank score tag' (plain or .gz), or a Parquet or "
        "Arrow file (.parquet, .arrow, .feather) with columns qid, docid and score.")],
    measure: Measures,
    per_query: Annotated[bool, typer.Option(
        "--per-query", help="Also print each query's values.")] = False,
    output_format: EvalFormat = "table",
    subtopics: Subtopics = None,
) -> None:
    """Evaluate a run against TREC qrels (trec_eval -c semantics)."""
    from recallwatch.errors import UsageError
    from recallwatch.metrics import Run, evaluate, evaluate_file, parse_measure
    from recallwatch.metrics.diversity import read_judgments

    if output_format not in ("table", "json", "tsv"):
        raise UsageError(f"--format must be table, json or tsv, found {output_format!r}")
    measures = [parse_measure(m) for m in measure]  # bad names fail before any file is read
    if subtopics is not None or any(m.family.needs == "subtopics" for m in measures):
        judged, by_subtopic = read_judgments(qrels, subtopics, measures)
        result = evaluate(judged, Run.read(run), measures, by_subtopic)
    else:
        # The run is evaluated a block of queries at a time (one not grouped by query is
        # regrouped through temporary files first; qrels larger than a block are scattered
        # by query with it): memory follows the block, not the files; the values are the same.
        done = evaluate_file(qrels, run, measures)
        if done.note:
            typer.echo(f"note: {done.note}", err=True)
        result = done.result
    if output_format == "json":
        typer.echo(json.dumps(result.to_json(per_query=per_query), indent=2))
    elif output_format == "tsv":
        _print_tsv(result, per_query)
    else:
        emit(table_text(result, str(run), per_query))


def _print_tsv(result: EvalResult, per_query: bool) -> None:
    typer.echo("query_id\t" + "\t".join(str(m) for m in result.measures))
    if per_query:
        for i, qid in enumerate(result.query_ids):
            values = "\t".join(repr(float(result.per_query[m][i])) for m in result.measures)
            typer.echo(f"{qid}\t{values}")
    typer.echo("all\t" + "\t".join(repr(result.aggregate[m]) for m in result.measures))


def table_text(result: EvalResult, run_name: str, per_query: bool) -> str:
    """The terminal output: the run named, a row per query (with ``per_query``) then the mean,
    what the mean counts, and the queries scored 0 or left out (compare's style)."""
    from recallwatch._terminal import table_lines
    from recallwatch.cli._tables import query_notes, value

    rows = []
    if per_query:
        rows = [[qid, *(value(float(result.per_query[m][i])) for m in result.measures)]
                for i, qid in enumerate(result.query_ids)]
    rows.append(["mean", *(value(result.aggregate[m]) for m in result.measures)])
    n = len(result.query_ids)
    lines = [f"run: {run_name}", "",
             *table_lines(["query", *(str(m) for m in result.measures)], rows,
                          breaks=[len(rows) - 1] if per_query else []),
             "",
             f"{n} quer{'y' if n == 1 else 'ies'}; mean over every judged query (trec_eval -c: "
             "a judged query the run did not return scores 0).",
             *query_notes([("the run", result.missing_from_run)], result.not_judged)]
    return "\n".join(lines)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_command)
