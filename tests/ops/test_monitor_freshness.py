"""The monitor's freshness on a small LanceDB store whose vectors are placed by hand, so that the
answer is known without running the code under test.

Two probes, k = 3, as of 2025-06-01. Probe 1 (axis e0) reaches document ``smi``: s2024 (on e0,
score 1) above s2025 (e0 + 0.3 e1, score 0.958): an older version above the newest: stale.
Probe 2 (axis e2) reaches ``tarifa``: t2025 (on e2) above t2024 (expired 2024-12-31): fresh.
The third result of each is an undated filler (0.2 e0 + 0.2 e2 + its own axis: score 0.19,
above the other document's chunks, which score 0). Freshness 1/2. Valid dated results' ages:
s2024 517 days, s2025 151, t2025 151: median 151, oldest 517; t2024 expired; 2 undated.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from recallwatch.cli import app
from recallwatch.embedders.base import FINGERPRINT_META_KEY, Fingerprint
from recallwatch.ops.monitor import run_monitor
from recallwatch.ops.probes import ProbeSet
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore

DIM = 16
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)


def _unit(*parts: tuple[int, float]) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    for axis, weight in parts:
        v[axis] += weight
    return v / np.linalg.norm(v)


def _store(path: Path, dated: bool = True) -> LanceStore:
    def day(text: str) -> date | None:
        return date.fromisoformat(text) if dated else None

    chunks = [Chunk(id="s2024", text="smi 2024", doc_id="smi", valid_from=day("2024-01-01")),
              Chunk(id="s2025", text="smi 2025", doc_id="smi", valid_from=day("2025-01-01")),
              Chunk(id="t2024", text="tarifa 2024", doc_id="tarifa",
                    valid_from=day("2024-01-01"), valid_to=day("2024-12-31")),
              Chunk(id="t2025", text="tarifa 2025", doc_id="tarifa",
                    valid_from=day("2025-01-01"))]
    vectors = [_unit((0, 1.0)), _unit((0, 1.0), (1, 0.3)), _unit((2, 1.0), (3, 0.3)),
               _unit((2, 1.0))]
    for i in range(4, DIM):
        chunks.append(Chunk(id=f"filler{i}", text=f"filler {i}"))
        vectors.append(_unit((0, 0.2), (2, 0.2), (i, 1.0)))
    store = LanceStore.open(f"lancedb://{path}?table=t&index_threshold=1000000", create=True)
    store.upsert(chunks, np.asarray(vectors, dtype=np.float32))
    store.set_meta(FINGERPRINT_META_KEY, Fingerprint("toy", "1", DIM, "a" * 64).to_dict())
    return store


PROBES = ProbeSet("p", "1", vectors=np.asarray([_unit((0, 1.0)), _unit((2, 1.0))]))


def test_freshness_of_the_probes_is_the_hand_computed_share(tmp_path: Path) -> None:
    report = run_monitor(_store(tmp_path / "s"), PROBES, k=3, floor=0.0, now=NOW,
                         min_freshness=0.6)
    f = report.freshness or {}
    assert (f["scope"], f["queries"], f["fresh"], f["share"]) == ("top_k", 2, 1, 0.5)
    assert [s["query"] for s in f["stale"]] == ["probe 1"]
    r = f["results"]
    assert (r["median_age_days"], r["oldest_age_days"]) == (151, 517)
    assert (r["valid"], r["expired"], r["undated"]) == (3, 1, 2)
    assert report.thresholds["min_freshness"] == 0.6
    [alarm] = report.alarms
    assert alarm.startswith(
        "freshness 0.500 is under the minimum 0.6: 1 of 2 probes reaching a document with dated "
        "versions rank an older version above the newest valid one (as of 2025-06-01), e.g. "
        "probe 1: document smi: older version s2024 (valid from 2024-01-01) at rank 1, the "
        "newest version (valid from 2025-01-01) s2025 at rank 2")


def test_at_or_under_the_share_no_alarm(tmp_path: Path) -> None:
    report = run_monitor(_store(tmp_path / "s"), PROBES, k=3, floor=0.0, now=NOW,
                         min_freshness=0.5)
    assert report.alarms == ()


def test_without_dates_freshness_is_not_measured_and_never_alarms(tmp_path: Path) -> None:
    report = run_monitor(_store(tmp_path / "s", dated=False), PROBES, k=3, floor=0.0, now=NOW,
                         min_freshness=1.0)
    f = report.freshness or {}
    assert (f["measured"], f["share"], f["note"]) == (
        False, None, "no dated chunks: freshness not measured")
    assert report.alarms == ()


@pytest.mark.parametrize("given", [["--min-freshness", "0.6"], ["--policy", "policy.yaml"]])
def test_monitor_command_alarms_on_freshness(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             given: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    store = _store(tmp_path / "s")
    np.save("p.npy", np.asarray(PROBES.vectors))
    Path("policy.yaml").write_text("min_freshness: 0.6\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["ops", "monitor", "--store", store.uri, "--probes", "p.npy",
                                   "--k", "3", "--floor", "0", "--no-history", *given])
    assert out.exit_code == 1, out.output
    assert "  freshness          as of " in out.stdout and "(min 0.6)" in out.stdout
    [alarm] = [line for line in out.stdout.splitlines() if line.startswith("ALARM: ")]
    assert alarm.startswith("ALARM: freshness 0.500 is under the minimum 0.6: 1 of 2 probes")
