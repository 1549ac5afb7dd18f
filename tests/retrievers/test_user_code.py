"""User code in a pipeline cannot forge a verdict: ``sys.exit`` in a ``python:`` retriever or
reranker (at import, while it is built, during a search) is exit 2 with a located error, never
the exit code it asked for; what it prints goes to standard error, so ``--format json`` stays one
JSON object; a retriever that never returns stops the gate after its timeout, and the process
really ends (checked on the console command, in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.clirun import cli

ROOT = Path(__file__).resolve().parents[2]

GOLDEN = """\
name: g
version: "1"
top_k: 2
queries:
  - {id: q1, text: holidays per year, expected: [vac]}
  - {id: q2, text: monthly salary, expected: [sal]}
  - {id: q3, text: weekly hours, expected: [jor]}
"""

ANSWERS = """
ANSWERS = {"holidays per year": ["vac", "sal"], "monthly salary": ["sal", "jor"],
           "weekly hours": ["jor", "vac"]}


def answer(query, k):
    return [(cid, 1.0 / rank) for rank, cid in enumerate(ANSWERS[query][:k], 1)]
"""


def folder(tmp: Path, module: str, code: str, pipeline: str) -> Path:
    (tmp / "golden.yaml").write_text(GOLDEN, encoding="utf-8")
    (tmp / f"{module}.py").write_text(ANSWERS + textwrap.dedent(code), encoding="utf-8")
    (tmp / "pipeline.yaml").write_text(pipeline.format(m=module), encoding="utf-8")
    return tmp


def gate(tmp: Path, *extra: str) -> tuple[int, str, str]:
    return cli("gate", str(tmp / "golden.yaml"), "--pipeline", str(tmp / "pipeline.yaml"),
               "--no-history", *extra)


ONE = "retrievers:\n  mine: python:{m}:search\n"
MUST = ("it must return its results, never end the program (the exit code is recallwatch's to "
        "set)")


@pytest.mark.parametrize(("code", "said"), [
    ("import sys\n\ndef search(q, k):\n    if q == 'weekly hours':\n        sys.exit(0)\n"
     "    return answer(q, k)\n", "called sys.exit(0) on query 'weekly hours'"),
    ("import sys\n\ndef search(q, k):\n    raise SystemExit(5)\n",
     "called sys.exit(5) on query 'holidays per year'"),
    ("import sys\nsys.exit(0)\n", "called sys.exit(0) while importing module '{m}'"),
    ("import sys\n\nclass Search:\n    def __init__(self):\n        sys.exit(1)\n",
     "called sys.exit(1) while building the retriever (python:{m}:Search())"),
])
def test_sys_exit_in_a_retriever_is_a_located_error_with_exit_2(tmp_path: Path, code: str,
                                                                said: str) -> None:
    module = f"exits_{abs(hash(code))}"
    attr = "Search" if "class Search" in code else "search"
    folder(tmp_path, module, code, ONE.replace(":search", f":{attr}"))
    exit_code, out, err = gate(tmp_path, "--format", "json")
    assert (exit_code, out) == (2, "")
    assert err == (f"Error: retriever 'mine' (python:{module}:{attr}) "
                   f"{said.format(m=module)}: {MUST}\n")


def test_sys_exit_in_a_reranker_is_a_located_error_with_exit_2(tmp_path: Path) -> None:
    code = "import sys\n\ndef search(q, k):\n    return answer(q, k)\n\n" \
           "def rerank(q, docs):\n    sys.exit(0)\n"
    folder(tmp_path, "rerank_exits", code,
           ONE + "rerank: {{python: '{m}:rerank', corpus: corpus.jsonl}}\n")
    (tmp_path / "corpus.jsonl").write_text("".join(
        json.dumps({"id": c, "text": c}) + "\n" for c in ("vac", "sal", "jor")), encoding="utf-8")
    exit_code, out, err = gate(tmp_path)
    assert (exit_code, out) == (2, "")
    assert err == ("Error: reranker python:rerank_exits:rerank called sys.exit(0) on query "
                   "'holidays per year': it must return its scores, never end the program (the "
                   "exit code is recallwatch's to set)\n")


def test_prints_go_to_stderr_and_the_json_report_stays_whole(tmp_path: Path) -> None:
    code = "print('loading the index')\n\ndef search(q, k):\n    print('searching', q)\n" \
           "    return answer(q, k)\n"
    folder(tmp_path, "prints", code, ONE)
    exit_code, out, err = gate(tmp_path, "--format", "json")
    assert exit_code == 0, err
    assert json.loads(out)["verdict"] == "ACCEPT"
    assert err.splitlines()[:4] == ["loading the index", "searching holidays per year",
                                    "searching monthly salary", "searching weekly hours"]


@pytest.mark.parametrize(("code", "during"), [
    ("import threading\n\ndef search(q, k):\n    threading.Event().wait()\n",
     "on query 'holidays per year'"),
    ("import threading\nthreading.Event().wait()\n\ndef search(q, k):\n    return []\n",
     "while importing module 'hangs'"),
])
def test_a_retriever_that_never_returns_stops_the_command_after_its_timeout(
        tmp_path: Path, code: str, during: str) -> None:
    folder(tmp_path, "hangs", code,
           "retrievers:\n  mine: {{spec: 'python:{m}:search', timeout: 0.2}}\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # the subprocess's own timeout only keeps a broken build from hanging the suite
    done = subprocess.run(
        [sys.executable, "-m", "recallwatch", "gate", "golden.yaml", "--pipeline",
         "pipeline.yaml", "--no-history", "--format", "json"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    # an error during a search names the pipeline file first, as every retriever error does
    where = "pipeline pipeline.yaml: " if during.startswith("on query") else ""
    assert done.stderr == (
        f"Error: {where}retriever 'mine' (python:hangs:search) did not return {during} within "
        "0.2 s, "
        "its timeout; it was left running and nothing more was asked of it. If it needs "
        "longer, raise its timeout (seconds; 60 unless set) in the pipeline file: retrievers: "
        "{mine: {spec: python:hangs:search, timeout: SECONDS}}\n")
