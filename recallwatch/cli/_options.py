"""Options that several commands share, declared once (as sqlite-utils' ``output_options``).

Each is a ``typing.Annotated`` alias carrying the flag and its one help text; a command writes
``history: HistoryPath = DEFAULT_HISTORY`` and gets the same option as every other command.
Where two commands need different types or bounds, the aliases share one declaration or one
help text, so a flag never says two different things. A test walks the app and fails when it
does. Kept light: ``recallwatch --help`` imports this module.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "DEFAULT_HISTORY",
    "Alpha",
    "BoundedAlpha",
    "DatasetName",
    "Depth",
    "EmbedderSpec",
    "EvalFormat",
    "GateFormat",
    "GateFormatOption",
    "GoldenArg",
    "GoldenOption",
    "HistoryPath",
    "HumanQrels",
    "HumanQrelsOrNone",
    "Measures",
    "MinOneDepth",
    "NoHistory",
    "NoiseFormat",
    "NoiseFormatOption",
    "OutDir",
    "PolicyFile",
    "Power",
    "ProbesFile",
    "RecallFloor",
    "RequiredOutDir",
    "ResultsFile",
    "Seed",
    "StoreURI",
    "StoreURIOrNone",
    "TableJson",
    "TableJsonFormat",
]

# --history is a str, not a Path: a Path would turn postgresql://h/db into postgresql:/h/db.
DEFAULT_HISTORY = ".recallwatch/history.db"


class TableJson(str, Enum):
    table = "table"
    json = "json"


class GateFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"


class NoiseFormat(str, Enum):
    yaml = "yaml"
    json = "json"


# -- where the data is -------------------------------------------------------------------------

_history = typer.Option("--history", help="Run history: a SQLite file, or "
                        "postgresql://USER@HOST:PORT/DB (password from the environment).")
HistoryPath = Annotated[str, _history]

NoHistory = Annotated[bool, typer.Option("--no-history",
                                         help="Do not record this in the run history.")]

_store = typer.Option("--store", help="Vector store URI, e.g. lancedb://kb?table=chunks (also "
                      "postgresql://, qdrant://, chroma://, milvus://, faiss://, hnswlib://).")
StoreURI = Annotated[str, _store]
StoreURIOrNone = Annotated[str | None, _store]

ResultsFile = Annotated[Path | None, typer.Option(
    "--results", help="Results file (JSONL) from any external search system, instead of "
    "--store.")]

_GOLDEN_HELP = "Golden set file (YAML, JSON or JSONL): queries and the chunks each must find."
GoldenArg = Annotated[Path, typer.Argument(help=_GOLDEN_HELP)]
GoldenOption = Annotated[Path | None, typer.Option("--golden", help=_GOLDEN_HELP)]

PolicyFile = Annotated[Path | None, typer.Option(
    "--policy", help="Policy file (YAML): the thresholds of the acceptance rules.")]

EmbedderSpec = Annotated[str | None, typer.Option(
    "--embedder", help="Embedder spec, e.g. use-multilingual, e5-small or "
    "'openai-http?base_url=URL&model=NAME&api_key_env=VAR' (default: the one that built the "
    "store).")]

ProbesFile = Annotated[Path, typer.Option(
    "--probes", help="Probe set (.json from `recallwatch probes`, .txt/.jsonl logged queries, "
    "or .npy vectors).")]

DatasetName = Annotated[str | None, typer.Option(
    "--dataset", help="Only runs of this golden set (by its name).")]

_out = typer.Option("--out", help="Directory to write the result files into.")
OutDir = Annotated[Path | None, _out]
RequiredOutDir = Annotated[Path, _out]

# -- what to measure ---------------------------------------------------------------------------

_DEPTH_HELP = "Depth of recall@k."
Depth = Annotated[int, typer.Option("--k", help=_DEPTH_HELP)]
MinOneDepth = Annotated[int, typer.Option("--k", min=1, help=_DEPTH_HELP)]

RecallFloor = Annotated[float, typer.Option(
    "--floor", help="Lowest acceptable recall@k against exact search.")]

Measures = Annotated[list[str], typer.Option(
    "--measure", "-m", help="Measure in ir_measures syntax, e.g. nDCG@10, R@100, RR, AP, "
    "P(rel=2)@10, nDCG(dcg=exp-log2)@10. Repeat for several.")]

_ALPHA_HELP = "Significance level of the tests."
Alpha = Annotated[float, typer.Option("--alpha", help=_ALPHA_HELP)]
BoundedAlpha = Annotated[float, typer.Option("--alpha", min=0.0, max=1.0, help=_ALPHA_HELP)]

Power = Annotated[float, typer.Option(
    "--power", min=0.0, max=1.0,
    help="Statistical power (the chance of detecting a real effect) for the sample-size "
    "estimates.")]

_QRELS_HELP = ("Human judgments (TREC qrels) to measure the labels against (weighted kappa; "
               "agreement between two sets of grades, 1 = perfect, 0 = chance).")
HumanQrels = Annotated[Path, typer.Option("--qrels", help=_QRELS_HELP)]
HumanQrelsOrNone = Annotated[Path | None, typer.Option("--qrels", help=_QRELS_HELP)]

Seed = Annotated[int, typer.Option(
    "--seed", help="Seed of the random draws: the same seed gives the same result.")]

# -- output ------------------------------------------------------------------------------------

_FORMAT_HELP = "Output on stdout."
_format = typer.Option("--format", help=_FORMAT_HELP)
TableJsonFormat = Annotated[TableJson, _format]
GateFormatOption = Annotated[GateFormat, _format]
NoiseFormatOption = Annotated[NoiseFormat, _format]
# eval checks the value itself, so that its error message lists the three formats
EvalFormat = Annotated[str, typer.Option("--format", help=_FORMAT_HELP, metavar="table|json|tsv")]
