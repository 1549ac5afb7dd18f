"""``recallwatch online clicks``: the work behind the command (counting, the prior, the report),
kept apart from the command's options in ``online_cmd``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recallwatch.cli._common import emit

if TYPE_CHECKING:
    from recallwatch.judgments.click_models import ClickCounts, ClickModelFit
    from recallwatch.judgments.click_models.prior import PriorChoice
    from recallwatch.judgments.judgments import JudgmentSet
    from recallwatch.online.log import Impression, InteractionLog

__all__ = ["run_clicks"]


def _prior(text: str) -> float | None:
    """None for auto, 0 for none, else the strength."""
    from recallwatch.errors import UsageError

    if text == "auto":
        return None
    if text == "none":
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < float("inf"):
        raise UsageError(f"--prior takes none, auto or a strength >= 0 (pseudo-examinations), "
                         f"e.g. 5; found {text!r}")
    return value


def run_clicks(log: Path, *, model: str, min_impressions: int, min_examinations: float,
               prior: str, cuts: list[float], out: Path | None, qrels: Path | None,
               max_rank: int, as_json: bool) -> None:
    from recallwatch import __version__
    from recallwatch.judgments.click_models import CLICK_MODELS, ClickCounter, fit
    from recallwatch.judgments.click_models.prior import PriorChoice, choose_prior, fitted_mean
    from recallwatch.judgments.judgments import (
        agreement_with_qrels,
        check_cuts,
        judgments_from_fit,
        read_qrels_grades,
        write_judged_qrels,
    )

    CLICK_MODELS.get(model)  # an unknown name fails before the log is read
    strength = _prior(prior)
    cut_points = list(check_cuts(cuts))
    source, impressions = _opened(log, out)
    human = None if qrels is None else read_qrels_grades(qrels)
    tails = model == "dbn"
    counter = ClickCounter(max_rank=max_rank, tails=tails)
    choice: PriorChoice | None = None
    if strength is None:  # auto: every fifth impression held out to choose the strength
        train = ClickCounter(max_rank=max_rank, tails=tails)
        held = ClickCounter(max_rank=max_rank, tails=tails)
        counter.add(_split(impressions, train, held))
        choice = choose_prior(train.counts(), held.counts(), model)
    else:
        counter.add(impressions)
    counts = counter.counts()
    if strength is not None and strength > 0.0:
        choice = PriorChoice(strength, fitted_mean(fit(counts, model)))
    fitted = fit(counts, model, prior=None if choice is None else choice.pseudo_counts)
    judged = judgments_from_fit(fitted, min_impressions=min_impressions, cuts=cut_points,
                                min_examinations=min_examinations)
    measured = None if human is None else agreement_with_qrels(
        judged.grades(), human, rater=judged.source)
    settings = {"model": model, "min_impressions": min_impressions,
                "min_examinations": min_examinations, "cuts": cut_points, "max_rank": max_rank,
                "prior": None if choice is None else choice.to_dict()}
    evidence = _evidence(counts, source.summary.duplicate_lines, max_rank)
    sidecar = None
    if out is not None:
        summary = fitted.summary()
        summary.pop("fit_seconds")  # provenance stays byte-identical across identical runs
        sidecar = write_judged_qrels(out, judged, {
            "created_by": f"recallwatch {__version__} online clicks",
            "log": source.summary.to_dict(), "settings": settings, "fit": summary,
            "left_out": judged.left_out, "evidence": evidence,
            "agreement": None if measured is None else measured.to_dict(),
        })
    if as_json:
        emit(json.dumps({
            "model": model,
            "judgments": [j.to_dict() for j in judged.judgments],
            "pairs": counts.n_pairs,
            "unlabelled_pairs": judged.unlabelled,
            "left_out": judged.left_out,
            "too_sparse": judged.too_sparse,
            "evidence": evidence,
            "grades": judged.histogram(),
            "fit": fitted.summary(),
            "agreement": None if measured is None else measured.to_dict(),
            "log": source.summary.to_dict(),
            "settings": settings,
            "out": None if out is None else str(out),
        }, indent=2, ensure_ascii=False))
        return
    emit(_clicks_text(fitted, judged, source.summary.to_dict(), cut_points, evidence, choice))
    if qrels is not None:
        if measured is None:
            emit(f"agreement with {qrels}: no pair in common with the click labels")
        else:
            kappa = "undefined" if measured.kappa != measured.kappa else f"{measured.kappa:.3f}"
            ci = "" if measured.ci is None else (
                f" ({measured.ci_level:.0%} CI {measured.ci[0]:.2f} to {measured.ci[1]:.2f})")
            emit(f"agreement with {qrels} on {measured.n} pairs: {measured.weights} kappa "
                 f"{kappa}{ci}, same grade {measured.exact:.0%}")
    if out is not None:
        emit(f"wrote {out} ({len(judged.judgments)} labels) and {sidecar}")


def _opened(log: Path, out: Path | None) -> tuple[InteractionLog, Iterable[Impression]]:
    """The log, and its impressions as the counters read them: with --out (checked to be a file
    name first) every id must fit a qrels file, refused at its line as the log is read."""
    from recallwatch._files import check_output_file
    from recallwatch.online import InteractionLog
    from recallwatch.online.log import trec_ids

    if out is None:
        source = InteractionLog(log)
        return source, source
    check_output_file(out, "--out", example="clicks.qrels")
    source = InteractionLog(log)
    return source, trec_ids(source, str(log))


def _split(log: Any, train: Any, held: Any) -> Any:
    """Pass every impression through, feeding every fifth to ``held`` and the rest to
    ``train`` on the way (one read of the log for the three counters)."""
    buffers: tuple[list[Impression], list[Impression]] = ([], [])
    for i, imp in enumerate(log):
        part = buffers[1] if i % 5 == 4 else buffers[0]
        part.append(imp)
        if len(part) >= 4096:
            (held if part is buffers[1] else train).add(part)
            part.clear()
        yield imp
    train.add(buffers[0])
    held.add(buffers[1])


def _evidence(counts: ClickCounts, duplicates: int, max_rank: int) -> dict[str, Any]:
    return {
        "clicks_beyond_max_rank": counts.clicks_beyond_max_rank,
        "impressions_with_clicks_beyond_max_rank": counts.impressions_beyond_max_rank,
        "max_rank": max_rank,
        "duplicate_lines": duplicates,
        "clicks_after_first_click": counts.clicks_after_first,
    }


def _clicks_text(fitted: ClickModelFit, judged: JudgmentSet, log: dict[str, Any],
                 cuts: list[float], evidence: dict[str, Any], choice: PriorChoice | None) -> str:
    hist = judged.histogram()
    lines = [
        f"click model {fitted.model} on {log['path']} ({log['impressions']:,} impressions, "
        f"sha256 {log['sha256'][:12]}…)",
        f"  pairs      {fitted.counts.n_pairs:,} seen; {len(judged.judgments):,} labelled, "
        f"{judged.unlabelled:,} left unlabelled (no label is not grade 0):",
    ]
    lines.extend(f"               {n:,} {reason}" for reason, n in (judged.left_out or {}).items())
    lines.append(f"  grades     0: {hist[0]}  1: {hist[1]}  2: {hist[2]}  3: {hist[3]}  (cuts "
                 f"{' / '.join(f'{c:g}' for c in cuts)} on the estimated relevance)")
    bias = fitted.position_bias.get("examination_by_rank")
    if bias:
        lines.append("  position   P(look at rank 1..): "
                     + " ".join(f"{g:.2f}" for g in bias[:10]) + (" …" if len(bias) > 10 else ""))
    if "continuation" in fitted.position_bias:
        lines.append(f"  continuation  P(read on to the next result) = "
                     f"{fitted.position_bias['continuation']:.3f}")
    if choice is not None:
        lines.append(f"  prior      strength {choice.strength:g} pseudo-examinations around "
                     f"{choice.mean:.3f}" + (" (chosen on held-out impressions)"
                                             if choice.held_out else ""))
    if fitted.iterations:
        state = "converged" if fitted.converged else "NOT converged (raise the limit)"
        lines.append(f"  EM         {fitted.iterations} steps, {state}, {fitted.seconds:.2f} s")
    if evidence["clicks_beyond_max_rank"]:
        lines.append(f"  WARNING: {evidence['clicks_beyond_max_rank']:,} clicks on results deeper "
                     f"than --max-rank {evidence['max_rank']} (in "
                     f"{evidence['impressions_with_clicks_beyond_max_rank']:,} impressions) were "
                     "not counted; raise --max-rank to use them")
    if evidence["duplicate_lines"]:
        lines.append(f"  WARNING: {evidence['duplicate_lines']:,} lines repeat an earlier line "
                     "byte for byte and were counted again (logging retries? remove them)")
    if fitted.model == "cm" and evidence["clicks_after_first_click"]:
        lines.append(f"  note: {evidence['clicks_after_first_click']:,} clicks below an "
                     "impression's first click are outside the cascade model and were left out "
                     "(the dbn model uses them)")
    return "\n".join(lines)
