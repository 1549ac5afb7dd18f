"""Endless input: /dev/zero, a small gzip file that inflates to one 200 MB line, and a 64 GB plain
file of NUL bytes, given to every command that reads a user file. Each exits 2 with the located
error naming the cap, and the process's peak memory stays bounded: every command at the default
caps (marked slow: over a minute), and the TREC and golden set readers at caps of 1 MB with an
8 MB line (the default suite).

The commands run one after the other in one child process (the command line's import is paid
once), which reports its peak resident memory (its own high-water mark, VmHWM) after each; a
reader that read the input whole would grow until the child is killed by the timeout."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KB = ROOT / "examples" / "kb"
PEAK_BOUND_MB = 600  # the largest read allowed is a 128 MB whole file; the rest is the program
BOMB_MB = 200
SMALL_BOMB_MB = 8  # for the caps of 1 MB of the default suite's check

# The peak is this process's own high-water mark (VmHWM, kilobytes), not getrusage's ru_maxrss:
# Linux carries a parent's peak into a forked child, so ru_maxrss would report pytest's.
CHILD = """
import json, sys
from tests.clirun import cli

def peak_kb():
    with open("/proc/self/status", encoding="ascii") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))

out = []
for args in json.loads(sys.argv[1]):
    code, stdout, stderr = cli(*args)
    out.append([code, stdout + stderr, peak_kb()])
print(json.dumps(out))
"""


def _hostile(root: Path, bomb_mb: int) -> Path:
    """``zero.*``: /dev/zero under the names each reader expects; ``bomb.jsonl.gz``: one line of
    ``bomb_mb`` MB of spaces, a thousandth of it compressed; ``sparse.run``: a plain file on disk
    of 64 GB of NUL bytes that takes no disk space (a sparse file)."""
    for suffix in ("jsonl", "yaml", "json", "txt", "run"):
        (root / f"zero.{suffix}").symlink_to("/dev/zero")
    with gzip.GzipFile(root / "bomb.jsonl.gz", "wb", compresslevel=9, mtime=0) as fh:
        piece = b" " * (1 << 20)
        for _ in range(bomb_mb):
            fh.write(piece)
    assert (root / "bomb.jsonl.gz").stat().st_size < 1 << 20
    (root / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    (root / "run.txt").write_text("q1 Q0 d1 1 0.5 t\n", encoding="utf-8")
    with (root / "sparse.run").open("wb") as fh:
        fh.truncate(64 << 30)
    return root


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile(tmp_path_factory.mktemp("endless"), BOMB_MB)


@pytest.fixture(scope="module")
def hostile_small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _hostile(tmp_path_factory.mktemp("endless-small"), SMALL_BOMB_MB)


def commands(d: Path) -> list[list[str]]:
    zero, bomb, golden, corpus = (str(d / "zero.jsonl"), str(d / "bomb.jsonl.gz"),
                                  str(KB / "golden.yaml"), str(KB / "corpus_v1.jsonl"))
    out = str(d / "out")
    store = f"lancedb://{d / 'no-store'}?table=t"
    return [
        ["golden", "check", zero, "--corpus", corpus],
        ["golden", "check", str(d / "zero.yaml"), "--corpus", corpus],
        ["golden", "check", str(d / "zero.json"), "--corpus", corpus],
        ["golden", "check", golden, "--corpus", bomb],
        ["golden", "sample", bomb, "--out", out],
        ["golden", "sample", str(d / "zero.txt"), "--out", out],
        ["label", "export", zero, "--out", out],
        ["label", "export", bomb, "--out", out],
        ["label", "merge", golden, zero, "--out", out],
        ["label", "serve", zero, "--port", "0"],
        ["online", "clicks", bomb],
        ["online", "interleave", zero],
        ["online", "ab", bomb],
        ["ops", "monitor", "--store", store, "--probes", out, "--log", zero, "--no-history"],
        ["ops", "monitor", "--store", store, "--probes", out, "--log", bomb, "--no-history"],
        ["gate", golden, "--results", zero, "--no-history"],
        ["gate", golden, "--results", str(KB / "golden.yaml"), "--policy",
         str(d / "zero.yaml"), "--no-history"],
        ["eval", "-m", "P@10", bomb, str(d / "zero.run")],
        ["eval", "-m", "P@10", str(d / "qrels.txt"), "/dev/zero"],
        ["eval", "-m", "P@10", str(d / "qrels.txt"), str(d / "sparse.run")],
        ["compare", "-m", "P@10", str(d / "zero.run"), str(d / "run.txt"), str(d / "run.txt")],
        ["compare", "-m", "P@10", str(d / "qrels.txt"), str(d / "run.txt"), "/dev/zero"],
        ["compare", "-m", "P@10", str(d / "qrels.txt"), bomb, str(d / "run.txt")],
        ["compare", "-m", "P@10", str(d / "qrels.txt"), str(d / "run.txt"), str(d / "sparse.run")],
    ]


def _run_each(root: Path, line_mb: str | None, file_mb: str | None,
              first_words: tuple[str, ...] | None = None) -> None:
    """The commands of :func:`commands` (those whose name is one of ``first_words``, or all) on
    the files in ``root``, with these caps (None: the default): each exits 2 with the located
    error naming its cap, within bounded memory."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RECALLWATCH_MAX_LINE_MB", "RECALLWATCH_MAX_FILE_MB")}
    env.update({name: mb for name, mb in (("RECALLWATCH_MAX_LINE_MB", line_mb),
                                          ("RECALLWATCH_MAX_FILE_MB", file_mb)) if mb})
    cmds = [c for c in commands(root) if first_words is None or c[0] in first_words]
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cmds)], cwd=root,
                           env={**env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                           text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    results = json.loads(child.stdout)
    line_cap, file_cap = f"{line_mb or 16} MB", f"{file_mb or 128} MB"
    for args, (code, output, _) in zip(cmds, results, strict=True):
        assert code == 2, (args, output)
        assert "Traceback" not in output, (args, output)
        line = output.strip().splitlines()[-1]
        assert line.startswith("Error: "), (args, output)
        if any(a.endswith(("zero.yaml", "zero.json")) for a in args):
            assert f": expected a file of at most {file_cap}, found <more than {file_cap}> " \
                   "(set RECALLWATCH_MAX_FILE_MB to raise the limit)" in line, (args, line)
        else:
            assert f":1: expected a line of at most {line_cap}, found <a longer line: more " \
                   f"than {line_cap} without a line break>" in line, (args, line)
            assert "set RECALLWATCH_MAX_LINE_MB to raise the limit" in line
    peak_mb = max(rss for _, _, rss in results) / 1024  # Linux reports kilobytes
    assert peak_mb < PEAK_BOUND_MB, [(a, r // 1024) for a, (_, _, r) in zip(cmds, results)]


@pytest.mark.slow
def test_endless_input_is_refused_at_a_cap_with_bounded_memory(hostile: Path) -> None:
    _run_each(hostile, None, None)


def test_endless_trec_and_golden_input_is_refused_at_caps_of_one_megabyte(
        hostile_small: Path) -> None:
    # the default suite's check: the TREC readers (eval, compare) and the golden set readers
    # (JSON Lines, YAML and JSON) on the same files, at smaller caps
    _run_each(hostile_small, "1", "1", ("eval", "compare", "golden"))
