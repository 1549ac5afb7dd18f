"""`recallwatch experiment --engine ray`: the variants built and judged as Ray tasks on a local
Ray give the numbers of the single-process run."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan
from tests.experiment.test_experiment import VARIANTS
from tests.scale.conftest import local_ray

__all__ = ["local_ray"]  # the fixture, shared with the Ray engine's tests


@pytest.mark.slow  # a local Ray and two ingestions
def test_ray_gives_the_local_numbers(local_ray: ModuleType, tmp_path: Path) -> None:
    small_kb(tmp_path)
    write_plan(tmp_path, "{name: dense}", VARIANTS[:3])  # the reranker is left out
    results = {}
    for engine in ("local", "ray"):
        out = tmp_path / engine
        code, _, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir", str(out),
                              "--engine", engine)
        assert code == 0, stderr
        results[engine] = json.loads((out / "results.json").read_text(encoding="utf-8"))
    local, ray = results["local"], results["ray"]
    assert ray["cache"]["built"] == local["cache"]["built"]
    assert ray["winner"] == local["winner"]
    for a, b in zip(local["variants"], ray["variants"], strict=True):
        assert (a["name"], a["verdict"], a["metrics"], a["vs_base"], a["per_query"]) == (
            b["name"], b["verdict"], b["metrics"], b["vs_base"], b["per_query"])
