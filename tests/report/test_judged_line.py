"""judged@K in the summary of the Markdown and terminal reports, when the gate was given
judgments; absent otherwise."""

from __future__ import annotations

import io

from rich.console import Console

from recallwatch.acceptance.judged import with_judged
from recallwatch.acceptance.model import GateResult
from recallwatch.report.markdown import to_markdown
from recallwatch.report.terminal import render
from tests.report import helpers as H


def terminal(result: GateResult) -> str:
    out = io.StringIO()
    Console(width=300, file=out, no_color=True).print(render(result))
    return out.getvalue()


def test_judged_line_in_the_summary() -> None:
    g = H.golden_set(4)
    run = H.gate_run(g)
    assert "judged@" not in to_markdown(run) and "judged@" not in terminal(run)
    # judge every result of the first query's top 10: 1 of 4 queries fully judged, the other
    # three hold their 2 expected chunks in 10 (20 %, under half: crowded)
    q0 = run.queries[0]
    judged = with_judged(run, {(q0.id, c) for c, _ in q0.top})
    md = to_markdown(judged)
    summary = md.split("### ")[0]  # before the first section: the summary
    line = next(ln for ln in summary.splitlines() if ln.startswith("judged@10"))
    assert line.startswith(f"judged@10 {(1 + 3 * 0.2) / 4:.2f} ")
    assert "3 of 4 queries with less than half of their top 10 judged" in line
    assert "judged@10 0.40" in terminal(judged)
