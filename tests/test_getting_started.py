"""docs/getting-started.md works as written: from 30 chunks and 8 questions to a calibrated,
explained ACCEPT.

Its ```sh commands run in order in an empty folder (the example's files under `examples/`), each
with the exit code its comment documents ("exit N") and the quoted words of that comment in its
output; a ```yaml block under `<!-- file: NAME -->` is the file NAME as the reader writes it, at
that point. The one command not run is the judging page, a server a person clicks through: the
test stands in for that person, grading the pooled pairs from a relevance list (the expected
chunks and the few other chunks that also answer a question), and writes what the page saves.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from recallwatch.formats.judging import read_queue
from tests.clirun import wide_cli as cli
from tests.test_readme import Step, _promised, readme_steps

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "getting-started.md"
EXAMPLE = ROOT / "examples" / "first-hour"
JUDGING_PAGE = "recallwatch label serve pool.jsonl --out judgments.jsonl"
# The person judging: besides each question's expected chunks, these also answer it.
ALSO_RELEVANT = {("carry_over", "leave_01"), ("parental_request", "parental_02")}


def _file_blocks(markdown: str) -> list[tuple[int, str, str]]:
    """(line, file name, text) of each fenced block under a `<!-- file: NAME -->` line."""
    lines = markdown.splitlines()
    out = []
    for i, line in enumerate(lines):
        named = re.fullmatch(r"<!-- file: (\S+) -->", line.strip())
        if named and i + 1 < len(lines) and lines[i + 1].startswith("```"):
            end = lines.index("```", i + 2)
            out.append((i + 2, named.group(1), "\n".join(lines[i + 2:end]) + "\n"))
    return out


TEXT = GUIDE.read_text(encoding="utf-8")
STEPS = [s for s in readme_steps(TEXT) if s.kind == "sh"]
FILES = _file_blocks(TEXT)


def _judge(folder: Path) -> None:
    """What the judging page saves, graded as the person described above would grade."""
    golden = {q["id"]: set(q["expected"]) for q in _golden_queries(folder / "golden.yaml")}
    records = [{"query_id": item.query_id, "id": item.id, "judge": "reader",
                "grade": int(item.id in golden[item.query_id]
                             or (item.query_id, item.id) in ALSO_RELEVANT)}
               for item in read_queue(folder / "pool.jsonl")]
    (folder / "judgments.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _golden_queries(path: Path) -> list[dict[str, object]]:
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return list(data["queries"])


def _run(step: Step, folder: Path) -> tuple[int, str]:
    words = step.words
    if words[0] == "recallwatch":
        code, out, err = cli(*words[1:])
        return code, out + err
    done = subprocess.run(["bash", "-c", step.text], cwd=folder, capture_output=True, text=True,
                          timeout=60, env={**os.environ})
    return done.returncode, done.stdout + done.stderr


def test_the_guide_has_its_steps() -> None:
    keys = [s.key for s in STEPS]
    assert JUDGING_PAGE in keys
    assert [name for _, name, _ in FILES] == ["golden.yaml", "policy.yaml"]
    commands = [s for s in STEPS if s.key != JUDGING_PAGE]
    assert all(s.exit_code is not None for s in commands), "a command without 'exit N'"
    assert all(shlex.split(s.text)[0] in ("recallwatch", "cp") for s in commands)


def test_the_guide_golden_set_is_the_example_file() -> None:
    (_, _, text), = [f for f in FILES if f[1] == "golden.yaml"]
    example = (EXAMPLE / "golden.yaml").read_text(encoding="utf-8")
    assert text in example  # the example file only adds a comment at its head


def test_from_thirty_chunks_and_eight_questions_to_a_calibrated_accept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "my handbook"  # not the checkout, and a space in its name
    home.mkdir()
    (home / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    monkeypatch.chdir(home)
    events = sorted([(s.line, "step", s) for s in STEPS] + [(n, "file", (name, text))
                                                             for n, name, text in FILES],
                    key=lambda e: e[0])
    failures, outputs = [], []
    for line, kind, item in events:
        if kind == "file":
            name, text = item  # type: ignore[misc]
            (home / name).write_text(text, encoding="utf-8")
            continue
        step: Step = item  # type: ignore[assignment]
        if step.key == JUDGING_PAGE:
            _judge(home)
            continue
        code, output = _run(step, home)
        outputs.append(output)
        flat = " ".join(output.split())
        missing = [p for p in _promised(step) if " ".join(p.split()) not in flat]
        if code != step.exit_code or missing:
            failures.append(f"getting-started.md:{line}: {step.key}\n  exit {code}, documented "
                            f"{step.exit_code}; not in the output: {missing}\n"
                            f"  output: {output[-2500:]}")
    assert not failures, "\n\n".join(failures)
    # the last gate is the calibrated ACCEPT, with the noise rule measured on every query
    last = " ".join(outputs[-1].split())
    assert "ACCEPT" in last and "noise rule not measured" not in last
