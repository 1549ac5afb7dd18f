"""``recallwatch online …``: click models, A/B readouts, interleaving and the optional LLM judge,
all from interaction logs (JSON Lines, one impression per line, plain or gzip; docs/online.md).

Exit codes: 0 a readout / labels written; 1 the A/B readout is blocked (sample-ratio mismatch, too
few units) or the LLM judge was refused (agreement too low); 2 usage or input error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import (
    Alpha,
    HistoryOrNone,
    HumanQrels,
    HumanQrelsOrNone,
    KappaWeights,
    LLMTimeout,
    Power,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.history import OnlineReadoutRow
    from recallwatch.online import ABReadout, InterleaveResult

__all__ = ["register"]

online_app = typer.Typer(
    help="Online evaluation from interaction logs: click models turned into judgments, A/B "
    "readouts, interleaving, and an optional LLM judge measured against human labels.",
    no_args_is_help=True,
)

_LOG_HELP = "Interaction log: JSON Lines, one impression per line (plain or gzip)."


def _json(obj: Any) -> None:
    emit(json.dumps(obj, indent=2, ensure_ascii=False))


def _cuts(text: str) -> list[float]:
    from recallwatch.errors import UsageError

    try:
        return [float(x) for x in text.split(",")]
    except ValueError:
        raise UsageError(f"--cuts must be three comma-separated numbers, e.g. 0.15,0.35,0.6; "
                         f"found {text!r}") from None


@online_app.command("clicks")
def clicks(
    log: Path = typer.Argument(..., help=_LOG_HELP),
    model: str = typer.Option("pbm", "--click-model", help="Click model: dctr (raw click-through "
                              "rate), pbm (position-based), ubm (user browsing), cm (cascade: "
                              "stop at the first click), dbn (dynamic Bayesian network, fitted "
                              "by EM) or sdbn (the DBN's quick closed form, biased when users "
                              "read on after an unsatisfying click).",
                              metavar="dctr|pbm|ubm|cm|dbn|sdbn"),
    min_impressions: int = typer.Option(10, "--min-impressions", min=1, help="Label only "
                                        "pairs shown at least this many times."),
    min_examinations: float = typer.Option(5.0, "--min-examinations", help="Label only pairs "
                                           "the model reckons were looked at (examined) at "
                                           "least this many times; the others are listed as "
                                           "too sparse to label."),
    prior: str = typer.Option("none", "--prior", help="Beta prior for sparse pairs: none, auto "
                              "(its strength chosen on every fifth impression held out) or a "
                              "strength in pseudo-examinations, e.g. 5.", metavar="none|auto|N"),
    cuts: str = typer.Option("0.15,0.35,0.6", "--cuts", help="Estimated relevance where grades "
                             "1, 2 and 3 start."),
    out: Path | None = typer.Option(None, "--out", help="Write the graded labels as TREC qrels "
                                    "here (and OUT.provenance.json beside it)."),
    qrels: HumanQrelsOrNone = None,
    max_rank: int = typer.Option(50, "--max-rank", min=1, max=1000, help="Ignore results "
                                 "shown deeper than this (clicks on them are counted and "
                                 "reported)."),
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Fit a click model to an interaction log and turn it into graded judgments (0-3): the
    relevance of each (query, result) pair with its position bias removed, for pairs shown and
    examined often enough. Pairs without enough evidence get no label (never grade 0)."""
    from recallwatch.cli.online._clicks import run_clicks

    run_clicks(log, model=model, min_impressions=min_impressions,
               min_examinations=min_examinations, prior=prior, cuts=_cuts(cuts), out=out,
               qrels=qrels, max_rank=max_rank, as_json=fmt is TableJson.json)


def _split(items: list[str]) -> dict[str, float] | None:
    from recallwatch.errors import UsageError

    if not items:
        return None
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name] = float(value)
        except ValueError:
            raise UsageError(f"--allocation takes VARIANT=SHARE, e.g. A=50; found {item!r}"
                             ) from None
    return out


@online_app.command("ab")
def ab(
    log: Path = typer.Argument(..., help=_LOG_HELP),
    metric: list[str] = typer.Option(["ctr"], "--metric", help="ctr, abandonment, "
                                     "time-to-click or conversion. Repeat for several.",
                                     metavar="ctr|abandonment|time-to-click|conversion"),
    unit: str = typer.Option("user", "--unit", help="What was randomised: user or session. "
                             "Intervals are clustered by it.", metavar="user|session"),
    control: str | None = typer.Option(None, "--control", help="The control variant (default "
                                       "A, else the first by name)."),
    allocation: list[str] = typer.Option(
        [], "--allocation", help="Intended share of a variant, e.g. --allocation A=50 "
        "--allocation B=50 (default: equal).", metavar="VARIANT=SHARE"),
    alpha: Alpha = 0.05,
    power: Power = 0.8,
    min_effect: float = typer.Option(0.05, "--min-effect", help="Smallest relative change worth "
                                     "detecting (0.05 = 5 %), for the units still needed."),
    min_units: int = typer.Option(100, "--min-units", help="Block the readout below this many "
                                  "units per variant."),
    srm_alpha: float = typer.Option(0.001, "--srm-alpha", help="Block the readout when the "
                                    "sample-ratio test's p is below this."),
    pre_period: Path | None = typer.Option(None, "--pre-period", help="Interaction log of the "
                                           "same users (or sessions) before the experiment: "
                                           "CUPED uses each unit's earlier value of the metric "
                                           "to remove noise, and reports by how much."),
    sequential: bool = typer.Option(False, "--sequential", help="Verdicts from always-valid "
                                    "p-values (mSPRT): safe to look every day and stop at the "
                                    "first significant result, at the price of wider "
                                    "intervals."),
    history: HistoryOrNone = None,
    change: str | None = typer.Option(None, "--change", help="Attach the readout to the change "
                                      "it tested, in --history: a gate run (id, prefix, latest, "
                                      "accepted) or promote:ID; records its offline delta beside "
                                      "the online one (control = before, treatment = after)."),
    offline_metric: str = typer.Option("ndcg", "--offline-metric", help="The gate metric whose "
                                       "delta the readout is set against: ndcg, quality, recall, "
                                       "precision or mrr.", metavar="ndcg|quality|recall|"
                                       "precision|mrr"),
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """A/B readout: metrics per variant with confidence intervals clustered by the randomised
    unit, a sample-ratio mismatch (SRM) check that blocks the readout when the split is off, the
    minimum detectable effect (MDE) and the units still needed, and a verdict. With --history
    and --change, the readout is recorded against the change it tested (the offline-to-online
    funnel: `recallwatch history funnel`)."""
    from recallwatch.errors import UsageError
    from recallwatch.online import ABConfig, InteractionLog, aggregate_units, readout
    from recallwatch.online.ab import METRIC_NAMES

    for m in metric:
        if m not in METRIC_NAMES:
            raise UsageError(f"unknown --metric {m!r}; valid: {', '.join(METRIC_NAMES)}")
    if (history is None) != (change is None):
        raise UsageError("--history and --change go together: the readout is attached to a "
                         "change recorded in a run history")
    if unit not in ("user", "session"):
        raise UsageError(f"--unit must be user or session, found {unit!r}")
    metrics = tuple(dict.fromkeys(metric))
    config = ABConfig(metrics=metrics, unit=unit, control=control,  # type: ignore[arg-type]
                      alpha=alpha, power=power, min_effect=min_effect, srm_alpha=srm_alpha,
                      min_units=min_units, split=_split(allocation), sequential=sequential)
    source = InteractionLog(log)
    table = aggregate_units(source, unit=config.unit, metrics=config.metrics, source=str(log))
    covariates = None
    if pre_period is not None:
        from recallwatch.online.cuped import pre_period_covariates

        covariates = pre_period_covariates(InteractionLog(pre_period), unit=config.unit,
                                           metrics=config.metrics, keys=table.keys,
                                           source=str(pre_period))
    result = readout(table, config, source=str(log), covariates=covariates)
    attached = None
    if history is not None and change is not None and not result.blocked:
        attached = _attach(history, change, result, offline_metric, source.summary.to_dict())
    if fmt is TableJson.json:
        _json({**result.to_dict(), "log": source.summary.to_dict(),
               **({"funnel": attached.to_dict()} if attached is not None else {})})
    else:
        emit(_ab_text(result))
        if attached is not None:
            emit(_funnel_line(attached))
        elif change is not None:
            emit(f"not attached to {change}: a blocked readout says nothing about the change")
    if result.blocked:
        raise typer.Exit(1)


def _attach(history: str, change: str, result: ABReadout, offline_metric: str,
            log: dict[str, Any]) -> OnlineReadoutRow:
    from recallwatch.history import History
    from recallwatch.history.funnel import OFFLINE_METRICS
    from recallwatch.online.funnel import attach_readout

    if offline_metric not in OFFLINE_METRICS:  # refused before a missing history is created
        from recallwatch.errors import UsageError

        raise UsageError(f"unknown --offline-metric {offline_metric!r}; valid: "
                         f"{', '.join(OFFLINE_METRICS)}")
    with History(history, create=False) as h:
        return attach_readout(h, change, result, offline_metric=offline_metric, log=log)


def _funnel_line(r: OnlineReadoutRow) -> str:
    off = "no baseline" if r.offline_delta is None else f"{r.offline_delta:+.4f}"
    on = "—" if r.online_delta is None else f"{r.online_delta:+.4g}"
    return (f"FUNNEL: change {r.change_run}: offline {r.offline_metric} {off} (vs "
            f"{r.offline_baseline or 'nothing'}), online {r.online_metric} {on} "
            f"({r.online_verdict}): {r.agreement.upper()} — {r.payload['reading']}")


def _num(x: float | None) -> str:
    return "unbounded" if x is None else f"{x:+.4g}"


def _ab_text(r: ABReadout) -> str:
    c, t = r.control, r.treatment
    unit = r.config.unit
    lines = [f"A/B readout of {t} (treatment) against {c} (control), by {unit}: "
             f"{r.units[c]:,} / {r.units[t]:,} {unit}s, {r.impressions.get(c, 0):,} / "
             f"{r.impressions.get(t, 0):,} impressions",
             f"  sample ratio  chi-square p = {r.srm_p_value:.3g} "
             f"({'ok' if r.srm_ok else 'MISMATCH'}; blocks below {r.config.srm_alpha:g})"]
    level = f"{1 - r.config.alpha:.0%}"
    lines.append(f"  {'metric':<14} {c:>10} {t:>10} {'delta [' + level + ' CI]':>30} "
                 f"{'p (Holm)':>9} {'MDE':>9}  verdict")
    lines[-1] = lines[-1].replace("  verdict", "  verdict (CI per metric; MDE absolute)")
    for m in r.metrics.values():
        ci = f"{m.delta:+.4g} [{m.ci[0]:+.4g}, {m.ci[1]:+.4g}]"
        lines.append(f"  {m.name:<14} {m.values[c]:>10.4g} {m.values[t]:>10.4g} {ci:>30} "
                     f"{m.p_value_holm:>9.3g} {m.mde:>9.3g}  {m.verdict}")
        if m.cuped is not None:
            lines.append(f"    CUPED: variance {m.cuped['variance_reduction']:.1%} lower with the "
                         f"pre-period ({m.cuped['units_with_pre_period']:,} units in it); "
                         f"unadjusted delta {m.cuped['delta_unadjusted']:+.4g}")
        if m.sequential is not None:
            lo, hi = m.sequential["confidence_sequence"]
            lines.append(f"    sequential: always-valid p = {m.sequential['p_value']:.3g}, "
                         f"confidence sequence [{_num(lo)}, {_num(hi)}] (valid at any look)")
    lines.append(f"VERDICT: {r.verdict.upper()}")
    lines.extend(f"  - {reason}" for reason in r.reasons)
    return "\n".join(lines)


@online_app.command("interleave")
def interleave(
    log: Path = typer.Argument(..., help="Interleaved impressions: every shown result carries "
                               "the team (ranker) that brought it: A or B, or any names when "
                               "more than two rankers were multileaved."),
    alpha: Alpha = 0.05,
    by: str = typer.Option("impression", "--per", help="What a win counts: each impression, or "
                           "each user (their impressions' wins summed first; one user's "
                           "impressions are not independent).", metavar="impression|user"),
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Score team-draft interleaving (both rankers' results mixed in one list, each result
    tagged with its ranker): impressions (or users) won by each ranker and a binomial sign test.
    With more than two rankers (team-draft multileaving), every pair is tested, Holm-adjusted."""
    from recallwatch.errors import UsageError
    from recallwatch.online import InteractionLog, score_interleaving
    from recallwatch.online.multileave import score_multileaving

    if by not in ("impression", "user"):
        raise UsageError(f"--per must be impression or user, found {by!r}")
    source = InteractionLog(log)
    multi = score_multileaving(source, alpha=alpha, source=str(log),
                               by=by)  # type: ignore[arg-type]
    if len(multi.rankers) > 2 or not set(multi.rankers) <= {"A", "B"}:
        if fmt is TableJson.json:
            _json({**multi.to_dict(), "log": source.summary.to_dict()})
            return
        lines = [f"multileaving of {len(multi.rankers)} rankers on {log}: {multi.impressions:,} "
                 f"impressions, by {by} ({multi.units:,})",
                 "  clicks credited: " + ", ".join(f"{k} {v:,}" for k, v in multi.clicks.items())]
        for pair in multi.pairs:
            won = pair.winner(alpha)
            lines.append(f"  {pair.first} vs {pair.second}: wins {pair.wins_first:,} / "
                         f"{pair.wins_second:,}, ties {pair.ties:,}, p (Holm) = "
                         f"{pair.p_value_holm:.3g}: " + (f"{won} is better" if won else
                                                         "no significant preference"))
        emit("\n".join(lines))
        return
    result = score_interleaving(source, alpha=alpha, source=str(log),
                                by=by)  # type: ignore[arg-type]
    if fmt is TableJson.json:
        _json({**result.to_dict(), "log": source.summary.to_dict()})
        return
    emit(_interleave_text(result, source.summary.to_dict()))


def _interleave_text(r: InterleaveResult, log: dict[str, Any]) -> str:
    winner = r.winner or f"none (no significant preference at alpha {r.alpha:g})"
    unit = "impressions" if r.by == "impression" else f"users ({r.impressions:,} impressions)"
    return "\n".join([
        f"interleaving on {log['path']}: {r.units or r.impressions:,} {unit}",
        f"  wins       A {r.wins_a:,}  B {r.wins_b:,}  ties {r.ties:,}  (clicks credited: "
        f"A {r.clicks_a:,}, B {r.clicks_b:,})",
        f"  sign test  p = {r.p_value:.3g}; delta (B wins − A wins) / {r.by}s = "
        f"{r.delta:+.4f}",
        f"WINNER: {winner}",
    ])


@online_app.command("judge")
def judge(
    qrels: HumanQrels,
    pairs: Path = typer.Argument(..., help="Pairs to grade, JSONL: {query_id, query, id, "
                                 "text} per line."),
    base_url: str = typer.Option(..., "--base-url", help="OpenAI-compatible API base URL, "
                                 "e.g. http://127.0.0.1:8000/v1."),
    model: str = typer.Option(..., "--model", help="Model name sent to the endpoint."),
    api_key_env: str | None = typer.Option(None, "--api-key-env", help="Name of the "
                                           "environment variable holding the API key."),
    min_kappa: float = typer.Option(0.6, "--min-kappa", help="Refuse to label when weighted "
                                    "kappa against the human judgments is below this."),
    max_bad_share: float = typer.Option(0.1, "--max-bad-replies", help="Refuse when more than "
                                        "this share of replies is not a single grade 0-3."),
    min_pairs: int = typer.Option(30, "--min-pairs", help="Refuse when fewer human-judged "
                                  "pairs got a usable grade."),
    weights: KappaWeights = "quadratic",
    out: Path | None = typer.Option(None, "--out", help="Write the judge's labels as TREC "
                                    "qrels here (and OUT.provenance.json beside it)."),
    fmt: TableJsonFormat = TableJson.table,
    timeout: LLMTimeout = 60.0,
) -> None:
    """Optional LLM judge (any OpenAI-compatible chat endpoint) grading (query, passage) pairs
    0-3: measured against human judgments first (weighted kappa), refused below --min-kappa."""
    from recallwatch import __version__
    from recallwatch._files import check_output_file
    from recallwatch.errors import UsageError
    from recallwatch.judgments.agreement import WEIGHTS
    from recallwatch.judgments.judgments import read_qrels_grades, write_judged_qrels
    from recallwatch.judgments.llm_judge import LLMJudge, read_pairs, run_judge

    if weights not in WEIGHTS:
        raise UsageError(f"--weights must be one of {', '.join(WEIGHTS)}, found {weights!r}")
    if out is not None:
        check_output_file(out, "--out", example="judge.qrels")
    human = read_qrels_grades(qrels)
    todo = read_pairs(pairs, trec_ids=out is not None)
    grader = LLMJudge(base_url, model, api_key_env=api_key_env, timeout=timeout)
    result = run_judge(grader, todo, human, min_kappa=min_kappa, max_bad_share=max_bad_share,
                       min_pairs=min_pairs, weights=weights)
    sidecar = None
    if result.accepted and out is not None:
        sidecar = write_judged_qrels(out, result.judgments, {
            "created_by": f"recallwatch {__version__} online judge",
            "settings": result.settings,
            "agreement": None if result.calibration is None else result.calibration.to_dict(),
            "bad_replies": result.bad_replies,
        })
    if fmt is TableJson.json:
        _json({**result.to_dict(), "out": None if sidecar is None else str(out)})
    else:
        a = result.calibration
        bad = result.bad_replies
        lines = [f"LLM judge {model} at {base_url}: {result.requests} requests, {bad} bad "
                 f"repl{'y' if bad == 1 else 'ies'} (not a single grade 0-3); tokens: "
                 f"{result.tokens.line()}"]
        if a is not None:
            kappa = "undefined" if a.kappa != a.kappa else f"{a.kappa:.3f}"
            ci = "" if a.ci is None else f" ({a.ci_level:.0%} CI {a.ci[0]:.2f} to {a.ci[1]:.2f})"
            lines.append(f"  agreement with {qrels} on {a.n} pairs: {a.weights} kappa {kappa}"
                         f"{ci}, same grade {a.exact:.0%}")
            lines.append("  confusion (rows human, columns judge; grades "
                         f"{' '.join(map(str, a.categories))}):")
            lines.extend("    " + " ".join(f"{v:>5}" for v in row) for row in a.confusion)
        lines.append(("ACCEPTED: " if result.accepted else "REFUSED: ") + "; ".join(
            result.reasons))
        if sidecar is not None:
            lines.append(f"wrote {out} ({len(result.judgments.judgments)} labels, source "
                         f"{result.judgments.source}) and {sidecar}")
        emit("\n".join(lines))
    if not result.accepted:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(online_app, name="online")
