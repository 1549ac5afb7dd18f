"""``recallwatch groups``: a gate run's metric by group (domain, tags, language…), with the gaps.

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
    TableJson,
    TableJsonFormat,
)

if TYPE_CHECKING:
    from recallwatch.suite.model import GateResult


def groups(
    run: Annotated[str, typer.Argument(
        help="A run id (or latest, accepted…) from the history, or a gate report JSON file.")],
    by: Annotated[str, typer.Option(
        "--by", help="Golden field: domain, tags, language, source…")],
    metric: Annotated[str, typer.Option(
        "--metric", help="Per-query value compared across groups: quality, recall, precision, "
        "rr, ndcg, noise or passed.")] = "quality",
    golden: GoldenOption = None,
    policy: PolicyFile = None,
    history: HistoryPath = DEFAULT_HISTORY,
    fmt: TableJsonFormat = TableJson.table,
) -> None:
    """A metric of a gate run by group, with each group's gap to the overall mean and a
    bootstrap 95 % interval of the gap. Fields other than domain and tags are read from
    --golden; with --policy, groups below its min_group_quality are flagged."""
    from recallwatch.formats.golden import load_golden
    from recallwatch.formats.policy import load_policy
    from recallwatch.ops.groups import group_gaps

    result = _load_run(run, history)
    minimum = load_policy(policy).min_group_quality if policy is not None else None
    rep = group_gaps(result, by, metric,  # type: ignore[arg-type]
                     golden=None if golden is None else load_golden(golden), minimum=minimum)
    if fmt is TableJson.json:
        emit_json(rep.to_dict())
        return
    lines = [f"{rep.metric} by {rep.field} — run {rep.run_id}: overall {rep.overall:.3f} over "
             f"{rep.n} queries",
             f"{'group':<24} {'n':>4} {'mean':>9} {'gap':>9}  {'95% CI of gap':<22}"]
    for g in rep.groups:
        flag = f"  BELOW min_group_quality {rep.minimum:g}" if g.below_min else ""
        lines.append(f"{g.group[:24]:<24} {g.n:>4} {g.mean:>9.3f} {g.gap:>+9.3f}  "
                     f"[{g.ci_low:+.3f}, {g.ci_high:+.3f}]{flag}")
    emit("\n".join(lines))


def _load_run(ref: str, history: str) -> GateResult:
    from recallwatch.errors import InputError
    from recallwatch.suite.model import GateResult

    path = Path(ref)
    if path.suffix.lower() == ".json" or path.is_file():
        try:
            return GateResult.from_dict(json.loads(path.read_text(encoding="utf-8")))
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
