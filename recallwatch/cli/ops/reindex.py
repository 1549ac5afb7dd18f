"""``recallwatch ops reindex`` and ``recallwatch ops rollback``: rebuild the index and switch
atomically, or put the previous one back.

Exit codes: 0 switched / rolled back, 1 not switched (the new index missed the floor, or may be
worse than the live one beyond the tolerance), 2 usage or input error.
"""

from __future__ import annotations

import typer

from recallwatch.cli._common import emit, emit_json, open_store, recording_history
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    Depth,
    EngineChoice,
    EngineOption,
    HistoryPath,
    MaxRecallLoss,
    NoHistory,
    ProbesFile,
    RayAddress,
    RayWorkers,
    RecallFloor,
    StoreURI,
    TableJson,
    TableJsonFormat,
)


def reindex(
    store: StoreURI,
    probes_file: ProbesFile,
    k: Depth = 10,
    floor: RecallFloor = 0.95,
    max_recall_loss: MaxRecallLoss = 0.01,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
    engine: EngineOption = EngineChoice.local,
    address: RayAddress = None,
    workers: RayWorkers = None,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Build a new index in the background, verify it on the probes, and switch atomically (exit
    1: the new index missed --floor, or may be worse than the live one by more than
    --max-recall-loss, and the current one keeps serving; the report gives the difference's
    95 % interval). Any adapter; the new
    index is built with the URI's index parameters. LanceDB: one index commit; other adapters:
    a copy of production with a fresh index, promoted by the engine's view, alias or pointer
    switch once verified and checked to hold the same content. With --engine ray the exact
    search the recall is measured against runs on Ray, as for monitor."""
    from recallwatch.cli.ops.monitor import exact_search
    from recallwatch.ops.probes import load_probes
    from recallwatch.ops.reindex import reindex as run

    probe_set = load_probes(probes_file)
    vs = open_store(store)
    hist = recording_history(history, no_history)
    try:
        with exact_search(engine, address, workers) as exact:
            result = run(vs, probe_set, k=k, floor=floor, history=hist, exact=exact,
                         max_recall_loss=max_recall_loss)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    if fmt is TableJson.json:
        emit_json(result.to_dict())
    else:
        emit(f"reindex {result.store}: {result.reason}\n"
             f"  recall@{k} vs exact: live {result.recall_before:.3f} → new "
             f"{result.recall_candidate:.3f}; version {result.built_on_version} → "
             f"{result.version}\n  build {result.build_seconds:.1f} s, verify "
             f"{result.verify_seconds:.1f} s, "
             f"{'switch' if result.switched else 'dropping the copy'} "
             f"{result.switch_seconds:.2f} s")
    raise typer.Exit(0 if result.switched else 1)


def rollback(
    store: StoreURI,
    history: HistoryPath = DEFAULT_HISTORY,
    no_history: NoHistory = False,
) -> None:
    """Put back the index the last reindex replaced (one atomic commit on LanceDB; on the other
    adapters production moves back to the previous version, which was kept)."""
    from recallwatch.ops.reindex import rollback as run

    vs = open_store(store)
    hist = recording_history(history, no_history)
    try:
        done = run(vs, history=hist)
    finally:
        vs.close()
        if hist is not None:
            hist.close()
    emit(f"rolled back {done['store']}: previous index restored at version {done['version']}")


def register(app: typer.Typer) -> None:
    app.command("reindex")(reindex)
    app.command("rollback")(rollback)
