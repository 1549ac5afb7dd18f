"""``recallwatch gate``: the acceptance gate (exit 0 ACCEPT, 1 STOP, 2 usage or input error)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    EmbedderSpec,
    EngineChoice,
    EngineOption,
    GateFormat,
    GateFormatOption,
    GoldenArg,
    HistoryPath,
    JudgmentFiles,
    NoHistory,
    PipelineFile,
    PolicyFile,
    PricesFile,
    RayAddress,
    RayWorkers,
    ResultsFile,
    StoreURIOrNone,
)

if TYPE_CHECKING:  # the gate's model loads only when a gate runs
    from recallwatch.acceptance.model import GateResult

JUnitFile = Annotated[Path | None, typer.Option(
    "--junit", help="Also write JUnit XML here.")]
ReportDir = Annotated[Path | None, typer.Option(
    "--report", help="Also write report.json, report.md, junit.xml and report.html into "
    "this directory (all four or none; an earlier set there is replaced).")]
GateCorpus = Annotated[Path | None, typer.Option(
    "--corpus", help="With --results: the corpus file, for Gold labels and diagnosis "
    "(or irds:DATASET_ID, beir:DIR: a public collection's documents).")]
RunDate = Annotated[str | None, typer.Option(
    "--run-date", help="Judge validity windows on this day (YYYY-MM-DD; default: the "
    "golden set's as_of, else today).")]
QueryLog = Annotated[Path | None, typer.Option(
    "--log", help="A query log (interaction log, JSONL or .txt of queries) to check the "
    "golden set against: warns when the log's queries drift away from the set's (centroid "
    "distance, topic coverage). A warning only: the verdict does not change.")]
LatencySample = Annotated[int | None, typer.Option(
    "--latency-sample", min=0, help="Time this many search calls of one query each (the "
    "run's latency p50 and p99, with their intervals), spread evenly over the set and taken "
    "again in rounds past its size; 0 skips it. Default: as many as fit in 10 % of the time "
    "spent retrieving the whole set, at most 100 (a search without an index reads every "
    "row, once per call); when the policy judges cost, the 368 a p99 needs, within 10 s. "
    "The setting is recorded with the run.")]
RunsOut = Annotated[Path | None, typer.Option(
    "--runs-out", help="With --pipeline: write each retriever's ranked lists as "
    "DIR/<name>.run and the fused ones as DIR/fused.run (TREC run files, as deep as the "
    "pipeline's depth), so any tool can check them.")]
TuneWeights = Annotated[bool, typer.Option(
    "--tune-weights", help="With --pipeline fusing by wsum: first choose the weights on the "
    "golden set's tune queries (every combination in steps of 0.1, best mean recall@K), "
    "then judge the test queries with them; the chosen weights are reported.")]
AnswersFile = Annotated[Path | None, typer.Option(
    "--answers", help="Also judge the answers a RAG assistant gave to the golden set's "
    "questions (JSON Lines: {query_id, answer, contexts (optional: chunk ids or {text}; "
    "default the retrieved top K)}): faithfulness, relevance, correctness, hallucination "
    "rate. Needs --answer-labels.")]
GeneratorSpec = Annotated[str | None, typer.Option(
    "--generator", help="Answer each question with this generator, from the retrieved top "
    "K and again from the expected chunks, to name each wrong answer's failure (retrieval "
    "or generation): python:MODULE:ATTR[?timeout=S] (a function (question, contexts) -> "
    "answer; each call bounded to S seconds, 60 by default) or an "
    "OpenAI-compatible chat endpoint URL?model=NAME[&prompt=FILE][&api_key_env=VAR]. With "
    "--answers, only the expected-chunks answers are generated. Needs --answer-labels.")]
AnswersOut = Annotated[Path | None, typer.Option(
    "--answers-out", help="With --generator: write the answers it gave from the retrieved top "
    "K to this file, in the --answers format ({query_id, answer, contexts: chunk ids}), to "
    "label them (recallwatch label answers FILE --golden GOLDEN --store URI) or judge them "
    "again (--answers FILE). Without --answer-labels the answers are written and not judged.")]
AnswerJudge = Annotated[str, typer.Option(
    "--answer-judge", help="Who judges the answers: offline (sentence embeddings and "
    "numbers, no LLM; thresholds calibrated on --answer-labels, or fixed as "
    "offline?support=X&relevance=Y) or an OpenAI-compatible chat endpoint "
    "URL?model=NAME[&api_key_env=VAR].")]
AnswerLabels = Annotated[Path | None, typer.Option(
    "--answer-labels", help="Answers people labelled (JSON Lines: {question, answer, "
    "contexts: [texts], faithful, relevant, correct (optional, with reference or facts)}): "
    "the answer judge is measured against them first (Cohen's kappa) and refused below "
    "--answer-min-kappa.")]
AnswerMinKappa = Annotated[float, typer.Option(
    "--answer-min-kappa", help="Refuse the answer judge when its kappa against the "
    "labelled answers is below this, on any label.")]
AnswerMinLabelled = Annotated[int, typer.Option(
    "--answer-min-labelled", help="Refuse the answer judge when fewer answers are "
    "labelled.")]


def gate(
    golden: GoldenArg,
    store: StoreURIOrNone = None,
    results: ResultsFile = None,
    pipeline: PipelineFile = None,
    policy: PolicyFile = None,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
    fmt: GateFormatOption = GateFormat.table,
    junit: JUnitFile = None,
    report: ReportDir = None,
    embedder: EmbedderSpec = None,
    corpus: GateCorpus = None,
    run_date: RunDate = None,
    judgments: JudgmentFiles = None,
    log: QueryLog = None,
    latency_sample: LatencySample = None,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    runs_out: RunsOut = None,
    tune_weights: TuneWeights = False,
    answers: AnswersFile = None,
    generator: GeneratorSpec = None,
    answers_out: AnswersOut = None,
    answer_judge: AnswerJudge = "offline",
    answer_labels: AnswerLabels = None,
    answer_min_kappa: AnswerMinKappa = 0.6,
    answer_min_labelled: AnswerMinLabelled = 20,
    prices: PricesFile = None,
) -> None:
    """Run the golden set against an index and answer ACCEPT or STOP.

    Searches --store (or a --pipeline of retrievers, or reads --results from any other search
    system) and applies the policy: --policy, or the default thresholds without it. With
    --pipeline the report also shows each stage: the candidate recall of the first stage and
    the final recall@K.

    With --judgments, also reports judged@K (the share of each top K that someone judged) and
    warns when unjudged results crowd the top.

    With --engine ray the queries are retrieved by Ray workers (for stores that serve concurrent
    clients); the run, its hash and every per-query value are the same.

    With --answers or --generator, the answers of a RAG assistant are judged too (after the
    judge's agreement with --answer-labels is measured), and the policy's min_faithfulness,
    min_answer_relevance and max_hallucination_rate apply. --answers-out FILE writes the
    generator's answers, to label them (recallwatch label answers) or judge them again.

    With --prices, the report adds what serving 1,000 queries costs at the run's measured
    search time, index size and generator tokens, item by item with its arithmetic.
    Exit codes: 0 ACCEPT, 1 STOP, 2 usage or input error.
    """
    from recallwatch.acceptance.run import SourceSpec
    from recallwatch.acceptance.run import gate as run
    from recallwatch.cli._common import flags_named
    from recallwatch.errors import InputError, UsageError

    given = [spec for spec, where in ((SourceSpec("store", str(store)), store),
                                      (SourceSpec("results", str(results)), results),
                                      (SourceSpec("pipeline", str(pipeline)), pipeline))
             if where is not None]
    if len(given) != 1:
        raise UsageError("give exactly one of --store URI or --results FILE (or --pipeline FILE)")
    if (runs_out is not None or tune_weights) and given[0].kind not in ("pipeline",
                                                                         "retriever"):
        raise UsageError(f"{'--runs-out' if runs_out is not None else '--tune-weights'} works "
                         "on a pipeline: give it with --pipeline FILE (or a retriever spec "
                         "with --store)")
    day = None
    if run_date is not None:
        try:
            day = date.fromisoformat(run_date)
        except ValueError:
            raise InputError(field="--run-date", expected="a date YYYY-MM-DD",
                             found=run_date) from None
    asked = None
    if (answers is not None or generator is not None or answer_labels is not None
            or answers_out is not None):
        from recallwatch.answers.gate import AnswerOptions

        asked = AnswerOptions(answers, generator, answer_judge, answer_labels, answer_min_kappa,
                              answer_min_labelled, answers_out)
    with flags_named(GATE_FLAGS):
        result = run(golden, given[0], policy, None if no_history else history, answers=asked,
                     prices=prices,
                     embedder=embedder, corpus=corpus, judgments=judgments or None, log=log,
                     run_date=day, latency_sample=latency_sample, tune_weights=tune_weights,
                     runs_out=runs_out, report=report, junit=junit,
                     engine="ray" if engine is EngineChoice.ray else "local", address=address,
                     workers=workers)
    _print_result(result, fmt)
    _say_written(result)
    if policy is None:
        _explain_default_noise(result)
    raise typer.Exit(result.exit_code)


def _say_written(result: GateResult) -> None:
    """On standard error: where --answers-out wrote the generator's answers."""
    written = (result.to_dict_without_queries().get("answers") or {}).get("answers_out")
    if written:
        typer.echo(f"wrote {written['answers']} answers of the generator to {written['path']}",
                   err=True)


# The library's parameters as this command's flags, for its error messages.
GATE_FLAGS = {"latency_sample": "--latency-sample", "runs_out": "--runs-out",
              "tune_weights": "--tune-weights", "corpus": "--corpus", "report": "--report",
              "junit": "--junit", "part": "--part", "embedder": "--embedder",
              "judgments": "--judgments", "history": "--history", "log": "--log",
              "prices": "--prices"}


def _print_result(result: object, fmt: GateFormat) -> None:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.report import json_parts
    from recallwatch.report.markdown import to_markdown

    if not isinstance(result, GateResult):  # keeps GateResult out of this module's import time
        raise TypeError(type(result).__name__)
    if fmt is GateFormat.json:
        import sys

        for part in json_parts(result):  # one query at a time: never the whole text at once
            sys.stdout.write(part)
    elif fmt is GateFormat.markdown:
        emit(to_markdown(result))
    else:
        from recallwatch.report.terminal import print_report

        print_report(result)


def _explain_default_noise(result: Any) -> None:
    """Without --policy, failures on the noise rule alone read like a broken index: say once, on
    stderr, which ceiling applied and how to calibrate it."""
    failing = result.failing()
    noise_only = [q for q in failing if q.failed_rules == ("noise",)]
    if not noise_only:
        return
    q = noise_only[0]
    typer.echo(
        f"note: no --policy given, so the default noise ceiling {q.noise_ceiling:.2f} applies to "
        f"every query (at most {q.allowed_noise} of the top {q.top_k} may score below the "
        f"query's worst expected chunk); {len(noise_only)} of the {len(failing)} failing queries "
        "fail on that rule alone, with their expected chunks found. Calibrate per-domain "
        "ceilings on a run with enough healthy queries (`recallwatch ops calibrate-noise` prints "
        "them) and pass them with --policy.", err=True)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
