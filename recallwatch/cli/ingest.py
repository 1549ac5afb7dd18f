"""``recallwatch ingest``: a corpus file into a vector store.

Exit codes: 0 every record ingested (or already there), 1 some records were rejected and the rest
ingested (the new version is not promotable until resolved), 2 usage or input error (nothing
written: a missing file, a bad URI, an embedder mismatch, no valid record at all, or any bad
record with ``--strict``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from recallwatch.cli._common import emit, recording_history
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    EmbedderSpec,
    EngineChoice,
    EngineOption,
    HistoryPath,
    MaxRecallLoss,
    NoHistory,
    RayAddress,
    RayWorkers,
    RecallFloor,
    ReindexWindowHours,
    StoreURI,
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.history import History

EXIT_REJECTED = 1


def ingest(
    corpus: Annotated[Path, typer.Argument(
        help="Corpus file: .jsonl, .jsonl.gz or .parquet; or a public collection's documents "
        "(irds:DATASET_ID, beir:DIR), one chunk each.")],
    store: StoreURI,
    embedder: EmbedderSpec = None,
    batch_size: Annotated[int, typer.Option(
        "--batch-size", min=1, help="Texts per embedding call.")] = 256,
    commit_every: Annotated[int, typer.Option(
        "--commit-every", min=1, help="Chunks per store commit (what a kill can cost).")] = 4096,
    prune: Annotated[bool, typer.Option(
        "--prune", help="Also delete stored chunks that are not in the corpus (a full "
        "sync).")] = False,
    strict: Annotated[bool, typer.Option(
        "--strict", help="Stop at the first bad record (exit 2) and write nothing, instead of "
        "rejecting it.")] = False,
    floor: RecallFloor = 0.95,
    max_recall_loss: MaxRecallLoss = None,
    window: ReindexWindowHours = 24.0,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
    fmt: TableJsonFormat = TableJson.table,
    show_progress: Annotated[bool | None, typer.Option(
        "--progress/--no-progress",
        help="Progress bar on stderr (default: when stderr is a terminal).")] = None,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    vectors: Annotated[bool, typer.Option(
        "--precomputed", help="Bring your own vectors: write the vectors the corpus carries (a "
        "`vector` field in each record, or CORPUS.npy beside it, one row per record) instead of "
        "embedding the texts. --embedder names the model the queries will be embedded with; "
        "every vector must have its dimension.")] = False,
) -> None:
    """Embed and write a corpus into a store: batched, idempotent, resumable after a kill.

    Unchanged chunks (same content hash) are skipped; rerunning a killed ingestion completes it.
    A new store is embedded with use-multilingual unless --embedder names another.
    When more than a fifth of the rows end up outside the ANN index (the structure that makes
    search fast by looking at a fraction of the vectors), the index is rebuilt beside the live one,
    checked against exact search on 100 stored rows, and switched in only if its recall@10
    reaches --floor (and, with --max-recall-loss, is not lower than the live search's beyond
    it); at most once per --reindex-window-hours; recorded in the history.

    With --engine ray the embedding runs on Ray workers (each loads the model once) and this
    process writes the vectors in order: the store ends up byte for byte the same.
    Exit codes: 0 all records ingested, 1 some records rejected (listed; the version is not
    promotable until resolved), 2 usage or input error, 130 interrupted (Ctrl-C): the message
    says how many chunks were committed; the same ingest again finishes the job.
    """
    from recallwatch._durations import span
    from recallwatch.embedders import DEFAULT_EMBEDDER, embedder_from_spec
    from recallwatch.embedders.base import SPEC_META_KEY
    from recallwatch.ops.ingest import IngestSettings, RebuildSettings
    from recallwatch.ops.ingest import ingest as run_ingest
    from recallwatch.scale import engine_session
    from recallwatch.stores import open_store

    span(window, "hours", "--reindex-window-hours")  # before the store is created
    opened: list[History] = []

    def rebuild_history() -> History | None:  # opened only when an index rebuild is recorded
        hist = recording_history(history, no_history)
        if hist is not None:
            opened.append(hist)
        return hist

    with engine_session(engine.value, address, workers) as on_ray:
        vector_store = open_store(store, create=True)  # ingesting may create the store
        try:
            spec = embedder or vector_store.get_meta(SPEC_META_KEY) or DEFAULT_EMBEDDER
            progress = sys.stderr.isatty() if show_progress is None else show_progress
            model = embedder_from_spec(spec)
            embed_batches = None
            if on_ray and not vectors:
                from recallwatch.scale.ray_engine import RayEmbedding

                embed_batches = RayEmbedding(spec, workers)
            settings = IngestSettings(batch_size, commit_every, prune, strict, progress,
                                      RebuildSettings(floor, max_recall_loss, window))
            report = run_ingest(corpus, vector_store, model, settings, embedder_spec=spec,
                                embed_batches=embed_batches, precomputed=vectors,
                                history=rebuild_history)
        finally:
            vector_store.close()
            for hist in opened:
                hist.close()
    if fmt is TableJson.json:
        emit(json.dumps(report.to_dict(), ensure_ascii=False, indent=2, sort_keys=True))
    else:
        emit(report.summary())
    if report.rejected:
        raise typer.Exit(EXIT_REJECTED)


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest)
