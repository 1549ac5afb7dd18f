"""``recallwatch ops promote``: mark an index version as production, only on an ACCEPTed gate run.

Promotion changes the store, so it sits with the other operations; the history only supplies
the evidence. Exit codes: 0 promoted, 1 refused, 2 usage or input error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from recallwatch.cli._common import emit, emit_json, open_store
from recallwatch.cli._options import (
    DEFAULT_HISTORY,
    GoldenOption,
    HistoryPath,
    PolicyFile,
    StoreURI,
    TableJson,
    TableJsonFormat,
)


def promote_cmd(
    store: StoreURI,
    version: Annotated[str | None, typer.Option(
        "--index-version", help="Index version to promote (default: the store's current "
        "version).")] = None,
    golden: GoldenOption = None,
    policy: PolicyFile = None,
    history: HistoryPath = DEFAULT_HISTORY,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """Mark an index version as production, only if an ACCEPTed gate run of the current golden
    set and policy exists on exactly that version and its ingestion left nothing unresolved.

    The current golden set and policy are --golden and --policy; without --golden, those of the
    latest gate run on this store; with --golden but no --policy, the default thresholds.

    Exit codes: 0 promoted, 1 refused (every missing condition is named), 2 usage or input error.
    """
    from recallwatch.history import History
    from recallwatch.ops.promote import PromoteDecision, promote

    dataset_hash = policy_hash = None
    if golden is not None:
        from recallwatch.formats.golden import load_golden
        from recallwatch.formats.policy import load_policy

        dataset_hash = load_golden(golden).hash
        policy_hash = load_policy(policy).hash
    elif policy is not None:
        from recallwatch.formats.policy import load_policy

        policy_hash = load_policy(policy).hash
    vector_store = open_store(store)
    try:
        from recallwatch.history import is_postgresql

        if not is_postgresql(history) and not Path(history).exists():
            decision = PromoteDecision(
                vector_store.uri, version or vector_store.current_version(), dataset_hash or "",
                policy_hash or "", None,
                missing=(f"no run history at {history}: no ACCEPTed gate run can be found "
                         "(run the gate first, or name the file with --history)",))
        else:
            with History(history) as h:
                decision = promote(h, vector_store, version=version, dataset_hash=dataset_hash,
                                   policy_hash=policy_hash)
    finally:
        vector_store.close()
    if fmt is TableJson.json:
        emit_json(decision.to_dict())
    else:
        from recallwatch.report import visible

        for note in decision.notes:
            emit(visible(f"note: {note}"))
        if decision.promoted:
            emit(visible(f"promoted {decision.store} version {decision.version} to production "
                         f"(ACCEPT run {decision.accepted_run})"))
        else:
            emit(visible(f"refused: {decision.store} version {decision.version} is not promoted"))
            for m in decision.missing:
                emit(visible(f"  missing: {m}"))
    if not decision.promoted:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("promote")(promote_cmd)
