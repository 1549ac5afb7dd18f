"""``recallwatch golden qrels``: a golden set as TREC qrels, for ``eval`` and ``compare``.

Exit codes: 0 written; 2 usage or input error (nothing written).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit
from recallwatch.cli._options import GoldenArg, StoreURIOrNone


def qrels(
    golden: GoldenArg,
    out: Annotated[Path, typer.Option(
        "--out", help="The qrels file to write (TREC `qid 0 docid rel`; gzip for a .gz "
        "name).")],
    store: StoreURIOrNone = None,
    corpus: Annotated[Path | None, typer.Option(
        "--corpus", help="Resolve content anchors against this corpus file instead of "
        "--store.")] = None,
) -> None:
    """Write a golden set as TREC qrels, so `recallwatch eval` and `compare` can score runs
    against it: every chunk a query names (required or an alternative of a group) has
    relevance 1, a Gold chunk (a curated synthesis) 2. Content anchors ({doc_id, quote}) need
    the chunks they quote: --store or --corpus."""
    from recallwatch.acceptance.golden_labels import golden_qrels, load_chunks
    from recallwatch.errors import UsageError
    from recallwatch.formats.golden import load_golden
    from recallwatch.judgments.judgments import write_qrels_file

    if store is not None and corpus is not None:
        raise UsageError("give at most one of --store URI or --corpus FILE")
    golden_set = load_golden(golden)
    where = store if store is not None else corpus
    if where is None:
        labels = golden_qrels(golden_set)
    else:
        with load_chunks(where) as chunks:
            labels = golden_qrels(golden_set, chunks)
    write_qrels_file(out, labels)
    emit(f"{out}: {len(labels)} judgments of {len(golden_set.queries)} queries")


def register(app: typer.Typer) -> None:
    app.command("qrels")(qrels)
