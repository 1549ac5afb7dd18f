"""``recallwatch label pool|serve|agree|export|merge``: pooled judging by people.

Exit codes: 0 done; 2 usage or input error (a bad queue or judgments file, a non-loopback
address, a port in use). Registered into the ``label`` group that label_cmd declares.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Annotated, Any

import typer

from recallwatch.cli._common import emit, emit_json
from recallwatch.cli._options import (
    EmbedderSpec,
    JudgmentFiles,
    KappaWeights,
    LabellerName,
    PipelineFile,
    Port,
    Seed,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)

_JUDGMENTS_ARG = typer.Argument(help="Judgments files (JSON Lines) or TREC qrels, in order.")


def pool(
    queries: Annotated[Path, typer.Argument(help="The queries to pool for: a golden set (its "
                                            "expected chunks count as judged) or a YAML, JSON "
                                            "or JSONL list of {id, text}.")],
    out: Annotated[Path, typer.Option("--out", help="The judging queue to write (JSONL; "
                                      "OUT.provenance.json beside it).")],
    store: StoreURIOrNone = None,
    results: Annotated[list[Path] | None, typer.Option(
        "--results", help="Results file (JSONL) of another search system to pool; repeat for "
        "several.")] = None,
    bm25: Annotated[Path | None, typer.Option(
        "--bm25", help="Corpus file (JSONL or Parquet): pool BM25 keyword search over its "
        "chunks' text too.")] = None,
    pipeline: PipelineFile = None,
    depth: Annotated[int, typer.Option(
        "--depth", min=1, help="How many top results of each system to pool per query.")] = 20,
    judgments: JudgmentFiles = None,
    embedder: EmbedderSpec = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Pool the top results of several systems into a judging queue (TREC-style pooling).

    Takes the union of each system's top --depth results per query (the --store, BM25 over the
    --bm25 corpus, each --results file, each retriever of a --pipeline and its fused list),
    leaves out the pairs already judged (the golden set's expected chunks and every --judgments
    file) and writes the rest to --out, best-ranked first.
    """
    from recallwatch import __version__
    from recallwatch._files import check_output_file
    from recallwatch.judgments.pool import pool_from_files, write_pool

    check_output_file(out, "--out", example="queue.jsonl")  # before the systems are searched
    made, provenance = pool_from_files(queries, store=store, results=results or [], bm25=bm25,
                                       depth=depth, judgments=judgments or [],
                                       embedder=embedder, pipeline=pipeline)
    provenance = {"created_by": f"recallwatch {__version__} label pool", **provenance}
    sidecar = write_pool(out, made, provenance)
    summary = made.summary()
    if fmt is TableJson.json:
        emit_json({**summary, "out": str(out), "provenance": str(sidecar)})
        return
    per = ", ".join(f"{s} {n}" for s, n in summary["per_system"].items())
    only = ", ".join(f"{s} {n}" for s, n in summary["only_by"].items())
    lines = [f"pooled the top {depth} of {len(made.systems)} system(s) ({per} results) for "
             f"{summary['queries']} quer{'y' if summary['queries'] == 1 else 'ies'} with "
             "unjudged results",
             f"  {summary['candidates']} distinct pairs, {summary['already_judged']} already "
             f"judged, {summary['queue']} to judge (found by one system alone: {only})",
             f"  wrote {out} and {sidecar.name}"]
    if summary["without_text"]:
        lines.append(f"  note: {summary['without_text']} pair(s) have no text (a results file "
                     "names chunks no --store or --bm25 corpus holds)")
    emit("\n".join(lines))


def serve(
    queue: Annotated[Path, typer.Argument(help="The judging queue (from `recallwatch label "
                                          "pool`).")],
    judge: LabellerName = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="The judgments file to save grades in (default: QUEUE's name with "
        ".JUDGE.judgments.jsonl); an existing one is resumed.")] = None,
    port: Port = 8765,
) -> None:
    """Judge a queue in the browser: grades 0-3 with the keys 0-3, u to undo.

    Serves a local page on 127.0.0.1 only, protected by a token in the address it prints. Every
    grade is saved at once, whole, with your name and the time: stop the server at any moment
    and serve the queue again to resume where you were. (To label answers, see `recallwatch
    label answers`.)
    """
    need_web()
    from recallwatch.web.judge import create_judge_app

    name, target, token = page_session(queue, judge, out, "judgments")
    web_app = create_judge_app(queue, target, judge=name, token=token)
    serve_page(web_app, token, port, doing=f"judging {queue} as {name}, saving to {target}",
               again="the queue", page="judging page")


def need_web() -> None:
    """The web extra's modules are installed (else an error saying how to install them)."""
    from recallwatch.errors import NotInstalledError

    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ModuleNotFoundError as exc:
        raise NotInstalledError(f"{exc.name} (needed by the judging page)", "web") from None


def page_session(source: Path, judge: str | None, out: Path | None,
                 kind: str) -> tuple[str, Path, str]:
    """The person's name, the file their work is saved to (default: SOURCE.NAME.KIND.jsonl,
    refused now when it cannot be written) and a new token."""
    import getpass
    import secrets

    from recallwatch._files import check_writable

    name = judge or getpass.getuser()
    target = out or source.with_name(f"{source.name.removesuffix('.jsonl')}.{name}.{kind}.jsonl")
    check_writable(target, "--out")  # a read-only place is refused now, not at the first save
    return name, target, secrets.token_urlsafe(24)


def serve_page(web_app: Any, token: str, port: int, *, doing: str, again: str,
               page: str) -> None:
    """Serve a labelling page on 127.0.0.1 until Ctrl+C, printing its address and token."""
    import uvicorn

    from recallwatch.cli.ops.serve import _listen

    sock = _listen("127.0.0.1", port)
    bound = sock.getsockname()[1]
    typer.echo(doing, err=True)
    typer.echo(f"open http://127.0.0.1:{bound}/?token={token}", err=True)
    typer.echo(f"Ctrl+C to stop; serve {again} again to resume", err=True)
    server = uvicorn.Server(uvicorn.Config(web_app, log_level="warning", access_log=False))
    with contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    typer.echo(f"{page} stopped", err=True)


def _agreement_text(result: Any, texts: dict[tuple[str, str], tuple[str, str]]) -> str:
    a, b = result.judges
    m = result.agreement
    if m is None:
        return f"{a} and {b} graded no pair in common"
    kappa = "undefined" if m.kappa != m.kappa else f"{m.kappa:.3f}"
    ci = "" if m.ci is None else f" ({m.ci_level:.0%} CI {m.ci[0]:.2f} to {m.ci[1]:.2f})"
    lines = [f"{a} vs {b}: {m.n} pairs graded by both, {m.weights} weighted kappa {kappa}{ci}, "
             f"exact agreement {m.exact:.1%}",
             f"confusion (rows {a}, columns {b}; grades {m.categories}):"]
    lines += ["  " + " ".join(f"{v:4d}" for v in row) for row in m.confusion]
    only = ", ".join(f"{j} {n}" for j, n in result.only.items())
    lines.append(f"pairs graded by one judge only: {only}")
    lines.append(f"{len(result.disagreements)} disagreement(s) to adjudicate, largest gap first:")
    for qid, cid, ga, gb in result.disagreements[:20]:
        query, chunk = texts.get((qid, cid), ("", ""))
        lines.append(f"  {qid} / {cid}: {a} {ga}, {b} {gb}"
                     + (f"  — {query[:60]!r} / {chunk[:60]!r}" if query or chunk else ""))
    if len(result.disagreements) > 20:
        lines.append(f"  … and {len(result.disagreements) - 20} more (--format json lists all)")
    return "\n".join(lines)


def agree(
    judgments: Annotated[list[Path], _JUDGMENTS_ARG],
    judges: Annotated[list[str] | None, typer.Option(
        "--judge", help="A judge to compare (give two; default: the two the files name).")] = None,
    weights: KappaWeights = "quadratic",
    queue: Annotated[Path | None, typer.Option(
        "--queue", help="The judging queue, for the query and chunk text of each "
        "disagreement.")] = None,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write the disagreements as a judging queue (each pair with both "
        "grades) to adjudicate with `recallwatch label serve`.")] = None,
    seed: Seed = 0,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Agreement between two judges on the pairs both graded: Cohen's kappa and the
    disagreements.

    Kappa is agreement corrected for chance: 1 perfect, 0 what chance alone gives. Weighted
    (quadratic by default) it counts a 2-versus-3 as a near miss and a 0-versus-3 as a full one.
    """
    from recallwatch._files import check_output_file
    from recallwatch.errors import UsageError
    from recallwatch.formats.judging import QueueItem, read_queue, write_queue
    from recallwatch.judgments.agreement import WEIGHTS
    from recallwatch.judgments.judging import judges_agreement, load_judgments

    if weights not in WEIGHTS:
        raise UsageError(f"--weights must be one of {', '.join(WEIGHTS)}, found {weights!r}")
    if out is not None:
        check_output_file(out, "--out", example="adjudicate.jsonl")
    result = judges_agreement(load_judgments(judgments), judges, weights=weights,
                              seed=seed)
    items = {i.pair: i for i in read_queue(queue)} if queue is not None else {}
    texts = {p: (i.query, i.text) for p, i in items.items()}
    if out is not None:
        a, b = result.judges
        write_queue(out, [
            QueueItem(q, items[(q, c)].query if (q, c) in items else "", c,
                      items[(q, c)].text if (q, c) in items else "",
                      items[(q, c)].meta if (q, c) in items else {},
                      items[(q, c)].found_by if (q, c) in items else {}, {a: ga, b: gb})
            for q, c, ga, gb in result.disagreements])
    if fmt is TableJson.json:
        emit_json({**result.to_dict(), "out": None if out is None else str(out)})
        return
    text = _agreement_text(result, texts)
    if out is not None:
        text += f"\nwrote {len(result.disagreements)} pair(s) to adjudicate to {out}"
    emit(text)


def export(
    judgments: Annotated[list[Path], _JUDGMENTS_ARG],
    out: Annotated[Path, typer.Option("--out", help="The TREC qrels file to write "
                                      "(OUT.provenance.json beside it).")],
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Export judgments as TREC qrels (qid 0 docid grade), one grade per pair.

    Where judges disagree the last file given wins: pass the adjudication last.
    """
    from recallwatch import __version__
    from recallwatch._files import check_output_file
    from recallwatch.judgments.judging import load_judgments, resolve
    from recallwatch.judgments.judgments import write_judged_qrels

    check_output_file(out, "--out", example="judged.qrels")
    loaded = load_judgments(judgments, trec_ids=True)
    final, overridden = resolve(loaded)
    judges = sorted({j.judge for j in loaded if j.judge})
    sidecar = write_judged_qrels(out, final, {
        "created_by": f"recallwatch {__version__} label export",
        "inputs": [str(p) for p in judgments], "judges": judges,
        "overridden_disagreements": overridden})
    summary = {"pairs": len(final.judgments), "grades": final.histogram(), "judges": judges,
               "overridden_disagreements": overridden, "out": str(out),
               "provenance": str(sidecar)}
    if fmt is TableJson.json:
        emit_json(summary)
        return
    emit(f"wrote {len(final.judgments)} judged pairs to {out} (grades "
         + ", ".join(f"{g}: {n}" for g, n in final.histogram().items())
         + f"; judges {', '.join(judges)}; {overridden} disagreement(s) settled by the "
         "later file)")


def merge(
    golden: Annotated[Path, typer.Argument(help="The golden set to extend.")],
    judgments: Annotated[list[Path], _JUDGMENTS_ARG],
    out: Annotated[Path, typer.Option("--out", help="The new golden set to write (YAML, or "
                                      "JSON for a .json name).")],
    min_grade: Annotated[int, typer.Option(
        "--min-grade", min=1, max=3, help="The grade from which a judged chunk becomes an "
        "expected chunk (2: relevant).")] = 2,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Merge judgments into a golden set: chunks judged relevant join the expected chunks.

    Nothing is removed: an expected chunk judged below --min-grade is listed for a person to
    decide. Where judges disagree the last file given wins.
    """
    import yaml

    from recallwatch._files import check_output_file, write_atomic
    from recallwatch.formats.golden import GoldenSet, load_golden
    from recallwatch.judgments.judging import load_judgments, merge_into_golden, resolve

    check_output_file(out, "--out", example="golden.yaml")
    current = load_golden(golden)
    final, _ = resolve(load_judgments(judgments))
    merged, report = merge_into_golden(current.to_dict(), final.grades(), min_grade=min_grade)
    GoldenSet.from_dict(merged, source=out)  # what is written must read back as a golden set
    if out.suffix == ".json":
        text = json.dumps(merged, indent=2, ensure_ascii=False) + "\n"
    else:
        text = yaml.safe_dump(merged, sort_keys=False, allow_unicode=True, width=100)
    write_atomic(out, text)
    dropped = _comment_lines(golden)
    if dropped:
        typer.echo(f"note: the {dropped} comment line(s) of {golden} are not in {out}: the merged "
                   "set is written anew from its data (copy back the comments you need)",
                   err=True)
    if fmt is TableJson.json:
        emit_json({**report, "out": str(out), "comment_lines_dropped": dropped})
        return
    lines = [f"added {report['chunks_added']} expected chunk(s) to {report['queries_changed']} "
             f"quer{'y' if report['queries_changed'] == 1 else 'ies'} (grade >= {min_grade}); "
             f"wrote {out}"]
    below = report["expected_judged_below"]
    if below:
        lines.append(f"{len(below)} expected chunk(s) judged below {min_grade} (kept; decide):")
        lines += [f"  {b['query_id']} / {b['id']}: grade {b['grade']}" for b in below[:20]]
    if report["relevant_for_queries_not_in_the_set"]:
        lines.append(f"{report['relevant_for_queries_not_in_the_set']} relevant judgment(s) "
                     "name queries the golden set does not hold (not merged)")
    emit("\n".join(lines))


def _comment_lines(path: Path) -> int:
    """How many lines of a YAML file hold a comment (a JSON file has none)."""
    import yaml

    if path.suffix.lower() in (".json", ".jsonl"):
        return 0
    text = path.read_text(encoding="utf-8-sig")
    lines: set[int] = set()
    # the scanner reads the text as YAML does: a '#' inside a quoted string is no comment
    try:
        tokens = list(yaml.scan(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError:
        return 0
    covered = [(t.start_mark.index, t.end_mark.index) for t in tokens
               if isinstance(t, yaml.ScalarToken)]
    for match in re.finditer(r"(?:^|(?<=[ \t]))#", text, flags=re.MULTILINE):
        if not any(a <= match.start() < b for a, b in covered):
            lines.add(text.count("\n", 0, match.start()))
    return len(lines)


def register(app: typer.Typer) -> None:
    app.command("pool")(pool)
    app.command("serve")(serve)
    app.command("agree")(agree)
    app.command("export")(export)
    app.command("merge")(merge)
