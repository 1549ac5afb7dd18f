"""The output folder of an experiment: one experiment at a time (an OS lock, gone with its
process, even a killed one), and another plan's results never replaced unless --force says so."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan

BM25 = "{name: bm25, retrieval: bm25}"
HOLDER = """\
import sys
from pathlib import Path
from recallwatch.experiment import load_plan
from recallwatch.experiment.folder import claim
with claim(Path(sys.argv[2]), load_plan(sys.argv[1])):
    print("holding", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    small_kb(tmp_path)
    return tmp_path


@pytest.fixture
def holder(kb: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process that holds kb/out as an experiment holds it."""
    plan = write_plan(kb, BM25, [])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(plan), str(kb / "out")],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                          env=env) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
        yield proc
        proc.kill()


def test_a_second_experiment_on_one_folder_names_the_one_running(
        kb: Path, holder: subprocess.Popen[str]) -> None:
    code, _, stderr = cli("experiment", str(kb / "plan.yaml"), "--out-dir", str(kb / "out"))
    assert code == 2
    assert stderr == (f"Error: another recallwatch experiment (pid {holder.pid}) is using "
                      f"{kb / 'out'}: wait for it to finish, or give another --out-dir (two "
                      "experiments writing one folder would mix their builds and results)\n")
    assert not (kb / "out" / "cache").exists()  # refused before anything was built


def test_a_killed_experiment_leaves_no_lock_behind(kb: Path,
                                                   holder: subprocess.Popen[str]) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    assert (kb / "out" / ".experiment.lock").read_text(encoding="utf-8") == f"{holder.pid}\n"
    code, _, stderr = cli("experiment", str(kb / "plan.yaml"), "--out-dir", str(kb / "out"))
    assert code == 0, stderr
    assert (kb / "out" / "results.json").is_file()


def test_another_plans_results_are_replaced_only_with_force(kb: Path) -> None:
    first = write_plan(kb, BM25, [])
    code, _, stderr = cli("experiment", str(first), "--out-dir", str(kb / "out"))
    assert code == 0, stderr
    other = kb / "other.yaml"
    other.write_text(first.read_text(encoding="utf-8").replace("name: bm25", "name: keyword"),
                     encoding="utf-8")
    before = (kb / "out" / "results.json").read_bytes()
    code, _, stderr = cli("experiment", str(other), "--out-dir", str(kb / "out"))
    assert code == 2
    assert stderr == (f"Error: {kb / 'out'} holds the results of another experiment: plan "
                      f"{first.resolve()}, 1 variant(s), winner bm25 (give another --out-dir, or "
                      f"--force to replace them with the results of {other}; the cache of built "
                      "variants is kept and reused)\n")
    assert (kb / "out" / "results.json").read_bytes() == before
    code, _, stderr = cli("experiment", str(other), "--out-dir", str(kb / "out"), "--force")
    assert code == 0, stderr
    results = json.loads((kb / "out" / "results.json").read_text(encoding="utf-8"))
    assert results["plan_path"] == str(other.resolve()) and results["winner"] == "keyword"
    assert results["cache"]["reused"]["corpus"] == ["keyword"]  # the same chunks, kept


def test_a_rerun_of_the_same_plan_file_replaces_its_results(kb: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    plan = write_plan(kb, BM25, [])
    assert cli("experiment", str(plan), "--out-dir", str(kb / "out"))[0] == 0
    plan.write_text(plan.read_text(encoding="utf-8") + "  - {name: sentences, chunking: "
                    "{method: sentences, size: 200}}\n", encoding="utf-8")
    monkeypatch.chdir(kb)  # the same file, named from elsewhere
    code, _, stderr = cli("experiment", "plan.yaml", "--out-dir", "out")
    assert code == 0, stderr
    results = json.loads((kb / "out" / "results.json").read_text(encoding="utf-8"))
    assert [v["name"] for v in results["variants"]] == ["bm25", "sentences"]
    assert results["cache"]["reused"]["corpus"] == ["bm25"]


def test_results_of_an_earlier_version_are_told_apart_by_the_plan_typed(
        kb: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """results.json written before it recorded plan_path: "plan" is the path as typed."""
    plan = write_plan(kb, BM25, [])
    assert cli("experiment", str(plan), "--out-dir", str(kb / "out"))[0] == 0
    results = kb / "out" / "results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    del data["plan_path"]
    data["plan"] = "plan.yaml"  # typed in kb, the output folder's parent
    results.write_text(json.dumps(data), encoding="utf-8")
    assert cli("experiment", str(plan), "--out-dir", str(kb / "out"))[0] == 0
    data["plan"] = "elsewhere/plan.yaml"
    results.write_text(json.dumps(data), encoding="utf-8")
    code, _, stderr = cli("experiment", str(plan), "--out-dir", str(kb / "out"))
    assert code == 2 and "holds the results of another experiment: plan elsewhere/plan.yaml" \
        in stderr


def test_a_results_file_that_is_not_an_experiments_is_not_replaced(kb: Path) -> None:
    plan = write_plan(kb, BM25, [])
    (kb / "out").mkdir()
    (kb / "out" / "results.json").write_text('{"mine": true}\n', encoding="utf-8")
    code, _, stderr = cli("experiment", str(plan), "--out-dir", str(kb / "out"))
    assert code == 2
    assert stderr == (f"Error: {kb / 'out' / 'results.json'} is not the results of an "
                      "experiment (not JSON with the schema recallwatch.experiment/…): give "
                      "another --out-dir, or --force to replace it\n")
    assert (kb / "out" / "results.json").read_text(encoding="utf-8") == '{"mine": true}\n'
