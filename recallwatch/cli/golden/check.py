"""``recallwatch golden check`` and ``recallwatch golden migrate``: keep a golden set's labels true
across a re-chunking (content anchors). Registered into the ``golden`` group by name.

Exit codes: check — 0 every label resolves, 2 some label does not (each listed, located);
migrate — 0 written with every label found, 1 written but some label was lost (listed), 2 usage or
input error (nothing written).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from recallwatch.cli._common import emit, emit_json
from recallwatch.cli._options import (
    EmbedderSpec,
    GoldenArg,
    PolicyFile,
    StoreURIOrNone,
    TableJson,
    TableJsonFormat,
)


class Into(str, Enum):
    anchors = "anchors"
    ids = "ids"


class Quote(str, Enum):
    chunk = "chunk"
    sentence = "sentence"


_CHUNKS_HELP = "a corpus file (JSONL or Parquet) or a store URI"


def _lines(labels: list[Any], golden: Path, *, only_problems: bool = False) -> list[str]:
    out = []
    for x in labels:
        if only_problems and x.status in ("ok",):
            continue
        where = f"{golden}:{x.line}" if x.line else str(golden)
        out.append(f"{x.status:<9} {where}: query {x.query}: {x.label} — {x.detail}")
    return out


def _counts(labels: list[Any]) -> str:
    from collections import Counter

    counts = Counter(x.status for x in labels)
    return ", ".join(f"{counts[s]} {s}" for s in ("ok", "split", "ambiguous", "lost")
                     if counts[s])


def _twin_lines(twinned: list[Any], golden: Path) -> list[str]:
    """Each expected chunk id that has identical twins, then what the gate does with them."""
    if not twinned:
        return []
    return [*(f"twins     {golden}:{x.line}: query {x.query}: {x.label} — {x.detail}"
              if x.line else f"twins     {golden}: query {x.query}: {x.label} — {x.detail}"
              for x in twinned),
            f"{len(twinned)} expected chunk id(s) have identical twins (the same text under "
            "another id): the gate counts a twin in the top K as the chunk expected and names "
            "it in the report; policy twins_count_as_found: false turns this off"]


def check(
    golden: GoldenArg,
    store: StoreURIOrNone = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="Check against this corpus file instead of --store.")] = None,
    policy: PolicyFile = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Check that every chunk id and content anchor of a golden set resolves to current chunks.

    A content anchor is an expected entry {doc_id, quote}: a passage of a source document, found
    in whichever chunks hold it now. Each label is listed as ok, split (held by several
    consecutive chunks, all of which the gate will expect), ambiguous (held whole by several
    chunks; the best-ranked counts) or lost (with the closest chunks by content, or by name for
    a chunk id). An expected chunk id whose text another chunk repeats word for word is listed
    with those identical twins: the gate counts a twin in the top K as found. Exit 2 when any
    label is lost.

    Also warns, with the arithmetic, when the set is too small for the policy's rules (--policy,
    or the default rules) to mean anything: with 2 queries one failure is 50 %, so a 5 %
    tolerance cannot be met or missed by less than one query. A warning only.
    """
    from recallwatch.acceptance.golden_labels import check_labels, load_chunks
    from recallwatch.acceptance.golden_size import golden_size, scored_count, size_warning
    from recallwatch.errors import DatasetError, UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy

    if (store is None) == (corpus is None):
        raise UsageError("give exactly one of --store URI or --corpus FILE")
    golden_set, rules = load_golden(golden), load_policy(policy)
    where = store if store is not None else str(corpus)
    with load_chunks(where) as chunks:
        labels = check_labels(golden_set, chunks)
    lost = [x for x in labels if x.status == "lost"]
    twinned = [x for x in labels if x.twins]
    scored = scored_count(golden_set)
    if fmt is TableJson.json:
        emit_json({"golden": str(golden), "against": where, "labels": [x.to_dict() for x in labels],
                   "lost": len(lost), "twins": len(twinned),
                   "golden_size": golden_size(scored, rules)})
    else:
        groups = sum(len(q.alternatives) for q in golden_set.queries)
        note = ([f"{groups} group(s) of alternatives: each counts as one expected item, found "
                 "when any member (at_least N: N members) is in the top K; the others are "
                 "never noise"] if groups else [])
        note += _twin_lines(twinned, golden)
        too_small = size_warning(scored, rules)
        emit("\n".join([*_lines(labels, golden, only_problems=True),
                        f"{len(labels)} label(s) against {where}: {_counts(labels)}", *note,
                        *([f"warning: {too_small}"] if too_small else [])]))
    if lost:
        first = lost[0]
        raise DatasetError(
            f"{len(lost)} label(s) do not resolve; first: {first.label} — {first.detail}",
            source=golden, line=first.line, record=first.query, field="expected",
        )


def migrate(
    golden: GoldenArg,
    old: Annotated[str, typer.Option(
        "--from", help=f"The chunks the golden set was written for: {_CHUNKS_HELP}.")],
    out: Annotated[Path, typer.Option(
        "--out", help="The migrated golden set to write (YAML, or JSON for a .json name).")],
    new: Annotated[str | None, typer.Option(
        "--to", help=f"The new chunks: {_CHUNKS_HELP}. Needed for --into ids; with --into "
        "anchors, every anchor is checked against it.")] = None,
    into: Annotated[Into, typer.Option(
        "--into", help="Rewrite chunk ids as content anchors (they survive later re-chunkings) "
        "or as the new chunks' ids.")] = Into.anchors,
    version: Annotated[str | None, typer.Option(
        "--golden-version",
        help="The migrated set's version (default: the old one plus one).")] = None,
    quote: Annotated[Quote, typer.Option(
        "--quote", help="What an anchor quotes: the whole old chunk, or the sentence of it most "
        "similar to the query (by the embedder), which survives a re-chunking that cuts the "
        "chunk in pieces. Tables are quoted whole.")] = Quote.chunk,
    embedder: EmbedderSpec = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Rewrite a golden set's chunk ids as content anchors, or as the ids of a new chunking.

    Each chunk id becomes an anchor quoting that chunk's content in the old chunks (--from),
    {doc_id, quote}; with --into ids, the new chunks (--to) that hold the quote replace it. Every
    label is reported: ok, split (held by several new chunks, all expected), ambiguous (held whole
    by several: kept as an anchor) or lost (not found: kept as an anchor quoting the old text, to
    fix by hand; exit 1). The version changes, so the history tells the two sets apart.

    With --quote sentence each anchor quotes one sentence of the old chunk: the one whose
    embedding is most similar to the query's (the first of equals), among the sentences no other
    chunk of its document holds; every choice is listed. YAML comments of the golden set are not
    carried over: copy them by hand.
    """
    from contextlib import ExitStack

    from recallwatch._files import check_output_file
    from recallwatch.acceptance.golden_labels import (
        load_chunks,
        migrate_labels,
        quote_embedder,
        write_golden,
    )
    from recallwatch.formats.golden import load_golden

    check_output_file(out, "--out", example="golden.yaml")
    golden_set = load_golden(golden)
    with ExitStack() as stack:
        old_chunks = stack.enter_context(load_chunks(old))
        new_chunks = stack.enter_context(load_chunks(new)) if new is not None else None
        scorer = quote_embedder(embedder, old) if quote is Quote.sentence else None
        result = migrate_labels(golden_set, old_chunks, new_chunks, into=into.value,
                                version=version, quote=quote.value, embedder=scorer)
    write_golden(result.golden, out)
    if fmt is TableJson.json:
        emit_json({"golden": str(golden), "out": str(out), "version": result.golden.version,
                   "hash": result.golden.hash, "labels": [x.to_dict() for x in result.labels],
                   "lost": len(result.lost), "ambiguous": len(result.ambiguous),
                   "quotes": [x.to_dict() for x in result.quotes]})
    else:
        emit("\n".join([
            *(f"quote     query {x.query}: {x.describe()}" for x in result.quotes),
            *_lines(result.labels, golden, only_problems=True),
            f"wrote {out}: {result.golden.name} v{golden_set.version} #{golden_set.hash[:8]} → "
            f"v{result.golden.version} #{result.golden.hash[:8]}; {len(result.labels)} label(s): "
            f"{_counts(result.labels)}",
        ]))
    if result.lost:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("check")(check)
    app.command("migrate")(migrate)
