"""Long commands show their progress on a terminal — what is being done, n of N, the time spent
and left — and nothing of it in a pipe or beside ``--format json``.

The terminal is a real pseudo-terminal given to the command as its stderr
(:mod:`tests.terminal`); ``gate`` embeds and searches a golden set larger than one embedding
batch, ``online clicks`` reads a log over a megabyte and fits a click model, ``bench`` measures
a sweep's configurations."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from recallwatch import _progress
from recallwatch.cli import _machine_output
from recallwatch.online.simulate import make_collection, simulate_log
from tests.clirun import cli, untimed
from tests.terminal import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "first-hour"
ESCAPE = "\x1b["


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's chunks in a store, and a golden set of 80 questions (more than one
    embedding batch of 64)."""
    import yaml

    folder = tmp_path_factory.mktemp("progress")
    code, _, err = cli("ingest", str(EXAMPLE / "chunks.jsonl"), "--store",
                       f"lancedb://{folder / 'db'}?table=chunks", "--no-history")
    assert code == 0, err
    golden = yaml.safe_load((EXAMPLE / "golden.yaml").read_text(encoding="utf-8"))
    queries = golden["queries"]
    golden["queries"] = [{**queries[i % len(queries)], "id": f"q{i}"} for i in range(80)]
    golden.pop("as_of", None)
    (folder / "golden.json").write_text(json.dumps(golden, default=str), encoding="utf-8")
    return folder


def _gate(kb: Path, *more: str, terminal: bool) -> tuple[int, str, str]:
    return run(["gate", "golden.json", "--store", "lancedb://db?table=chunks", "--no-history",
                *more], kb, terminal=terminal)


def test_gate_on_a_terminal_shows_the_embedding_and_the_search(kb: Path) -> None:
    code, stdout, stderr = _gate(kb, terminal=True)
    assert code in (0, 1), stderr
    assert "embedding queries (use-multilingual)" in stderr
    assert "searching lancedb://" in stderr and "(80 queries)" in stderr
    assert "0/80" in stderr  # n of N, drawn as the work starts
    assert "searching" not in stdout and ("ACCEPT" in stdout or "STOP" in stdout)


def test_gate_in_a_pipe_and_with_format_json_shows_nothing(kb: Path) -> None:
    code, stdout, stderr = _gate(kb, terminal=False)
    assert code in (0, 1)
    assert "embedding" not in stderr and "searching" not in stderr and ESCAPE not in stderr
    code, stdout, stderr = _gate(kb, "--format", "json", terminal=True)
    assert code in (0, 1), stderr
    assert "embedding" not in stderr and "searching" not in stderr and ESCAPE not in stderr
    assert len(json.loads(stdout)["queries"]) == 80


@pytest.fixture(scope="module")
def big_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("clicks")
    collection = make_collection(30, 10, seed=1)
    log = folder / "log.jsonl"
    with log.open("w", encoding="utf-8") as out:
        for impression in simulate_log(collection, 6000, seed=2):
            out.write(json.dumps(impression) + "\n")
    assert log.stat().st_size >= _progress.LARGE_FILE
    return folder


def test_online_clicks_shows_the_reading_and_the_fit_on_a_terminal_only(big_log: Path) -> None:
    args = ["online", "clicks", "log.jsonl", "--click-model", "pbm", "--prior", "none"]
    code, stdout, stderr = run(args, big_log, terminal=True)
    assert code == 0, stderr
    assert "reading log.jsonl" in stderr
    assert "fitting the click model (at most" in stderr
    code, piped_out, piped_err = run(args, big_log, terminal=False)
    assert code == 0 and piped_err == "" and untimed(piped_out) == untimed(stdout)


def test_bench_counts_the_configurations_on_a_terminal(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        "dataset:\n  synthetic: {n: 1500, dim: 16, topics: 10, queries: 30, seed: 2}\nk: 10\n"
        "timing: {warmup: 1}\nengines:\n  - engine: faiss-ivf\n    build: {nlist: 16}\n"
        "    query: {nprobe: [1, 4, 16]}\n", encoding="utf-8")
    code, _, stderr = run(["bench", "s.yaml", "--quiet"], tmp_path, terminal=True)
    assert code == 0, stderr
    assert "bench s: configurations measured" in stderr and "/3" in stderr
    assert "exact nearest neighbours of 30 queries in 1,500 vectors" in stderr
    code, _, stderr = run(["bench", "s.yaml", "--quiet"], tmp_path, terminal=False)
    assert code == 0 and stderr == ""


@pytest.mark.parametrize(("args", "machine"), [
    (["gate", "g.yaml", "--format", "json"], True),
    (["gate", "g.yaml", "--format=json"], True),
    (["eval", "q", "r", "-m", "P@5", "--format", "tsv"], True),
    (["gate", "g.yaml", "--format", "markdown"], False),
    (["gate", "g.yaml"], False),
    (["gate", "--format"], False),
])
def test_machine_readable_output_is_recognised_on_the_command_line(args: list[str],
                                                                   machine: bool) -> None:
    assert _machine_output(args) is machine


def test_a_bar_counts_its_own_work_so_what_runs_inside_it_draws_no_bar_of_its_own(
        monkeypatch: pytest.MonkeyPatch) -> None:
    token = _progress._WANTED.set(True)
    try:
        assert _progress.wanted()
        # an ingestion's own loop, drawn or not: the embedding inside it draws nothing
        with _progress.progress(10, "ingesting", enabled=False):
            assert not _progress.wanted()
        seen = []
        for _ in _progress.tracked(range(2), 2, "outer", enabled=False):
            seen.append(_progress.wanted())
        assert seen == [False, False] and _progress.wanted()
    finally:
        _progress._WANTED.reset(token)
    assert not _progress.wanted()  # outside a command: never
