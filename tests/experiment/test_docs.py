"""docs/experiments.md is true: its plan is the example's plan file, which is the plan tested, and
its pasted output is what that plan gives (quality, verdicts, the choice; timings vary)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from recallwatch.experiment import load_plan
from tests.clirun import cli

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
PLAN = ROOT / "examples" / "kb" / "experiment.yaml"


def _rows(text: str) -> list[tuple[str, ...]]:
    """(variant, choice, verdict, quality, recall, nDCG, MRR) of each row of the table."""
    lines = text.split("\nvariant ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
    return [tuple(re.split(r"\s{2,}", line.strip())[:7]) for line in lines]


def test_the_docs_plan_is_the_example_plan() -> None:
    block = re.search(r"```yaml\n(.*?)```", DOC, flags=re.S)
    assert block is not None
    assert block.group(1) == PLAN.read_text(encoding="utf-8")
    plan = load_plan(PLAN)
    variants = plan.all()
    assert len(variants) >= 6 and len(PLAN.read_text(encoding="utf-8").splitlines()) <= 16
    chunkings = {None if v.chunking is None else v.chunking.method for v in variants}
    assert chunkings == {None, "sentences", "size"}
    for method in chunkings:
        assert {v.retrieval for v in variants if (v.chunking and v.chunking.method) == method
                and v.rerank is None} == {"dense", "bm25", "hybrid"}
    assert any(v.rerank is not None for v in variants)


@pytest.mark.slow  # three ingestions of the example and ten variants judged (about 2 minutes)
def test_the_docs_output_is_what_the_plan_gives(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The command exactly as written, from a folder that is not the checkout (with a space in
    its name), the example linked into it: the paths are relative to that folder."""
    home = tmp_path / "my experiments"
    home.mkdir()
    (home / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(home)
    command = "recallwatch experiment examples/kb/experiment.yaml --out-dir exp"
    assert f"```sh\n{command}\n```" in DOC
    code, stdout, stderr = cli(*command.split()[1:])
    assert code == 0, stderr
    shown = DOC.split("## The run", 1)[1].split("## The winner", 1)[0]
    assert _rows(stdout) == _rows(shown)
    results = json.loads((home / "exp" / "results.json").read_text(encoding="utf-8"))
    # the choice the doc shows: its winner and the evidence lines (tune, then test) as printed
    evidence = shown.split("\n\nwinner: ", 1)[1].split("\ndominated", 1)[0].splitlines()
    winner = evidence[0]
    assert results["chosen_on"] == "tune" and results["confirmed"] is True
    assert results["winner"] == winner != results["base"]
    assert len(evidence) == 3 and evidence[1].startswith(f"{winner} beat the base (")
    assert evidence[2].startswith("confirmed on the test queries: ")
    assert "\n".join(["winner: " + winner, *evidence[1:]]) in stdout
    assert f"**Here: `{winner}` wins.**" in DOC.split("## The winner", 1)[1]
    # the first run builds what the doc's sentence says it built (a line break may fall inside)
    for builds in ("corpus builds: 3 built, 7 from the cache",
                   "index builds: 3 built, 4 from the cache"):
        assert f"`{builds}`" in " ".join(shown.split()) and builds in stdout
