"""``recallwatch history groups``: a gate run's metric by query group (domain, tags,
language…), with the gaps; or, with ``--by-chunk``, each group of chunks' exposure in the run's
top-K.

Exit codes: 0 done, 2 usage or input error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recallwatch.cli._common import emit, emit_json, existing_history
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    GoldenOption,
    HistoryPath,
    PolicyFile,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.ops.exposure import Interval


def groups(
    run: Annotated[str, typer.Argument(
        help="A run id (or latest, accepted…) from the history, or a gate report JSON file.")],
    by: Annotated[str | None, typer.Option(
        "--by", help="Query field: domain, tags, or a golden field (language, source…).")] = None,
    by_chunk: Annotated[str | None, typer.Option(
        "--by-chunk", help="Chunk field: domain, label, kind, doc_id, valid_from or valid_to "
        "(by year), facets.NAME; reports exposure. Chunks come from --store or --corpus.")] = None,
    store: StoreURIOrNone = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="With --by-chunk: the corpus file, instead of --store.")] = None,
    metric: Annotated[str, typer.Option(
        "--value", help="Per-query value compared across groups: quality, recall, precision, "
        "rr, ndcg, noise or passed.")] = "quality",
    golden: GoldenOption = None,
    policy: PolicyFile = None,
    history: HistoryPath = DEFAULT_HISTORY,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """A metric of a gate run by query group, with each group's gap to the overall mean and a
    bootstrap 95 % interval of the gap. Fields other than domain and tags are read from
    --golden; with --policy, groups below its min_group_quality are flagged.

    With --by-chunk, exposure instead: each group of chunks' share of the top-K results (its
    exposure) against its share of the corpus and of the expected chunks, with bootstrap 95 %
    intervals over queries. Exposure above the corpus share means the search shows that group
    more than its size alone would; above the relevant share, more than the answers call for."""
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy
    from recallwatch.ops.groups import MIN_INTERVAL_QUERIES, group_gaps

    if (by is None) == (by_chunk is None):
        raise UsageError("give exactly one of --by (a query field) or --by-chunk (a chunk field)")
    result = _load_run(run, history)
    if by_chunk is not None:
        _exposure(result, by_chunk, store, corpus, fmt)
        return
    minimum = load_policy(policy).min_group_quality if policy is not None else None
    rep = group_gaps(result, str(by), metric,  # type: ignore[arg-type]
                     golden=None if golden is None else load_golden(golden), minimum=minimum)
    if fmt is TableJson.json:
        emit_json(rep.to_dict())
        return
    lines = [f"{rep.metric} by {rep.field} — run {rep.run_id}: overall {rep.overall:.3f} over "
             f"{rep.n} queries",
             f"{'group':<24} {'n':>4} {'mean':>9} {'gap':>9}  {'95% CI of gap':<22}"]
    for g in rep.groups:
        flag = f"  BELOW min_group_quality {rep.minimum:g}" if g.below_min else ""
        ci = ("too few queries for an interval" if g.ci_low is None or g.ci_high is None
              else f"[{g.ci_low:+.3f}, {g.ci_high:+.3f}]")
        lines.append(f"{g.group[:24]:<24} {g.n:>4} {g.mean:>9.3f} {g.gap:>+9.3f}  {ci}{flag}")
    if any(g.ci_low is None for g in rep.groups):
        lines.append(f"(an interval needs {MIN_INTERVAL_QUERIES} queries or more: resampling "
                     "fewer says nothing about the gap)")
    emit("\n".join(lines))


def _exposure(result: GateResult, field: str, store: str | None, corpus: Path | None,
              fmt: TableJson) -> None:
    from recallwatch.errors import UsageError
    from recallwatch.ops.exposure import exposure

    if (store is None) == (corpus is None):
        raise UsageError("--by-chunk needs the chunks: give exactly one of --store or --corpus")
    if corpus is not None:
        from recallwatch.formats.corpus import read_corpus

        chunks = read_corpus(corpus).chunks
    else:
        from recallwatch.cli._common import open_store

        opened = open_store(str(store))
        try:
            chunks = opened.chunks()
        finally:
            opened.close()
    rep = exposure(result, chunks, field)
    if fmt is TableJson.json:
        emit_json(rep.to_dict())
        return
    lines = [f"exposure by {rep.field} — run {rep.run_id}: top-{rep.k} of {rep.queries} queries "
             f"({rep.relevant_queries} with expected chunks), corpus of {rep.corpus_chunks} "
             "chunks",
             "exposure = share of the top-K results; vs corpus and vs relevant = exposure minus "
             f"the group's share of the corpus and of the expected chunks; [{rep.level:.0%} CI]",
             f"{'group':<22} {'chunks':>6} {'corpus':>7} {'relevant':>8} {'exposure':>9} "
             f"{'CI':<16} {'vs corpus':>9} {'CI':<16} {'vs relevant':>11} CI"]

    def iv(x: Interval | None) -> str:
        return "" if x is None else f"[{x.low:.3f}, {x.high:.3f}]"

    for g in rep.groups:
        rel = "—" if g.relevant_share is None else f"{g.relevant_share:.3f}"
        vr = "—" if g.vs_relevant is None else f"{g.vs_relevant.value:+.3f}"
        lines.append(f"{g.group[:22]:<22} {g.chunks:>6} {g.corpus_share:>7.3f} {rel:>8} "
                     f"{g.exposure.value:>9.3f} {iv(g.exposure):<16} {g.vs_corpus.value:>+9.3f} "
                     f"{iv(g.vs_corpus):<16} {vr:>11} {iv(g.vs_relevant)}".rstrip())
    emit("\n".join(lines))


def _load_run(ref: str, history: str) -> GateResult:
    from recallwatch._files import read_capped
    from recallwatch.acceptance.model import GateResult
    from recallwatch.errors import InputError

    path = Path(ref)
    if path.suffix.lower() == ".json" or path.is_file():
        data = read_capped(path, "a readable gate report")
        try:
            return GateResult.from_dict(json.loads(data.decode("utf-8")))
        except OSError as exc:
            raise InputError(source=path, expected="a readable gate report",
                             found=exc.strerror) from None
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(source=path, expected="a gate report JSON (recallwatch gate "
                             "--format json)", found=str(exc)[:80]) from None
    with existing_history(history) as h:
        return h.load(h.resolve(ref))



def register(app: typer.Typer) -> None:
    app.command("groups")(groups)
