"""pytest plugin (entry point ``pytest11``): run an acceptance gate inside a test.

    def test_knowledge_base_is_deployable(recallwatch_gate):
        result = recallwatch_gate("golden.yaml", store="lancedb://kb?table=chunks",
                                  policy="policy.yaml")
        assert result.aggregate.mean_recall > 0.9   # optional extra checks

On STOP the test fails with the verdict's reasons and the diagnosis of each failing query.
``--recallwatch-store URI`` overrides the store of every gate in the session (point the same tests
at a candidate index in CI); ``--recallwatch-report DIR`` writes the reports there.
This module imports nothing heavy: it is loaded by every pytest run where recallwatch is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult

__all__ = ["failure_message", "recallwatch_gate"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("recallwatch", "retrieval acceptance gate")
    group.addoption("--recallwatch-store", default=None,
                    help="Store URI that every recallwatch_gate call examines.")
    group.addoption("--recallwatch-report", default=None,
                    help="Directory where each gate writes its report set (report.json, "
                    "report.md, junit.xml, report.html) into a folder named after the test.")


def failure_message(result: GateResult) -> str:
    lines = [f"recallwatch gate: {result.verdict} (dataset {result.dataset['name']} "
             f"v{result.dataset['version']}, mean quality {result.aggregate.mean_quality:.1f})"]
    lines += [f"  [{r.rule}] {r.message}" for r in result.reasons]
    for q in result.failing():
        lines.append(f"  {q.id}: recall {q.recall:.3f}, quality {q.quality:.0f}, noise "
                     f"{q.noise}/{q.allowed_noise} ({','.join(q.failed_rules)})")
        lines += [f"      {d.line()}" for d in q.diagnosis]
    from recallwatch.report import visible

    return visible("\n".join(lines))


@pytest.fixture
def recallwatch_gate(request: pytest.FixtureRequest) -> Callable[..., GateResult]:
    """A function that runs a gate and fails the test on STOP; returns the result on ACCEPT."""

    def run(golden: str | Path, *, store: str | None = None, results: str | Path | None = None,
            policy: str | Path | None = None, embedder: str | None = None,
            **options: Any) -> GateResult:
        from recallwatch.acceptance.run import SourceSpec, gate

        if store is None and results is None and not request.config.getoption(
                "--recallwatch-store"):
            raise pytest.UsageError("recallwatch_gate needs store= or results=")
        store = request.config.getoption("--recallwatch-store") or store
        source = SourceSpec("store", store) if store else SourceSpec("results", str(results))
        result = gate(golden, source, policy, embedder=embedder, **options)
        report_dir = request.config.getoption("--recallwatch-report")
        if report_dir:
            from recallwatch.errors import RecallwatchError
            from recallwatch.report import write_report_set

            try:
                write_report_set(result, Path(report_dir) / request.node.name,
                                 "--recallwatch-report")
            except RecallwatchError as exc:
                pytest.fail(f"recallwatch gate: {exc}", pytrace=False)
        if result.verdict != "ACCEPT":
            pytest.fail(failure_message(result), pytrace=False)
        return result

    return run
