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
from typing import Annotated, Any

import typer

__all__ = [
    "DEFAULT_HISTORY",
    "AllPairs",
    "Alpha",
    "ApiKeyEnv",
    "BoundedAlpha",
    "CalibrationSplit",
    "DatasetName",
    "Depth",
    "EmbedderSpec",
    "EngineChoice",
    "EngineOption",
    "EvalFormat",
    "GateFormat",
    "GateFormatOption",
    "GoldenArg",
    "GoldenOption",
    "HistoryOrNone",
    "HistoryPath",
    "HumanQrels",
    "HumanQrelsOrNone",
    "JudgmentFiles",
    "KappaWeights",
    "LLMModel",
    "LLMTimeout",
    "LabellerName",
    "MaxRecallLoss",
    "Measures",
    "MinCoverage",
    "MinOneDepth",
    "NoHistory",
    "NoiseFormat",
    "NoiseFormatOption",
    "OutDir",
    "PipelineFile",
    "PolicyFile",
    "Port",
    "Power",
    "PricesFile",
    "ProbesFile",
    "QueryCount",
    "RayAddress",
    "RayWorkers",
    "RecallFloor",
    "ReindexWindowHours",
    "RequiredOutDir",
    "ResultsFile",
    "Seed",
    "SplitPart",
    "StoreURI",
    "StoreURIOrNone",
    "Stratify",
    "StratifyBy",
    "Subtopics",
    "SyntheticSpec",
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


class EngineChoice(str, Enum):
    local = "local"
    ray = "ray"


class NoiseFormat(str, Enum):
    yaml = "yaml"
    json = "json"


# -- where the data is -------------------------------------------------------------------------

_history = typer.Option("--history", help="Run history: a SQLite file, or "
                        "postgresql://USER@HOST:PORT/DB (password from the environment).")
HistoryPath = Annotated[str, _history]
HistoryOrNone = Annotated[str | None, _history]  # where recording is optional (online ab)

NoHistory = Annotated[bool, typer.Option("--no-history",
                                         help="Do not record this in the run history.")]

# The commands whose --store may also name a retriever (searched as the pipeline of that one
# retriever, as a pipeline file holding only it would be), and why each other command that takes
# --store needs a vector store itself (a test checks that every such command is in one of them).
RETRIEVER_STORES = ("gate", "label pool", "ops calibrate-noise")
STORE_ONLY = {
    "ingest": "writes chunks and their vectors into it",
    "ops reindex": "rebuilds its index",
    "ops rollback": "switches it back to an earlier version",
    "ops promote": "switches its production version",
    "ops calibrate-threshold": "stores the threshold in its metadata",
    "ops monitor": "compares its answers with exact search over its vectors (for a retriever's "
                   "latency and answered share alone, give a pipeline file with --pipeline)",
    "history compare": "reads, from its versions, the chunks ingested since run A",
    "history groups": "reads its chunks' fields (or give the corpus file with --corpus)",
    "label answers": "reads the texts of the chunks the answers to label name (or give the "
                     "corpus file with --corpus)",
    "golden check": "resolves the labels against the chunks it holds (or give the corpus file "
                    "with --corpus)",
    "golden qrels": "resolves content anchors against the chunks it holds (or give the corpus "
                    "file with --corpus)",
    "bench quantize": "reads its vectors",
    "bench filtered": "writes its rows into it",
    "bench streaming": "writes its rows into it",
}


def _store_for(ctx: typer.Context, value: str | None) -> str | None:
    """--store as the command can use it: a retriever spec is refused, saying why, by a command
    that needs what only a vector store has."""
    if value is None:
        return None
    from recallwatch.retrievers import is_retriever_spec, scheme_of

    command = _command_of(ctx)
    if command in RETRIEVER_STORES or not is_retriever_spec(value):
        return value
    from recallwatch._redact import redact
    from recallwatch.errors import UsageError

    raise UsageError(
        f"--store {redact(value)!r} is a retriever ({scheme_of(value)}:), not a vector store, and "
        f"`recallwatch {command}` needs a vector store: it "
        f"{STORE_ONLY.get(command, 'reads what only a vector store holds')}. A retriever is "
        f"accepted by --store of {', '.join(RETRIEVER_STORES[:-1])} and {RETRIEVER_STORES[-1]}, "
        "and in a pipeline file (--pipeline)")


def _command_of(ctx: typer.Context) -> str:
    """The command's name in the tree (``ops monitor``), also when it was typed by its old
    top-level name (``monitor``)."""
    from recallwatch.cli._tree import OLD_NAMES

    names = []
    at: Any = ctx
    while at.parent is not None:
        names.append(at.info_name or "")
        at = at.parent
    if len(names) == 1 and names[0] in OLD_NAMES:
        return " ".join(OLD_NAMES[names[0]])
    return " ".join(reversed(names))


_store = typer.Option(
    "--store", callback=_store_for,
    help="Vector store URI, e.g. lancedb://kb?table=chunks (also postgresql://, qdrant://, "
    "chroma://, milvus://, faiss://, hnswlib://). With gate, label pool and ops calibrate-noise, "
    "also a retriever: bm25:CORPUS, python:MODULE:ATTR or http(s)://… (searched as a pipeline "
    "file holding only it would be).")
StoreURI = Annotated[str, _store]
StoreURIOrNone = Annotated[str | None, _store]

# the benchmarks that make their own vectors (bench filtered, bench streaming; bench quantize
# declares the same text with no default)
SyntheticSpec = Annotated[str, typer.Option(
    "--synthetic", help="Instead of BASE, N synthetic vectors of dimension D clustered around "
    "random topics: NxD, e.g. 20000x128.")]

PipelineFile = Annotated[Path | None, typer.Option(
    "--pipeline", help="Pipeline file (YAML) instead of --store: named retrievers (stores, "
    "bm25:CORPUS, python:MODULE:ATTR, http(s) services), an optional fusion step and reranker, "
    "the final K (docs/pipelines.md). With ops monitor, beside --store or alone: the probes' "
    "latency, answered share and failures through it (recall against exact search and data "
    "drift need a store).")]

ResultsFile = Annotated[Path | None, typer.Option(
    "--results", help="Results file (JSONL) from any external search system, instead of "
    "--store.")]

_GOLDEN_HELP = ("Golden set file (YAML, JSON or JSONL): queries and the chunks each must find; "
                "or a public collection (irds:DATASET_ID, beir:DIR[#split]): its queries, each "
                "expecting the documents judged relevant.")
GoldenArg = Annotated[Path, typer.Argument(help=_GOLDEN_HELP)]
GoldenOption = Annotated[Path | None, typer.Option("--golden", help=_GOLDEN_HELP)]

PolicyFile = Annotated[Path | None, typer.Option(
    "--policy", help="Policy file (YAML): the thresholds of the acceptance rules.")]

PricesFile = Annotated[Path | None, typer.Option(
    "--prices", help="Prices file (YAML: currency, vcpu_hour, memory_gb_month, disk_gb_month, "
    "embedding_per_1k_tokens, llm_input_per_1k_tokens, llm_output_per_1k_tokens; each "
    "optional): add the cost in money of serving 1,000 queries at the measured speed, index "
    "size and tokens, with its arithmetic. See examples/prices.yaml.")]

EmbedderSpec = Annotated[str | None, typer.Option(
    "--embedder", help="Embedder spec, e.g. use-multilingual, e5-small or "
    "'openai-http?base_url=URL&model=NAME&api_key_env=VAR' (default: the one that built the "
    "store).")]

ProbesFile = Annotated[Path, typer.Option(
    "--probes", help="Probe set (.json from `recallwatch ops probes`, .txt/.jsonl logged queries, "
    "or .npy vectors).")]

DatasetName = Annotated[str | None, typer.Option(
    "--dataset", help="Only runs of this golden set (by its name).")]

_out = typer.Option("--out-dir", help="Folder to write the result files into.")
OutDir = Annotated[Path | None, _out]
RequiredOutDir = Annotated[Path, _out]

# -- what to measure ---------------------------------------------------------------------------

_DEPTH_HELP = "Depth of recall@k."
Depth = Annotated[int, typer.Option("--k", help=_DEPTH_HELP)]
MinOneDepth = Annotated[int, typer.Option("--k", min=1, help=_DEPTH_HELP)]

QueryCount = Annotated[int, typer.Option(
    "--query-count", min=1,
    help="How many query vectors: fresh synthetic ones, or rows held out of BASE.")]

RecallFloor = Annotated[float, typer.Option(
    "--floor", help="Lowest acceptable recall@k against exact search.")]

MaxRecallLoss = Annotated[float | None, typer.Option(
    "--max-recall-loss", min=0.0, max=1.0,
    help="A new index is switched in only when it is not worse than the live one by more than "
    "this much recall@k: the 95 % interval of the per-probe difference (new − live) must stay "
    "above minus this. (ingest's rebuild checks it only when given: its live search scans the "
    "rows outside the index exactly, and a rebuild trades a little of that recall for "
    "speed.)")]

MinCoverage = Annotated[float, typer.Option(
    "--min-coverage", min=0.0, max=1.0,
    help="Least coverage (share of answerable questions, or of probes, that get an answer at "
    "the no-result threshold): under it calibrate-threshold refuses to store the threshold "
    "(exit 1; with --dry-run it only says so) and monitor alarms. 0 turns it off.")]

ReindexWindowHours = Annotated[float, typer.Option(
    "--reindex-window-hours", min=0.0,
    help="At most one automatic index rebuild per this many hours (counted from the last "
    "attempt, switched or refused).")]

Measures = Annotated[list[str], typer.Option(
    "--measure", "-m", help="Measure in ir_measures syntax, e.g. nDCG@10, R@100, RR, AP, "
    "P(rel=2)@10, nDCG(dcg=exp-log2)@10, alpha_nDCG@10. Repeat for several.")]

Subtopics = Annotated[Path | None, typer.Option(
    "--subtopics", help="Subtopic judgments for alpha_nDCG@k (a diversity measure): a TREC "
    "diversity qrels file, one line 'qid subtopic docid grade' per judgment, a document listed "
    "once for each need (subtopic) of its query it answers. Without it, a run measured only by "
    "alpha_nDCG reads QRELS as that file.", show_default=False)]

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

JudgmentFiles = Annotated[list[Path] | None, typer.Option(
    "--judgments", help="Judgments made so far: judgments files (JSON Lines, as `recallwatch "
    "label serve` saves them) or TREC qrels. Repeat for several.")]

# An OpenAI-compatible endpoint's model and key (online judge, golden generate)
LLMModel = Annotated[str, typer.Option("--model", help="Model name sent to the endpoint.")]
ApiKeyEnv = Annotated[str | None, typer.Option(
    "--api-key-env", help="Name of the environment variable holding the API key.")]
LLMTimeout = Annotated[float, typer.Option(
    "--timeout", help="Seconds to wait for each answer of the endpoint (0.001 to 3600); one "
    "that does not come is asked again up to 3 times, then the command stops with exit 2.")]

KappaWeights = Annotated[str, typer.Option(
    "--weights", help="Kappa weights: quadratic, linear or unweighted.")]
class SplitPart(str, Enum):
    tune = "tune"
    test = "test"


CalibrationSplit = Annotated[SplitPart, typer.Option(
    "--split", help="With a tune/test split, calibrate on the tune queries; "
    "test is refused (those queries are held out for the gate's verdict).")]


class StratifyBy(str, Enum):
    domain = "domain"


Stratify = Annotated[StratifyBy | None, typer.Option(
    "--stratify", help="Keep each domain's share of the queries (a domain gets at least one "
    "while any remain).")]

Seed = Annotated[int, typer.Option(
    "--seed", help="Seed of the random draws: the same seed gives the same result.")]

LabellerName = Annotated[str | None, typer.Option(
    "--judge", help="Your name, saved with each grade or label (default: your login name).")]
Port = Annotated[int, typer.Option("--port", min=0, max=65535,
                                  help="Port (0: any free port).")]

# -- where the heavy work runs ------------------------------------------------------------------

EngineOption = Annotated[EngineChoice, typer.Option(
    "--engine", help="Where the heavy work runs: local (this process) or ray (a Ray cluster; "
    "needs pip install 'recallwatch[ray]'). Both give the same results.")]

RayAddress = Annotated[str | None, typer.Option(
    "--address", help="With --engine ray: the Ray cluster to join, e.g. 10.0.0.5:6379 or auto "
    "(default: start a local Ray on this machine).")]

RayWorkers = Annotated[int | None, typer.Option(
    "--workers", min=1, help="With --engine ray: how many Ray workers run at once (default: one "
    "per CPU of the cluster).")]

AllPairs = Annotated[bool, typer.Option(
    "--all-pairs", help="With three runs or more: test every pair of runs, not only each run "
    "against the first.")]

# -- output ------------------------------------------------------------------------------------

_FORMAT_HELP = "Output on stdout."
_format = typer.Option("--format", help=_FORMAT_HELP)
TableJsonFormat = Annotated[TableJson, _format]
GateFormatOption = Annotated[GateFormat, _format]
NoiseFormatOption = Annotated[NoiseFormat, _format]
# eval checks the value itself, so that its error message lists the three formats
EvalFormat = Annotated[str, typer.Option("--format", help=_FORMAT_HELP, metavar="table|json|tsv")]
