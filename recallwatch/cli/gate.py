"""``recallwatch gate``: the acceptance gate (exit 0 ACCEPT, 1 STOP, 2 usage or input error)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Annotated, Any

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
    RayAddress,
    RayWorkers,
    ResultsFile,
    StoreURIOrNone,
)


def gate(
    golden: GoldenArg,
    store: StoreURIOrNone = None,
    results: ResultsFile = None,
    pipeline: PipelineFile = None,
    policy: PolicyFile = None,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
    fmt: GateFormatOption = GateFormat.table,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Also write JUnit XML here.")] = None,
    report: Annotated[Path | None, typer.Option(
        "--report", help="Also write report.json, report.md, junit.xml and report.html into "
        "this directory (all four or none; an earlier set there is replaced).")] = None,
    embedder: EmbedderSpec = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="With --results: the corpus file, for Gold labels and diagnosis.")] = None,
    run_date: Annotated[str | None, typer.Option(
        "--run-date", help="Judge validity windows on this day (YYYY-MM-DD; default: the "
        "golden set's as_of, else today).")] = None,
    judgments: JudgmentFiles = None,
    log: Annotated[Path | None, typer.Option(
        "--log", help="A query log (interaction log, JSONL or .txt of queries) to check the "
        "golden set against: warns when the log's queries drift away from the set's (centroid "
        "distance, topic coverage). A warning only: the verdict does not change.")] = None,
    latency_sample: Annotated[int | None, typer.Option(
        "--latency-sample", min=0, help="Time this many queries with one search call each "
        "(the run's latency p50 and p99), spread evenly over the set; 0 skips it. Default: as "
        "many as fit in 10 % of the time spent retrieving the whole set, at most 100 (a search "
        "without an index reads every row, once per call). The setting is recorded with the "
        "run.")] = None,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    runs_out: Annotated[Path | None, typer.Option(
        "--runs-out", help="With --pipeline: write each retriever's ranked lists as "
        "DIR/<name>.run and the fused ones as DIR/fused.run (TREC run files, as deep as the "
        "pipeline's depth), so any tool can check them.")] = None,
    tune_weights: Annotated[bool, typer.Option(
        "--tune-weights", help="With --pipeline fusing by wsum: first choose the weights on the "
        "golden set's tune queries (every combination in steps of 0.1, best mean recall@K), "
        "then judge the test queries with them; the chosen weights are reported.")] = False,
    answers: Annotated[Path | None, typer.Option(
        "--answers", help="Also judge the answers a RAG assistant gave to the golden set's "
        "questions (JSON Lines: {query_id, answer, contexts (optional: chunk ids or {text}; "
        "default the retrieved top K)}): faithfulness, relevance, correctness, hallucination "
        "rate. Needs --answer-labels.")] = None,
    generator: Annotated[str | None, typer.Option(
        "--generator", help="Answer each question with this generator, from the retrieved top "
        "K and again from the expected chunks, to name each wrong answer's failure (retrieval "
        "or generation): python:MODULE:ATTR (a function (question, contexts) -> answer) or an "
        "OpenAI-compatible chat endpoint URL?model=NAME[&prompt=FILE][&api_key_env=VAR]. With "
        "--answers, only the expected-chunks answers are generated. Needs --answer-labels.")
    ] = None,
    answer_judge: Annotated[str, typer.Option(
        "--answer-judge", help="Who judges the answers: offline (sentence embeddings and "
        "numbers, no LLM; thresholds calibrated on --answer-labels, or fixed as "
        "offline?support=X&relevance=Y) or an OpenAI-compatible chat endpoint "
        "URL?model=NAME[&api_key_env=VAR].")] = "offline",
    answer_labels: Annotated[Path | None, typer.Option(
        "--answer-labels", help="Answers people labelled (JSON Lines: {question, answer, "
        "contexts: [texts], faithful, relevant, correct (optional, with reference or facts)}): "
        "the answer judge is measured against them first (Cohen's kappa) and refused below "
        "--answer-min-kappa.")] = None,
    answer_min_kappa: Annotated[float, typer.Option(
        "--answer-min-kappa", help="Refuse the answer judge when its kappa against the "
        "labelled answers is below this, on any label.")] = 0.6,
    answer_min_labelled: Annotated[int, typer.Option(
        "--answer-min-labelled", help="Refuse the answer judge when fewer answers are "
        "labelled.")] = 20,
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
    min_answer_relevance and max_hallucination_rate apply.
    Exit codes: 0 ACCEPT, 1 STOP, 2 usage or input error.
    """
    from recallwatch.acceptance.gate import gate_from_files
    from recallwatch.errors import InputError
    from recallwatch.report import check_report_dir, check_report_file

    # Refuse an unusable output path before the run is recorded, not after.
    if report is not None:
        check_report_dir(report)
    if junit is not None:
        check_report_file(junit)
    day = None
    if run_date is not None:
        try:
            day = date.fromisoformat(run_date)
        except ValueError:
            raise InputError(field="--run-date", expected="a date YYYY-MM-DD",
                             found=run_date) from None

    judged = None
    if judgments:
        from recallwatch.formats.judging import judged_pairs

        judged = judged_pairs(judgments)  # a bad file fails before the run
    plan = None
    if answers is not None or generator is not None or answer_labels is not None:
        from recallwatch.answers.gate import AnswerOptions
        from recallwatch.formats.golden import load_golden

        plan = AnswerOptions(answers, generator, answer_judge, answer_labels, answer_min_kappa,
                             answer_min_labelled).open(load_golden(golden),
                                                       golden.resolve().parent)

    def record(result: Any, vector_store: Any) -> Any:
        result = _with_answers(result, vector_store, plan, policy, corpus)
        if judged is not None:
            from recallwatch.acceptance.judged import with_judged

            result = with_judged(result, judged, sources=[str(j) for j in judgments or []])
        result = _with_staleness(result, vector_store, golden, policy, embedder, log,
                                 None if no_history else history)
        if no_history:
            return result
        from recallwatch.history import record_gate_run

        return record_gate_run(result, history, store=vector_store)

    from recallwatch.scale import engine_session

    with engine_session(engine.value, address, workers) as on_ray:
        fan_out = None
        if on_ray and store is not None:
            from recallwatch.scale.ray_engine import RaySource

            def fan_out(local: Any) -> Any:
                return RaySource(local, store, embedder, workers)

        result = gate_from_files(golden, store=store, results=results, policy=policy,
                                 embedder=embedder, corpus=corpus, run_date=day,
                                 then=record, fan_out=fan_out,
                                 latency_sample=latency_sample, pipeline=pipeline,
                                 runs_out=runs_out, tune_weights=tune_weights,
                                 judgments=judged)
    _write_outputs(result, fmt, junit, report)
    if policy is None:
        _explain_default_noise(result)
    raise typer.Exit(result.exit_code)


def _with_answers(result: Any, vector_store: Any, plan: Any, policy: Path | None,
                  corpus: Path | None) -> Any:
    """The answer step (recallwatch.answers.gate): answers judged with a plan; without one, the
    policy's answer rules, if any, marked "not applied"."""
    if plan is None and policy is None:
        return result
    from recallwatch.answers.gate import chunk_reader, rules_not_applied, with_answers
    from recallwatch.formats.policy import load_policy

    pol = load_policy(policy)
    if plan is None:
        return rules_not_applied(result, pol)
    return with_answers(result, pol, plan, chunk_reader(vector_store, corpus))


def _with_staleness(result: Any, vector_store: Any, golden: Path, policy: Path | None,
                    embedder: str | None, log: Path | None, history: str | None) -> Any:
    """The result with its stale-set figures (and a warning when stale). The history part needs
    the run history, the drift part a query log; without either there is nothing to add."""
    from dataclasses import replace

    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy
    from recallwatch.judgments.staleness import check_staleness, warnings_of

    if history is None and log is None:
        return result
    emb = None
    if log is not None:
        from recallwatch.embedders import embedder_for_store, embedder_from_spec, get_embedder

        emb = (embedder_for_store(vector_store, embedder) if vector_store is not None
               else get_embedder() if embedder is None else embedder_from_spec(embedder))
    hist = None
    if history is not None:
        from recallwatch.history import History

        hist = History(history)
    try:
        # the golden set again only for the log's figures (a gate without --log never reads it)
        figures = check_staleness(result, load_golden(golden) if log is not None else None,
                                  load_policy(policy).staleness, history=hist, log=log,
                                  embedder=emb)
    finally:
        if hist is not None:
            hist.close()
    return replace(result, staleness=figures,
                   warnings=tuple(result.warnings) + tuple(warnings_of(figures)))


def _write_outputs(result: object, fmt: GateFormat, junit: Path | None,
                   report: Path | None) -> None:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.report import json_parts, write_junit, write_report_set
    from recallwatch.report.markdown import to_markdown

    if not isinstance(result, GateResult):  # keeps GateResult out of this module's import time
        raise TypeError(type(result).__name__)
    if report is not None:
        write_report_set(result, report)
    if junit is not None:
        write_junit(result, junit)
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
