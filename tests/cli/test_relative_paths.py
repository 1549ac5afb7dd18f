"""Every command the documentation shows works as written from a folder that is not the
checkout, with the relative paths it is written with, and folder names with a space in them.

The rule: a path given on the command line is relative to the working folder; a path inside a
plan or pipeline file is relative to that file. `recallwatch experiment plan.yaml --out exp` once
wrote its cache under the working folder and read it back under the plan's folder: every variant
was built, then the command failed.

Each documented command (the ```sh blocks of README.md and of every page in docs/) is accounted
for below: run here, or run from a throwaway folder by the test that walks its document (named,
with how), or not run, with the reason (and then at least parsed: the command and every option
exist). Running the walk-throughs twice would double minutes of embedding, so they stay in their
own tests; this module checks that they run from another folder, runs the experiment's commands
(the walk-throughs have none) and the commands the other pages show on a user's own files, on
small files of that name in a folder of their own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clirun import cli
from tests.experiment.conftest import small_kb
from tests.retrievers.conftest import KEYWORDS, QUERIES, TEXTS
from tests.test_readme import NOT_RUN as README_NOT_RUN
from tests.test_readme import RUN_SECTION, Step, parse_cli, readme_steps

ROOT = Path(__file__).resolve().parents[2]
# README.md and every page of docs/ that shows a command (a ```sh block)
DOCS = ("README.md", *sorted(
    p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md")
    if any(s.kind == "sh" for s in readme_steps(p.read_text(encoding="utf-8")))))
PLAN_SYNOPSIS = ("recallwatch experiment PLAN.yaml --out-dir DIR [--force] [--format json] "
                 "[--timing-rounds 3] [--engine ray [--address ADDR] [--workers N]]")
DOCS_EXPERIMENT = "recallwatch experiment examples/kb/experiment.yaml --out-dir exp"
# Commands not run at all, with the reason (README's own list is tests/test_readme.NOT_RUN).
PG = "postgresql://rw@db.internal:5432/recallwatch"
NEEDS_PG = "needs a PostgreSQL server (tests/history runs the history on one when it is there)"
SERVES = "a server that runs until Ctrl+C (tests/web/test_serve_cmd.py runs the dashboard)"
ANSWERS = ("needs the user's store, answers and labels (tests/answers/test_gate_answers.py runs "
           "--answers, --generator and --answer-labels on the example's)")
RAY = "needs a Ray cluster (tests/scale run these options on a local Ray, slow)"
NOT_RUN = {
    PLAN_SYNOPSIS: "the synopsis (PLAN.yaml, DIR and the brackets are placeholders); its "
                   "options are run by tests/experiment/test_ray.py",
    "recallwatch ops serve": SERVES,
    "recallwatch ops serve --history demo-out/history.db --port 0": SERVES,
    "recallwatch ops serve --history ci/history.db --bench bench-out/": SERVES,
    "recallwatch ops serve --experiments exp/ --experiments old-exps/": SERVES,
    f"recallwatch ops serve --history {PG}": SERVES,
    "export PGPASSWORD=…": "sets the password of the PostgreSQL commands below it",
    f"recallwatch gate golden.yaml --store lancedb://kb?table=chunks --history {PG}": NEEDS_PG,
    f"recallwatch history list --history {PG}": NEEDS_PG,
    f"recallwatch history copy .recallwatch/history.db {PG}": NEEDS_PG,
    f"recallwatch history copy {PG} backup.db": NEEDS_PG,
    "recallwatch gate golden.yaml --store lancedb://kb?table=chunks --policy policy.yaml "
    "--answers answers.jsonl --answer-labels labelled.jsonl": ANSWERS,
    "recallwatch gate golden.yaml --store lancedb://kb?table=chunks --policy policy.yaml "
    "--generator python:my_rag:answer --answer-labels labelled.jsonl": ANSWERS,
    "recallwatch gate golden.yaml --store lancedb://kb?table=chunks --generator "
    "http://127.0.0.1:11434/v1?model=llama3.1 --answer-judge "
    "http://127.0.0.1:11434/v1?model=llama3.1 --answer-labels labelled.jsonl":
        "needs a language model served at 127.0.0.1:11434 (tests/answers serves a scripted one)",
    "recallwatch eval irds:cranfield bm25.run -m nDCG@10 -m AP":
        "ir_datasets downloads Cranfield, and the tests use no network",
    "pip install recallwatch[ray]": "installs the package",
    "recallwatch ingest corpus.jsonl --store lancedb://kb?table=chunks --engine ray --workers 8":
        RAY,
    "recallwatch bench sweep.yaml --engine ray --address 10.0.0.5:6379": RAY,
    "recallwatch gate golden.yaml --store lancedb://kb?table=chunks --engine ray": RAY,
    "recallwatch ops monitor --store lancedb://kb?table=chunks --probes probes.json --engine ray":
        RAY,
}
USER_FILES = "needs the user's own files (my_*); tests/test_readme.py checks that it parses"
SYNOPSIS = ("a synopsis, written on lines of its own (the capitals and the brackets are "
            "placeholders); tests/cli/test_compare.py runs its options")
BENCHMARK = ("a benchmark of the checkout, run in it as written (PYTHONPATH=.); its tests "
             "(tests/test_*_bench.py) run it small")
# The commands the pages show on a user's own files (golden.yaml, results.jsonl, my_search.py,
# a store in kb/, …), run here in that order by test_the_pages_commands_run_from_another_folder.
RUN_HERE = (
    "recallwatch gate golden.yaml --store lancedb://kb?table=chunks --policy policy.yaml "
    "--junit gate.xml --report gate-report/",
    "recallwatch gate golden.yaml --results results.jsonl",
    "recallwatch gate golden.yaml --store python:my_search:search",
    "recallwatch gate golden.yaml --pipeline pipeline.yaml --runs-out runs/",
    "recallwatch gate beir:scifact --results results.jsonl --corpus beir:scifact",
    "recallwatch history prune --keep-last 200 --dry-run",
    "recallwatch history prune --keep-last 200",
    "recallwatch history prune --keep-days 90",
)


def _steps(doc: str) -> list[Step]:
    return [s for s in readme_steps((ROOT / doc).read_text(encoding="utf-8")) if s.kind == "sh"]


def _where_run(doc: str, step: Step) -> str:
    """Which test runs a documented command from a folder other than the checkout, and how."""
    if step.key in NOT_RUN or step.key in README_NOT_RUN:
        return "not run"
    if doc == "docs/getting-started.md":
        return ("tests/test_getting_started.py: every step in order, in a throwaway folder "
                "named with a space, examples/ linked into it, paths as written")
    if doc == "README.md" and step.section == RUN_SECTION:
        return ("tests/test_readme.py (slow): every step in order, in the folder 'after demo' "
                "that examples/demo.sh fills, examples/ linked into it, paths as written")
    if doc == "README.md":
        return USER_FILES
    if step.key == DOCS_EXPERIMENT:
        return ("this module: the same command on a smaller plan, from another folder "
                "(default suite); tests/experiment/test_docs.py (slow): exactly as written, "
                "from a throwaway folder named with a space")
    if step.key in RUN_HERE:
        return "this module: as written, from a folder of its own, on small files of its names"
    if any(w.startswith("benchmarks/") for w in step.words):
        return BENCHMARK
    if _synopsis(step):
        return SYNOPSIS
    return "nowhere"


def _synopsis(step: Step) -> bool:
    return any(w.startswith("[") for w in step.words)


def test_every_page_with_commands_is_read() -> None:
    assert {"README.md", "docs/getting-started.md", "docs/experiments.md", "docs/gate.md",
            "docs/pipelines.md", "docs/history.md", "docs/python.md"} <= set(DOCS)
    shown = {s.key for doc in DOCS for s in _steps(doc)}
    assert set(NOT_RUN) <= shown and set(RUN_HERE) <= shown, "stale entries: " \
        f"{(set(NOT_RUN) | set(RUN_HERE)) - shown}"


@pytest.mark.parametrize("doc", DOCS)
def test_every_documented_command_is_run_from_another_folder(doc: str) -> None:
    steps = _steps(doc)
    assert steps, f"{doc}: no ```sh block read"
    unaccounted = [f"{doc}:{s.line}: {s.key}" for s in steps if _where_run(doc, s) == "nowhere"]
    assert not unaccounted, "a documented command no test runs from another folder (run it " \
        f"here, or say where it runs): {unaccounted}"


@pytest.mark.parametrize("doc", [d for d in DOCS if d != "README.md"])  # test_readme parses it
def test_every_documented_command_not_run_parses(doc: str) -> None:
    """A command not run at all still names a command and options that exist, with values of
    their types (a synopsis, with its placeholders, is left out)."""
    for step in _steps(doc):
        if step.words[:1] == ["recallwatch"] and not _synopsis(step):
            parse_cli(step.words)


def test_the_walkthroughs_run_in_a_folder_that_is_not_the_checkout() -> None:
    """What _where_run says of the two walk-through tests is what they do."""
    import tests.test_getting_started as guide
    import tests.test_readme as readme

    guide_text = Path(guide.__file__).read_text(encoding="utf-8")
    readme_text = Path(readme.__file__).read_text(encoding="utf-8")
    assert "monkeypatch.chdir(home)" in guide_text and '"my handbook"' in guide_text
    assert 'mktemp("after demo")' in readme_text and "cwd=home" in readme_text
    for text in (guide_text, readme_text):
        assert '.symlink_to(ROOT / "examples", target_is_directory=True)' in text


PLAN = """\
# the docs' plan (examples/kb/experiment.yaml), on one domain of the example: dense, BM25, and a
# hybrid reranked by the example's Python reranker (rerank.py, beside this plan)
golden: golden.yaml
corpus: [corpus.jsonl]
policy: policy.yaml
base: {name: written-dense, retrieval: dense}
variants:
  - {name: written-bm25, retrieval: bm25}
  - name: written-hybrid-reranked
    retrieval: {fuse: {method: rrf}}
    rerank: {python: "rerank:overlap"}
"""
WROTE = "".join(f"wrote exp/{name}\n" for name in ("results.json", "results.md", "report.html"))


def test_the_documented_experiment_runs_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kb, work = tmp_path / "the kb", tmp_path / "work dir"
    kb.mkdir()
    work.mkdir()
    small_kb(kb)
    (kb / "experiment.yaml").write_text(PLAN, encoding="utf-8")
    monkeypatch.chdir(work)
    code, stdout, stderr = cli("experiment", "../the kb/experiment.yaml", "--out-dir", "exp")
    assert code == 0, stderr
    assert stderr == WROTE
    assert "corpus builds: 1 built, 2 from the cache" in stdout
    results = json.loads(Path("exp/results.json").read_text(encoding="utf-8"))
    assert results["plan"] == "../the kb/experiment.yaml"
    assert [v["verdict"] for v in results["variants"]] == ["ACCEPT"] * 3
    assert (work / "exp" / "cache").is_dir() and not (kb / "exp").exists()

    # docs/experiments.md: "recallwatch experiment plan.yaml --out-dir exp --history
    # .recallwatch/history.db" (the history relative to the working folder too)
    code, stdout, stderr = cli("experiment", "../the kb/experiment.yaml", "--out-dir", "exp",
                               "--history", ".recallwatch/history.db")
    assert code == 0, stderr
    assert stderr == WROTE + "recorded experiment 1 in .recallwatch/history.db\n"
    assert "corpus builds: 0 built, 3 from the cache" in stdout
    assert (work / ".recallwatch" / "history.db").is_file()

    # from the plan's folder, the same output folder named the other way round
    monkeypatch.chdir(kb)
    code, stdout, stderr = cli("experiment", "experiment.yaml", "--out-dir", "../work dir/exp")
    assert code == 0, stderr
    assert "index builds: 0 built, 2 from the cache" in stdout
    again = json.loads((work / "exp" / "results.json").read_text(encoding="utf-8"))
    assert [v["metrics"] for v in again["variants"]] == [
        v["metrics"] for v in results["variants"]]




def _users_files(work: Path) -> None:
    """The files the pages' commands name, small: a corpus and its store in kb/ (ingested with
    a relative store URI), a golden set, a policy, a results file, a retriever module, a
    pipeline file and a BEIR folder scifact/ of the same questions."""
    (work / "corpus.jsonl").write_text("".join(
        json.dumps({"id": i, "text": t, "doc_id": f"doc_{i}"}, ensure_ascii=False) + "\n"
        for i, t in TEXTS.items()), encoding="utf-8")
    (work / "golden.yaml").write_text(json.dumps({"name": "kb", "version": "1", "top_k": 3,
        "queries": [{"id": q, "text": t, "expected": e} for q, t, e in QUERIES]},
        ensure_ascii=False), encoding="utf-8")
    (work / "policy.yaml").write_text("top_k: 3\nrecall_floor: 0.5\n", encoding="utf-8")
    (work / "my_search.py").write_text(KEYWORDS, encoding="utf-8")
    scope: dict[str, Any] = {}
    exec(KEYWORDS, scope)  # the module's own search gives the results file
    (work / "results.jsonl").write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": c, "score": s} for c, s in scope["search"](t, 3)]}) + "\n"
        for q, t, _ in QUERIES), encoding="utf-8")
    (work / "pipeline.yaml").write_text(
        "retrievers:\n  mine: python:my_search:search\n  keywords: bm25:corpus.jsonl\n"
        "fuse: {method: rrf}\ndepth: 5\n", encoding="utf-8")
    beir = work / "scifact"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": "", "text": t})
                                               + "\n" for i, t in TEXTS.items()), encoding="utf-8")
    (beir / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                                for q, t, _ in QUERIES), encoding="utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{c}\t1\n" for q, _, e in QUERIES for c in e), encoding="utf-8")
    code, _, err = cli("ingest", "corpus.jsonl", "--store", "lancedb://kb?table=chunks",
                       "--no-progress")
    assert code == 0, err


def test_the_pages_commands_run_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/gate.md, pipelines.md, history.md and python.md show these commands on a user's own
    files: each runs as written (the words the page shows) in a folder that is not the
    checkout, and everything it reads or writes is in that folder."""
    work = tmp_path / "my project"
    work.mkdir()
    monkeypatch.chdir(work)
    _users_files(work)
    shown = {s.key: s for doc in DOCS for s in _steps(doc)}
    for key in RUN_HERE:
        code, out, err = cli(*shown[key].words[1:])
        gate = shown[key].words[1] == "gate"
        assert code in ((0, 1) if gate else (0,)), f"{key}: exit {code}\n{out}\n{err}"
        assert "Error" not in err, f"{key}: {err}"
        if gate:
            assert "ACCEPT" in out or "STOP" in out, f"{key}: {out}"
    assert (work / "gate.xml").is_file() and (work / "gate-report").is_dir()
    assert sorted(p.name for p in (work / "runs").iterdir()) == [
        "fused.run", "keywords.run", "mine.run"]
    code, out, _ = cli("history", "list", "--format", "json")
    assert code == 0 and out.count('"run_id"') == 5  # the five gate runs, kept by the prunes
    assert (work / ".recallwatch" / "history.db").is_file() and (work / "kb").is_dir()
