"""Experiment plans: what a variant inherits, and every mistake a located error with exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from recallwatch.errors import InputError
from recallwatch.experiment import load_plan
from tests.clirun import cli


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "golden.yaml").write_text("name: g\nversion: '1'\nqueries: []\n")
    (tmp_path / "corpus.jsonl").write_text('{"id": "c1", "text": "Uno."}\n')
    (tmp_path / "fix.jsonl").write_text('{"id": "c1", "text": "Uno, descrito."}\n')
    return tmp_path


def _plan(folder: Path, body: str) -> Path:
    path = folder / "plan.yaml"
    path.write_text("golden: golden.yaml\ncorpus: corpus.jsonl\n" + body, encoding="utf-8")
    return path


def test_a_variant_changes_only_what_it_names(folder: Path) -> None:
    plan = load_plan(_plan(folder, """\
base: {name: base, chunking: {method: size, size: 300, overlap: 50}, embedder: e5-small}
variants:
  - {name: keyword, retrieval: bm25}
  - name: hybrid
    retrieval: {fuse: {method: wsum, weights: {dense: 0.7, bm25: 0.3}}}
  - {name: described, corpus: fix.jsonl, index: {nprobes: 8}}
  - {name: as-written, chunking: null}
"""))
    base, keyword, hybrid, described, written = plan.all()
    assert base.chunking is not None and base.chunking.describe() == {
        "method": "size", "size": 300, "overlap": 50}
    assert keyword.chunking == base.chunking and keyword.retrieval == "bm25"
    assert keyword.embedder == "e5-small"
    assert hybrid.retrieval == "hybrid"
    assert hybrid.fuse == {"method": "wsum", "weights": {"dense": 0.7, "bm25": 0.3}}
    assert described.corpus == (folder / "fix.jsonl",) and described.index == {"nprobes": 8}
    assert described.retrieval == "dense" and described.chunking == base.chunking
    assert written.chunking is None
    assert plan.corpus == (folder / "corpus.jsonl",) and plan.golden == folder / "golden.yaml"
    assert keyword.config()["embedder"] is None  # BM25 alone embeds nothing


@pytest.mark.parametrize(("body", "message"), [
    ("base: {name: b}\nvariants:\n  - {name: v, retrieval: {fuse: {method: rff}}}\n",
     "plan.yaml:5: field 'fuse': unknown fusion method 'rff'"),
    ("base: {name: b}\nvariants:\n  - {name: v, retrieval: {fuse: {method: wsum}}}\n",
     "plan.yaml:5: field 'fuse': "),
    *((f"base: {{name: b}}\nvariants:\n  - {{name: v, retrieval: {{fuse: {{method: wsum, "
       f"weights: {{dense: {w}, bm25: 2}}}}}}}}\n",
       "plan.yaml:5: field 'fuse.weights': the weight of 'dense' must be a finite number >= 0, "
       f"found {found}") for w, found in (("-1", "-1"), (".nan", "nan"), (".inf", "inf"))),
    ("base: {name: b, retrieval: {fuse: {method: wsum, weights: {dense: 0, bm25: 0}}}}\n",
     "plan.yaml:3: field 'fuse.weights': the weights are all 0 (dense, bm25): give at least one "
     "retriever a weight above 0"),
    ("base: {name: b}\nvariants:\n  - {name: v, chunkin: {method: size}}\n",
     "plan.yaml:5: record 'v': field 'chunkin': unknown key (did you mean 'chunking'?)"),
    ("base: {name: b}\nvariants:\n  - {name: v, corpus: nope.jsonl}\n",
     "plan.yaml:5: record 'v': field 'corpus': expected an existing file (paths are relative "
     "to the plan), found 'nope.jsonl'"),
    ("base: {name: b}\nvariants:\n  - {name: v, chunking: {method: words}}\n",
     "plan.yaml:5: record 'v': field 'chunking.method': expected sentences or size or "
     "paragraph, found 'words'"),
    ("base: {name: b}\nvariants:\n  - {name: v, retrieval: sparse}\n",
     "plan.yaml:5: record 'v': field 'retrieval': expected dense, bm25 or {fuse:"),
    ("base: {name: b}\nvariants:\n  - {name: b, retrieval: bm25}\n",
     "plan.yaml:5: record 'b': field 'name': expected a name no other variant has"),
    ("base: {name: b}\nvariants:\n  - {name: v, index: {nprobes: 0}}\n",
     "plan.yaml:5: record 'v': field 'index.nprobes': expected a whole number >= 1, found 0"),
    ("variants: []\n",
     "plan.yaml:1: field 'base': expected a value, found <nothing> (a plan needs golden"),
])
def test_bad_plans_are_located_errors_with_exit_2(folder: Path, body: str,
                                                  message: str) -> None:
    path = _plan(folder, body)
    with pytest.raises(InputError) as err:
        load_plan(path)
    assert message in str(err.value)
    code, _, stderr = cli("experiment", str(path), "--out-dir", str(folder / "out"))
    assert code == 2, stderr
    assert stderr.startswith("Error: ") and message in stderr and "Traceback" not in stderr
    assert not (folder / "out" / "results.json").exists()


def test_a_missing_golden_file_is_located(folder: Path) -> None:
    path = folder / "plan.yaml"
    path.write_text("golden: missing.yaml\ncorpus: corpus.jsonl\nbase: {name: b}\n")
    with pytest.raises(InputError, match="field 'golden': expected an existing file"):
        load_plan(path)
