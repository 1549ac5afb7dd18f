"""`recallwatch … | head`: a reader that goes away before it has taken the whole output makes
every command, in every output format, exit 141 (as the shell reports a program that SIGPIPE
ended) with nothing on stderr; a reader that takes it all leaves the command's own code.

Real processes and real pipes: one driver process imports recallwatch once and forks a child per
command, whose standard output is a pipe that the test closes (before the command writes, or
after reading 10 bytes, as ``head -c 10`` does).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from recallwatch.formats.trec import write_qrels
from recallwatch.online.simulate import (
    make_collection,
    simulate_ab_log,
    simulate_interleaved_log,
    simulate_log,
)
from tests.cli.test_history import _golden, _results
from tests.clirun import cli
from tests.online.test_cli import write_jsonl

ROOT = Path(__file__).resolve().parents[2]

_DRIVER = textwrap.dedent('''
    import json, os, sys
    import numpy, pyarrow, yaml, rich, scipy.stats  # imported once, shared by every child
    import recallwatch._process
    from recallwatch.cli import main

    recallwatch._process.DRAIN_WAIT = 600.0  # the test decides when the reader leaves
    reader, commands, errdir = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    codes = []
    for i, args in enumerate(commands):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.dup2(w, 1)
            os.close(w)
            err = os.open(os.path.join(errdir, f"{i}.txt"), os.O_WRONLY | os.O_CREAT)
            os.dup2(err, 2)
            sys.argv = ["recallwatch", *args]
            main()
        os.close(w)
        if reader == "gone":
            os.close(r)  # no reader left: the command's first write finds none
        elif reader == "head":
            os.read(r, 10)
        elif reader == "all":
            while os.read(r, 65536):
                pass
        if reader != "gone":
            os.close(r)
        codes.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    print(json.dumps(codes))
''')


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """Every command that prints from files alone, in each of its output formats."""
    d = tmp_path_factory.mktemp("pipes")
    golden = _golden(d)
    ok, bad = _results(d, "ok", set()), _results(d, "bad", {3, 8})
    history = str(d / "h.db")
    gate = ["gate", str(golden), "--policy", str(d / "policy.yaml")]
    assert cli(*gate, "--results", str(ok), "--history", history)[0] == 0
    assert cli(*gate, "--results", str(bad), "--history", history)[0] == 1
    col = make_collection(20, 10, seed=7, bias_scale=3.0)
    weak, strong = col.ranking(2.5, seed=1), col.ranking(0.3, seed=2)
    pairs = [(q, doc, g) for q, docs in col.qrels().items() for doc, g in docs.items()]
    qrels = d / "h.qrels"
    write_qrels(qrels, [p[0] for p in pairs], [p[1] for p in pairs], [p[2] for p in pairs])
    runs = []
    for name, ranking in (("weak", weak), ("strong", strong)):
        path = d / f"{name}.run"
        path.write_text("".join(f"{col.query_id(q)} Q0 {col.doc_id(q, int(j))} {r + 1} "
                                f"{100 - r} {name}\n" for q, row in enumerate(ranking)
                                for r, j in enumerate(row)))
        runs.append(str(path))
    clicks = write_jsonl(d / "clicks.jsonl", simulate_log(col, 800, seed=8))
    ab = write_jsonl(d / "ab.jsonl", simulate_ab_log(col, weak, strong, 400, seed=9))
    il = write_jsonl(d / "il.jsonl", simulate_interleaved_log(col, weak, strong, 400, seed=10))
    out: dict[str, list[str]] = {}
    for fmt in ("table", "json", "markdown"):
        out[f"gate accept {fmt}"] = [*gate, "--results", str(ok), "--no-history",
                                     "--format", fmt]
        out[f"gate stop {fmt}"] = [*gate, "--results", str(bad), "--no-history", "--format", fmt]
    for fmt in ("table", "json", "tsv"):
        out[f"eval {fmt}"] = ["eval", str(qrels), runs[0], "-m", "nDCG@10", "-m", "RR",
                              "--per-query", "--format", fmt]
    for fmt in ("table", "json"):
        out[f"compare {fmt}"] = ["compare", str(qrels), *runs, "-m", "RR", "--format", fmt]
        for words in (["history", "list"], ["history", "show", "latest"],
                      ["history", "compare", "previous", "latest"], ["history", "trend"]):
            out[f"{' '.join(words)} {fmt}"] = [*words, "--history", history, "--format", fmt]
        out[f"online clicks {fmt}"] = ["online", "clicks", str(clicks), "--format", fmt]
        out[f"online ab {fmt}"] = ["online", "ab", str(ab), "--format", fmt]
        out[f"online interleave {fmt}"] = ["online", "interleave", str(il), "--format", fmt]
    out["groups"] = ["history", "groups", "latest", "--by", "domain", "--history", history]
    out["help"] = ["history", "--help"]
    out["usage error"] = ["gate", "--results"]  # click's own message, on stderr
    return out


def _run(reader: str, commands: dict[str, list[str]], tmp_path: Path) -> dict[str, int]:
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, reader, json.dumps(list(commands.values())),
         str(tmp_path)], capture_output=True, text=True, timeout=900, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "COLUMNS": "120"})
    assert proc.returncode == 0, proc.stderr
    for i, name in enumerate(commands):
        err = (tmp_path / f"{i}.txt").read_text(encoding="utf-8")
        assert "Internal error" not in err and "Traceback" not in err, (name, err)
    return dict(zip(commands, json.loads(proc.stdout), strict=True))


@pytest.mark.parametrize("which", [  # every command: over two minutes on a loaded machine
    "gate", pytest.param("", marks=pytest.mark.slow, id="every command")])
def test_a_reader_gone_before_the_output_ends_every_command_with_141(
        commands: dict[str, list[str]], tmp_path: Path, which: str) -> None:
    printing = {k: v for k, v in commands.items() if k != "usage error" and k.startswith(which)}
    assert _run("gone", printing, tmp_path) == dict.fromkeys(printing, 141)


@pytest.mark.parametrize("which", [
    "gate", pytest.param("", marks=pytest.mark.slow, id="every command")])
def test_a_reader_that_takes_10_bytes_and_leaves_ends_every_command_with_141(
        commands: dict[str, list[str]], tmp_path: Path, which: str) -> None:
    printing = {k: v for k, v in commands.items() if k != "usage error" and k.startswith(which)}
    assert _run("head", printing, tmp_path) == dict.fromkeys(printing, 141)


@pytest.mark.slow
def test_a_reader_that_takes_everything_leaves_the_command_s_code(
        commands: dict[str, list[str]], tmp_path: Path) -> None:
    codes = _run("all", commands, tmp_path)
    assert codes == {k: 1 if k.startswith("gate stop") else 2 if k == "usage error" else 0
                     for k in commands}


def test_a_reader_that_takes_everything_leaves_the_gate_s_code(
        commands: dict[str, list[str]], tmp_path: Path) -> None:
    gates = {k: v for k, v in commands.items() if k.startswith("gate")}
    assert _run("all", gates, tmp_path) == {k: 1 if "stop" in k else 0 for k in gates}
