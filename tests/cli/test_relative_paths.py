"""Every command the documentation shows works as written from a folder that is not the
checkout, with the relative paths it is written with, and folder names with a space in them.

The rule: a path given on the command line is relative to the working folder; a path inside a
plan or pipeline file is relative to that file. `recallwatch experiment plan.yaml --out exp` once
wrote its cache under the working folder and read it back under the plan's folder: every variant
was built, then the command failed.

Each documented command (the ```sh blocks of README.md, docs/getting-started.md and
docs/experiments.md) is accounted for below: run here, or run from a throwaway folder by the test
that walks its document (named, with how), or not run, with the reason. Running the walk-throughs
twice would double minutes of embedding, so they stay in their own tests; this module checks that
they run from another folder and runs the experiment's commands (the walk-throughs have none).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clirun import cli
from tests.experiment.conftest import small_kb
from tests.test_readme import NOT_RUN as README_NOT_RUN
from tests.test_readme import RUN_SECTION, Step, readme_steps

ROOT = Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/getting-started.md", "docs/experiments.md")
PLAN_SYNOPSIS = ("recallwatch experiment PLAN.yaml --out-dir DIR [--force] [--format json] "
                 "[--timing-rounds 3] [--engine ray [--address ADDR] [--workers N]]")
DOCS_EXPERIMENT = "recallwatch experiment examples/kb/experiment.yaml --out-dir exp"
# Commands not run at all, with the reason (README's own list is tests/test_readme.NOT_RUN).
NOT_RUN = {
    PLAN_SYNOPSIS: "the synopsis (PLAN.yaml, DIR and the brackets are placeholders); its "
                   "options are run by tests/experiment/test_ray.py",
}
USER_FILES = "needs the user's own files (my_*); tests/test_readme.py checks that it parses"


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
    return "nowhere"


@pytest.mark.parametrize("doc", DOCS)
def test_every_documented_command_is_run_from_another_folder(doc: str) -> None:
    steps = _steps(doc)
    assert steps, f"{doc}: no ```sh block read"
    unaccounted = [f"{doc}:{s.line}: {s.key}" for s in steps if _where_run(doc, s) == "nowhere"]
    assert not unaccounted, "a documented command no test runs from another folder (run it " \
        f"here, or say where it runs): {unaccounted}"


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
