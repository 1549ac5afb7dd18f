"""``recallwatch ops calibrate-threshold`` (the no-result score threshold) and
``recallwatch ops calibrate-noise`` (per-domain noise ceilings from a healthy gate run).

Exit codes: 0 done, 1 calibrate-threshold refused a threshold (not stored: it misses its target,
or its coverage is under --min-coverage), 2 usage or input error.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recallwatch.cli._common import emit, emit_json, open_store
from recallwatch.cli._options import (
    CalibrationSplit,
    EmbedderSpec,
    GoldenArg,
    JudgmentFiles,
    MinCoverage,
    NoiseFormat,
    NoiseFormatOption,
    PolicyFile,
    ResultsFile,
    SplitPart,
    StoreURI,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult


# Below this share of answerable queries answered, a threshold is refused (--min-coverage).
MIN_COVERAGE = 0.5


class NegativesChoice(str, Enum):
    in_domain = "in-domain"
    off_domain = "off-domain"
    both = "both"


def calibrate_threshold(
    golden: GoldenArg,
    store: StoreURI,
    negatives: Annotated[NegativesChoice | None, typer.Option(
        "--negatives", help="Unanswerable queries to calibrate against. in-domain: each golden "
        "query searched with its expected chunks removed, so its answer is absent (the hard "
        "case); off-domain: questions about other subjects (--unanswerable, or a shipped list), "
        "easy to reject; both. Default: in-domain, or both with --unanswerable.")] = None,
    unanswerable: Annotated[Path | None, typer.Option(
        "--unanswerable", help="Off-domain unanswerable queries (.txt or .jsonl); default: the "
        "shipped list of queries from unrelated domains.")] = None,
    target_precision: Annotated[float | None, typer.Option(
        "--target-precision", help="Lowest threshold reaching this precision.")] = None,
    target_coverage: Annotated[float | None, typer.Option(
        "--target-coverage", help="Highest threshold keeping this coverage.")] = None,
    embedder: EmbedderSpec = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Do not store the threshold.")] = False,
    min_coverage: MinCoverage = MIN_COVERAGE,
    split: CalibrationSplit = SplitPart.tune,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """The no-result threshold: results scoring below it are dropped, and a query left with
    nothing gets "no result". The golden set's queries are the answerable ones. Prints
    precision (share of answers that hold an expected chunk) and coverage (share of answerable
    queries answered) at each threshold, and the chosen point, stored in the store's metadata
    under the embedder's fingerprint. A point that misses its target, or whose coverage is
    under --min-coverage, is printed and not stored (exit 1)."""
    from recallwatch.embedders import embedder_from_spec
    from recallwatch.embedders.base import SPEC_META_KEY
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.calibrate import Negatives, Target, store_threshold, tuning_part
    from recallwatch.ops.calibrate import calibrate_threshold as run
    from recallwatch.ops.probes import read_logged_queries

    if target_precision is not None and target_coverage is not None:
        raise UsageError("give at most one of --target-precision and --target-coverage")
    target: Target = "coverage" if target_coverage is not None else "precision"
    value = target_coverage if target_coverage is not None else (
        0.95 if target_precision is None else target_precision)
    kind: Negatives = (negatives.value if negatives is not None
                       else "both" if unanswerable is not None else "in-domain")
    gold = tuning_part(load_golden(golden), split.value)  # before the store is opened
    off = None if unanswerable is None else read_logged_queries(unanswerable)
    vs = open_store(store)
    try:
        spec = embedder or vs.get_meta(SPEC_META_KEY)
        if not isinstance(spec, str):
            raise UsageError(f"{vs.uri} does not record its embedder: give --embedder")
        cal = run(vs, embedder_from_spec(spec), gold, off, negatives=kind, target=target,
                  value=value, unanswerable_source=None if unanswerable is None
                  else str(unanswerable))
        why = cal.refusal(min_coverage) or ""  # with --dry-run: said, not an error
        refused = bool(why)
        if not dry_run and not refused:
            store_threshold(vs, cal)
    finally:
        vs.close()
    if fmt is TableJson.json:
        emit_json({**cal.to_dict(), "stored": not dry_run and not refused,
                   "min_coverage": min_coverage, **({"refused": why} if refused else {})})
        if refused and not dry_run:
            raise typer.Exit(1)
        return
    lines = [f"calibrated on the {len(gold.queries)} tune queries (the test queries are held "
             "out)"] if gold.has_split else []
    lines += [f"An answer is a query's top {gold.top_k} results scoring at least the threshold; "
             "with none, the answer is \"no result\".",
             "precision: answers holding an expected chunk ÷ answers given (to answerable and "
             "unanswerable queries); coverage: answerable queries answered ÷ answerable queries.",
             f"{'threshold':>10} {'precision':>10} {'coverage':>9}"]
    step = max(1, len(cal.curve) // 20)
    shown = list(cal.curve[::step])
    lines += [f"{t:>10.4f} {p:>10.3f} {c:>9.3f}" for t, p, c in shown]
    verb = "reaches" if cal.reached else "does NOT reach (closest point)"
    lines.append(f"chosen threshold {cal.threshold:.4f}: precision {cal.precision:.3f}, coverage "
                 f"{cal.coverage:.3f} — {verb} target {cal.target} {cal.target_value:g}; "
                 f"{cal.answerable} answerable, {cal.unanswerable} unanswerable "
                 f"({cal.unanswerable_source})")
    lines.append(why if refused and not dry_run else "not stored (--dry-run)" if dry_run else
                 f"stored in {store} for embedder {cal.fingerprint and cal.fingerprint['name']}")
    if refused and dry_run:
        lines.append(why.replace("NOT stored", "would not be stored"))
    emit("\n".join(lines))
    if refused and not dry_run:
        raise typer.Exit(1)


def _gate_result(golden: Path, store: str | None, results: Path | None,
                 policy: Path | None, split: SplitPart,
                 judgments: dict[tuple[str, str], int] | None = None) -> GateResult:
    from recallwatch.acceptance.run import SourceSpec, gate
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.ops.calibrate import tuning_part

    if (store is None) == (results is None):
        raise UsageError("give exactly one of --store URI or --results FILE")
    # Refuse `test` (and a split without tune queries) before anything is searched.
    golden_set = load_golden(golden)
    has_split = tuning_part(golden_set, split.value).has_split
    source = SourceSpec("store", store) if store is not None else SourceSpec("results",
                                                                             str(results))
    return gate(golden_set, source, policy, part="tune" if has_split else "auto",
                judgments=judgments)


def calibrate_noise(
    golden: GoldenArg,
    store: StoreURIOrNone = None,
    results: ResultsFile = None,
    policy: PolicyFile = None,
    margin: Annotated[int, typer.Option(
        "--margin", help="Chunks of noise allowed above the baseline.")] = 1,
    min_queries: Annotated[int, typer.Option(
        "--min-queries", min=1, help="Healthy queries a domain needs to be calibrated; a domain "
        "with fewer is named and keeps the default ceiling.")] = 5,
    judgments: JudgmentFiles = None,
    split: CalibrationSplit = SplitPart.tune,
    fmt: NoiseFormatOption = NoiseFormat.yaml,
) -> None:
    """From a full gate run: the noise of the healthy queries per domain and a suggested noise
    ceiling for each (the share of the top K allowed to score below the query's worst expected
    chunk), as a policy YAML snippet.

    Healthy: recall 1, and noise the rule can measure. A query that lists fewer expected chunks
    than the top K minus the allowed noise cannot be measured unless its other results were
    judged (--judgments): it is left out and counted. The snippet says how many queries each
    domain's ceiling rests on and which domains have too few."""
    from recallwatch.ops.calibrate import calibrate_noise as run

    judged = None
    if judgments:
        from recallwatch.formats.judging import judged_pairs

        judged = judged_pairs(judgments)
    cal = run(_gate_result(golden, store, results, policy, split, judged), margin=margin,
              min_healthy=min_queries)
    if fmt is NoiseFormat.json:
        emit_json(cal.to_dict())
    else:
        emit(cal.policy_yaml())


def register(app: typer.Typer) -> None:
    app.command("calibrate-threshold")(calibrate_threshold)
    app.command("calibrate-noise")(calibrate_noise)
