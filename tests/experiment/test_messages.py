"""Experiment messages that lead to the fix: a golden set of chunk ids on a re-chunked variant
names the plan, the variant and `golden migrate` (and the command it prints works); an unknown
embedder is refused on every variant, at its line; Ctrl-C says what the cache kept and to run
the same experiment again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from recallwatch.formats.corpus import read_corpus
from tests.clirun import cli
from tests.experiment.conftest import small_kb, write_plan

SENTENCES = "{name: sentences, chunking: {method: sentences, size: 200}, retrieval: bm25}"


def _golden_of_ids(folder: Path) -> list[str]:
    """golden.yaml rewritten with chunk ids: each of three chunks is expected by a question
    made of its own first words."""
    chunks = read_corpus(folder / "corpus.jsonl").chunks[:3]
    queries = [{"id": f"q{i}", "text": " ".join(c.text.split()[:12]), "expected": [c.id]}
               for i, c in enumerate(chunks)]
    (folder / "golden.yaml").write_text(json.dumps({"name": "ids", "version": "1",
                                                    "queries": queries}), encoding="utf-8")
    return [c.id for c in chunks]


def test_a_re_chunked_variant_of_a_golden_set_of_ids_says_golden_migrate(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small_kb(tmp_path)
    ids = _golden_of_ids(tmp_path)
    plan = write_plan(tmp_path, "{name: written, retrieval: bm25}", [SENTENCES])
    monkeypatch.chdir(tmp_path)
    code, _, stderr = cli("experiment", "plan.yaml", "--out-dir", "out")
    assert code == 2
    assert stderr == (
        "Error: plan.yaml:6: record 'sentences': field 'chunking': this variant re-chunks the "
        "corpus, which gives its chunks new ids, and the golden set golden.yaml names its "
        f"expected chunks by id: 3 of its 3 ids are not chunks of this variant ({', '.join(ids)}) "
        "(write the expected chunks as content anchors, which resolve on every chunking: "
        "recallwatch golden migrate golden.yaml --from corpus.jsonl --out golden_anchors.yaml, "
        "then name that file in the plan's golden:)\n")
    assert not list((tmp_path / "out" / "cache").glob("index-*"))  # nothing was embedded
    # the fix, as the message words it
    command = stderr.split("every chunking: ")[1].split(", then")[0]
    code, _, err = cli(*shlex.split(command)[1:])
    assert code == 0, err
    plan.write_text(plan.read_text(encoding="utf-8").replace("golden: golden.yaml",
                                                             "golden: golden_anchors.yaml"),
                    encoding="utf-8")
    code, _, stderr = cli("experiment", "plan.yaml", "--out-dir", "out")
    assert code == 0, stderr


def test_ids_missing_from_the_corpus_name_the_plan_and_the_variant(tmp_path: Path) -> None:
    small_kb(tmp_path)
    _golden_of_ids(tmp_path)
    golden = tmp_path / "golden.yaml"
    golden.write_text(golden.read_text(encoding="utf-8").replace('"expected": ["',
                                                                 '"expected": ["lost_'),
                      encoding="utf-8")
    plan = write_plan(tmp_path, "{name: written, retrieval: bm25}", [])
    code, _, stderr = cli("experiment", str(plan), "--out-dir", str(tmp_path / "out"))
    assert code == 2
    assert stderr.startswith(f"Error: {plan}:4: record 'written': field 'corpus': 3 of the "
                             "golden set's 3 expected chunk ids are not in this variant's "
                             "corpus (lost_")
    assert stderr.endswith(f"(fix the golden set {golden}, or the corpus files the plan "
                           "names)\n")


@pytest.mark.parametrize(("where", "variants", "line", "record"), [
    ("{name: keyword, retrieval: bm25, embedder: use-multilingal}", [], 4, "keyword"),
    ("{name: dense}", ["{name: keyword, retrieval: bm25, embedder: e5-smal}"], 6, "keyword"),
    ("{name: dense}", ["{name: fn, embedder: callable}"], 6, "fn"),
])
def test_an_unknown_embedder_is_refused_on_every_variant(
        tmp_path: Path, where: str, variants: list[str], line: int, record: str) -> None:
    small_kb(tmp_path)
    plan = write_plan(tmp_path, where, variants)
    code, _, stderr = cli("experiment", str(plan), "--out-dir", str(tmp_path / "out"))
    assert code == 2
    given = (where if not variants else variants[0]).split("embedder: ")[1].rstrip("}")
    close = {"use-multilingal": "(did you mean 'use-multilingual'?) ",
             "e5-smal": "(did you mean 'e5-small'?) "}.get(given, "")
    assert stderr == (f"Error: {plan}:{line}: record {record!r}: field 'embedder': expected an "
                      "embedder name: e5-small, openai-http, sentence-transformers, "
                      "use-multilingual (options after '?', e.g. "
                      f"sentence-transformers?path=DIR), found {given!r} ({close}"
                      "docs/embedders.md lists them)\n")
    assert not (tmp_path / "out").exists()


def test_ctrl_c_says_what_was_kept_and_to_run_the_experiment_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from recallwatch.embedders.use import USEEmbedder

    small_kb(tmp_path)
    plan = write_plan(tmp_path, "{name: bm25, retrieval: bm25}",
                      ["{name: dense, retrieval: dense}"])
    out = tmp_path / "out"

    def interrupted(self: USEEmbedder, texts: object) -> None:
        raise KeyboardInterrupt  # the user's Ctrl-C while the chunks are embedded

    with monkeypatch.context() as m:
        m.setattr(USEEmbedder, "embed_documents", interrupted)
        code, _, stderr = cli("experiment", str(plan), "--out-dir", str(out))
    assert code == 130
    assert stderr == (
        f"Error: experiment interrupted before its results were written: {out / 'cache'} keeps "
        "1 of the plan's 1 chunk builds and 0 of its 1 index builds, each complete (a build cut "
        f"short is built again); any earlier results in {out} are as they were. Run the same "
        f"experiment again (plan {plan}, the same output folder) to finish it: the builds kept "
        "are reused\n")
    assert not (out / "results.json").exists()
    code, _, stderr = cli("experiment", str(plan), "--out-dir", str(out))
    assert code == 0, stderr
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["cache"]["built"] == {"corpus": [], "index": ["dense"]}
    assert results["cache"]["reused"]["corpus"] == ["bm25", "dense"]
