"""``recallwatch golden sample`` (real queries drawn from a log) and ``recallwatch golden split``
(a held-out test part). Registered into the ``golden`` group.

Exit codes: 0 written, 2 usage or input error (nothing written).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit, emit_json
from recallwatch.cli._options import Seed, Stratify, TableJson, TableJsonFormat


class WeightingChoice(str, Enum):
    frequency = "frequency"
    uniform = "uniform"


def sample(
    log: Annotated[Path, typer.Argument(help="The query log: an interaction log (one "
                                        "impression per line, its `query` text is read), a "
                                        "JSONL with `query` (optional `domain`, `count`) or a "
                                        ".txt with one query per line.")],
    out: Annotated[Path, typer.Option(
        "--out", help="The golden set file to write (YAML), with empty `expected` lists to "
        "label.")],
    n: Annotated[int, typer.Option("--n", min=1, help="How many distinct queries to draw.")] = 200,
    stratify: Stratify = None,
    seed: Seed = 0,
    weighting: Annotated[WeightingChoice, typer.Option(
        "--weighting", help="frequency: a query is drawn in proportion to how often it was "
        "asked; uniform: every distinct query has the same chance.")] = WeightingChoice.frequency,
    similarity: Annotated[float, typer.Option(
        "--similarity", min=0.0, max=1.0, help="Merge two wordings as one query when their "
        "normalised texts (no case, accents or punctuation) share at least this share of "
        "character trigrams; 1 merges equal normalised texts only.")] = 0.8,
    name: Annotated[str | None, typer.Option(
        "--name", help="The golden set's name (default: the output file's name).")] = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Draw real queries from a log into a new golden set, near-duplicates merged.

    Each drawn query keeps its most asked wording, how often it was asked (`frequency`, all its
    wordings together) and its domain; the other wordings are listed as comments. Its id comes
    from its text, so a query drawn again keeps its id. Label the queries (list the chunks that
    answer each under `expected`) before the gate reads the file.
    """
    from recallwatch._files import check_output_file, write_atomic
    from recallwatch.judgments.sample import (
        draw,
        golden_yaml,
        merge_near_duplicates,
        read_query_log,
    )

    check_output_file(out, "--out", example="golden.yaml")
    query_log = read_query_log(log)
    merged = merge_near_duplicates(query_log.counts, similarity=similarity)
    strat = None if stratify is None else stratify.value
    picked = draw(merged, n, seed=seed, weighting=weighting.value, stratify=strat)
    settings = {"n": n, "seed": seed, "weighting": weighting.value,
                "stratify": strat or "none", "similarity": similarity}
    write_atomic(out, golden_yaml(picked, name=name or out.stem, log=query_log,
                                  settings=settings))
    asked = sum(q.count for q in picked)
    domains: dict[str, int] = {}
    for q in picked:
        domains[q.domain or "(none)"] = domains.get(q.domain or "(none)", 0) + 1
    if fmt is TableJson.json:
        emit_json({"log": query_log.to_dict(), "distinct_queries": len(merged),
                   "sampled": len(picked), "sampled_askings": asked, "domains": domains,
                   "settings": settings, "out": str(out)})
        return
    lines = [f"read {query_log.asked} askings of {len(query_log.counts)} distinct texts from "
             f"{query_log.kind} {log}" + (f" ({query_log.skipped} impressions without query "
                                          "text skipped)" if query_log.skipped else ""),
             f"merged near-duplicates: {len(query_log.counts)} texts -> {len(merged)} queries "
             f"(similarity {similarity:g})",
             f"drew {len(picked)} queries ({weighting.value}, seed {seed}), covering {asked} of "
             f"{query_log.asked} askings ({asked / query_log.asked:.1%})"]
    if len(domains) > 1 or strat:
        lines.append("per domain: " + ", ".join(f"{d} {c}" for d, c in sorted(domains.items())))
    lines.append(f"wrote {out}: label each query's `expected` chunks before the gate reads it")
    emit("\n".join(lines))


def split(
    golden: Annotated[Path, typer.Argument(help="The golden set file (YAML, JSON or JSONL); "
                                           "its queries gain `split: tune` or `split: test`.")],
    test: Annotated[float, typer.Option(
        "--test", min=0.0, max=1.0, help="Share of each stratum to hold out as test.")] = 0.3,
    stratify: Stratify = None,
    seed: Seed = 0,
    reassign: Annotated[bool, typer.Option(
        "--reassign", help="Forget existing splits and assign every query again (by default a "
        "query that has a split keeps it, so test queries stay held out).")] = False,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the split set here instead of rewriting GOLDEN.")] = None,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the counts, write nothing.")] = False,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Mark each query `tune` (calibrate policies and thresholds on it) or `test` (the gate's
    verdict is computed on it).

    Deterministic for a seed: a query's place depends on the seed and its id only. Queries that
    already have a split keep it unless --reassign; in a YAML file only `split:` lines are added,
    comments and layout stay.
    """
    from recallwatch._files import check_output_file, write_atomic
    from recallwatch.judgments.split import split_golden

    if out is not None:
        check_output_file(out, "--out", example="golden.yaml")
    strat = None if stratify is None else stratify.value
    plan, text = split_golden(golden, test=test, seed=seed, stratify=strat, reassign=reassign)
    target = out or golden
    if not dry_run:
        write_atomic(target, text)
    if fmt is TableJson.json:
        emit_json({**plan.to_dict(), "written": None if dry_run else str(target)})
        return
    c = plan.counts
    lines = [f"{len(plan.splits)} queries: {c['tune']} tune, {c['test']} test "
             f"({plan.kept} kept their split, {plan.assigned} assigned; seed {seed})"]
    if strat:
        lines += [f"  {s:<16} tune {v['tune']:>4}  test {v['test']:>4}"
                  for s, v in plan.per_stratum.items()]
    lines.append("not written (--dry-run)" if dry_run else f"wrote {target}")
    emit("\n".join(lines))


def register(app: typer.Typer) -> None:
    app.command("sample")(sample)
    app.command("split")(split)
