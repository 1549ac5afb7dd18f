"""``recallwatch compare``: A vs B (or many runs) on the same qrels, measure by measure, with
significance."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from recallwatch._terminal import table_lines
from recallwatch.cli._common import emit
from recallwatch.cli._options import AllPairs, Alpha, Measures, Power, Seed, Subtopics
from recallwatch.cli._tables import query_notes, value

if TYPE_CHECKING:
    from recallwatch.metrics import Qrels
    from recallwatch.stats import Comparison, MultiComparison


class TestChoice(str, Enum):
    randomization = "randomization"
    t = "t"
    wilcoxon = "wilcoxon"


class CompareFormat(str, Enum):
    table = "table"
    json = "json"
    markdown = "markdown"
    latex = "latex"
    csv = "csv"


class CIChoice(str, Enum):
    bca = "bca"
    percentile = "percentile"


def compare(
    qrels: Annotated[Path, typer.Argument(
        help="TREC qrels file (qid 0 docid rel), optionally gzip; or a public collection's "
        "judgments: irds:DATASET_ID (ir_datasets) or beir:DIR[#split].")],
    run_a: Annotated[Path, typer.Argument(
        help="Run A, the baseline (TREC run file, or Parquet/Arrow).")],
    run_b: Annotated[Path, typer.Argument(
        help="Run B, the candidate (TREC run file, or Parquet/Arrow).")],
    measure: Measures,
    more_runs: Annotated[list[Path] | None, typer.Argument(
        help="More runs (C, D, …): every run is tested against A, or each pair with "
        "--all-pairs.", show_default=False)] = None,
    all_pairs: AllPairs = False,
    test: Annotated[TestChoice, typer.Option(
        "--test", help="Paired significance test.")] = TestChoice.randomization,
    seed: Seed = 0,
    resamples: Annotated[int, typer.Option(
        "--resamples", min=2, help="Random sign assignments (randomization) and bootstrap "
        "resamples.")] = 10_000,
    alpha: Alpha = 0.05,
    ci: Annotated[CIChoice, typer.Option(
        "--ci", help="Bootstrap interval method.")] = CIChoice.bca,
    tie_tolerance: Annotated[float, typer.Option(
        "--tie-tolerance", help="Per-query differences within this count as ties.")] = 1e-9,
    power: Power = 0.8,
    fmt: Annotated[CompareFormat, typer.Option(
        "--format", help="Output on stdout.")] = CompareFormat.table,
    cost_a: Annotated[Path | None, typer.Option(
        "--cost-a", help="The gate report (report.json, or `gate --format json`) of the system "
        "that wrote run A: its cost is printed beside the quality deltas.")] = None,
    cost_b: Annotated[Path | None, typer.Option(
        "--cost-b", help="The same for run B.")] = None,
    subtopics: Subtopics = None,
) -> None:
    """Compare run B against run A on the same judged queries, with a paired significance test.

    Quality alone favours the more expensive system: with --cost-a and --cost-b (gate reports of
    the two systems on a store) the cost deltas are printed too, search latency p50/p99, query
    embedding time and index bytes ("cost" in the JSON).

    Every judged query is evaluated in both runs; a query a run did not return scores 0 there
    (trec_eval -c). Per measure it prints both means, delta = B - A, its bootstrap confidence
    interval (level 1 - alpha), the p-value Holm-corrected across the measures (* marks
    significance at alpha), wins/ties/losses of B, and how many queries a paired t-test would
    need to detect the observed delta with the given power. The randomization test and the
    bootstrap draw with --seed: the same seed gives the same p-value on every call. Exit 0
    whatever the outcome; 2 on bad input.

    --format json prints one object (schema "recallwatch.compare/1"; see
    docs/compare-and-ingest.md):

    \b
    {"schema", "qrels", "run_a", "run_b", "test", "seed", "resamples", "alpha",
     "ci_level", "ci_method", "tie_tolerance", "power",
     "queries": {"evaluated": n, "missing_from_a": [qid], "missing_from_b": [qid],
                 "not_judged": [qid]},
     "measures": {MEASURE: {"mean_a", "mean_b", "delta", "ci": [low, high],
                            "p_value", "p_holm", "significant", "statistic", "p_method",
                            "wins", "ties", "losses", "queries_needed"}}}

    With three runs or more (or --format markdown, latex or csv) it prints one table instead:
    a row per run, lettered a, b, c… in the order given, with each measure's mean; the letters
    after a score name the runs it beats significantly (paired test, Holm-corrected across
    every test of the table), as ranx's report does. --format json then prints
    (schema "recallwatch.compare-many/1"):

    \b
    {"schema", "runs": [name], "measures": [MEASURE], "aggregate": {run: {MEASURE: mean}},
     "tests": [{"a", "b", "measure", "delta", "p", "p_holm", "wins", "ties", "losses"}],
     "pairs": "first"|"all", "test", "seed", "resamples", "alpha", "queries": {"evaluated"}}
    """
    import json

    from recallwatch.metrics import Run, parse_measure
    from recallwatch.metrics.diversity import read_judgments
    from recallwatch.stats import compare as run_compare

    judged, by_subtopic = read_judgments(qrels, subtopics, [parse_measure(m) for m in measure])

    if more_runs or fmt not in (CompareFormat.table, CompareFormat.json):
        if cost_a is not None or cost_b is not None:
            from recallwatch.errors import UsageError

            raise UsageError("--cost-a and --cost-b compare two runs: give two runs and "
                             "--format table or json with them")
        paths = [run_a, run_b, *(more_runs or [])]
        _emit_many(_compare_files(judged, paths, measure, all_pairs=all_pairs, test=test.value,
                                  seed=seed, n_resamples=resamples, alpha=alpha,
                                  tie_tolerance=tie_tolerance, subtopics=by_subtopic), fmt)
        return
    result = run_compare(
        judged, Run.read(run_a), Run.read(run_b), measure,
        test=test.value, seed=seed, n_resamples=resamples, alpha=alpha, ci_method=ci.value,
        tie_tolerance=tie_tolerance, power=power, subtopics=by_subtopic,
    )
    costs = _costs(cost_a, cost_b)
    if fmt is CompareFormat.json:
        shape = result.to_dict()
        body = {"schema": shape.pop("schema"), "qrels": str(qrels), "run_a": str(run_a),
                "run_b": str(run_b), **shape}
        if costs is not None:
            body["cost"], body["cost_notes"] = costs
        emit(json.dumps(body, indent=2, allow_nan=False))
    else:
        emit(render_table(result, str(run_a), str(run_b)))
        if costs is not None:
            emit(_cost_table(*costs))


def _compare_files(qrels: Qrels, paths: list[Path], measures: list[str], **options: Any
                   ) -> MultiComparison:
    from recallwatch.metrics import Run
    from recallwatch.stats import compare_many

    runs = {name: Run.read(path) for name, path in zip(run_names(paths), paths, strict=True)}
    return compare_many(qrels, runs, measures, **options)


def run_names(paths: list[Path]) -> list[str]:
    """Each run's name in the table: its file name, or its path as given when two runs share a
    file name."""
    names = [p.name for p in paths]
    if len(set(names)) == len(names):
        return names
    full = [str(p) for p in paths]
    if len(set(full)) != len(full):
        from recallwatch.errors import UsageError

        dup = next(f for f in full if full.count(f) > 1)
        raise UsageError(f"run {dup} is given twice: give each run once")
    return full


def _emit_many(result: MultiComparison, fmt: CompareFormat) -> None:
    """Print a many-run comparison in the format asked for."""
    import json

    if fmt is CompareFormat.json:
        emit(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    elif fmt is CompareFormat.markdown:
        emit(result.to_markdown())
    elif fmt is CompareFormat.latex:
        emit(result.to_latex())
    elif fmt is CompareFormat.csv:
        emit(result.to_csv().rstrip("\n"))
    else:
        emit(result.to_text())


def _costs(a: Path | None, b: Path | None
           ) -> tuple[dict[str, dict[str, Any]], list[str]] | None:
    """Cost deltas of B against A from their gate reports (both or neither), and what they
    cannot say (quantiles of too few calls, the load between two runs)."""
    from recallwatch.acceptance.cost import cost_deltas, cost_notes
    from recallwatch.errors import UsageError

    if a is None and b is None:
        return None
    if a is None or b is None:
        raise UsageError("give both --cost-a and --cost-b, or neither")
    old, new = _cost_of(a), _cost_of(b)
    return cost_deltas(old, new), cost_notes(old, new)


def _cost_of(path: Path) -> dict[str, Any]:
    import json

    from recallwatch._files import read_capped
    from recallwatch.errors import InputError

    try:
        data = json.loads(read_capped(path, "a gate report in JSON").decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(source=path, expected="a gate report in JSON",
                         found=type(exc).__name__) from None
    cost = data.get("cost") if isinstance(data, dict) else None
    if not isinstance(cost, dict) or not isinstance(cost.get("search_mean_ms"), (int, float)):
        raise InputError(source=path, field="cost", expected="the cost of a gate run on a store",
                         found=cost, hint="a run on a results file records no cost")
    return cost


def _cost_table(costs: dict[str, dict[str, Any]], notes: list[str]) -> str:
    from recallwatch.acceptance.cost import COST_LABELS, cost_interval, format_cost

    rows = [["cost", "A", "B", "delta", "increase"]]
    for key, d in costs.items():
        old, new, delta, rise = d["old"], d["new"], d["delta"], d["increase"]
        rows.append([COST_LABELS[key], format_cost(key, old), format_cost(key, new),
                     ("+" if delta >= 0 else "-") + format_cost(key, abs(delta)),
                     "-" if rise is None else f"{rise:+.0%}{cost_interval(d)}"])
    lines = ["", *table_lines(rows[0], rows[1:]), "",
             "Timings are measured on the machine that ran each gate: compare them on the "
             "same kind of machine.", *notes]
    return "\n".join(lines)


def render_table(result: Comparison, name_a: str, name_b: str) -> str:
    """The terminal table of a comparison: one row per measure, then what the marks mean."""
    header = ["measure", "mean A", "mean B", "delta", f"{(1 - result.alpha) * 100:g}% CI",
              "p", "p (Holm)", "win/tie/loss", f"queries for {result.power:.0%} power"]
    rows = []
    for row in result.measures:
        mark = " *" if row.p_holm <= result.alpha else "  "
        rows.append([
            row.measure, value(row.mean_a), value(row.mean_b), f"{row.delta:+.4f}",
            f"[{row.ci.low:+.4f}, {row.ci.high:+.4f}]", _p(row.p_value),
            _p(row.p_holm) + mark, f"{row.wins}/{row.ties}/{row.losses}",
            "-" if row.queries_needed is None else f"{row.queries_needed:,}",
        ])
    lines = [f"A: {name_a}", f"B: {name_b}", "", *table_lines(header, rows)]
    method = result.test if result.test != "t" else "paired t"
    draws = (f", {result.n_resamples:,} resamples, seed {result.seed}"
             if result.test == "randomization" else "")
    lines += [
        "",
        f"{len(result.query_ids)} queries; delta = B - A; {method} test{draws}; "
        f"{result.ci_method} bootstrap CI (seed {result.seed}).",
        f"* significant at alpha {result.alpha:g} after Holm correction across "
        f"{len(result.measures)} measure{'s' if len(result.measures) != 1 else ''}.",
    ]
    lines += query_notes([("A", result.missing_from_a), ("B", result.missing_from_b)],
                         result.not_judged)
    return "\n".join(lines)


def _p(p: float) -> str:
    # Small p-values keep two significant digits: 0.0001 and 0.00001 are different evidence.
    return f"{p:.4f}" if p >= 1e-3 or p == 0.0 else f"{p:.1e}"


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
