"""Public collections in one line, offline: ``irds:cranfield`` read by ir_datasets from a home
prepared here from ../shared/data/cranfield (nothing is downloaded), and ``beir:DIR`` from a
BEIR folder this test writes. Either is accepted where qrels, a golden set (queries and their
relevant documents) or a corpus is, and gives the values the same data gives as plain files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import recallwatch as rw
from recallwatch.errors import InputError
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import load_golden
from tests.clirun import cli

ROOT = Path(__file__).resolve().parents[2]
MEASURES = ["nDCG@10", "P@5", "AP"]
MEASURE_FLAGS = [arg for m in MEASURES for arg in ("-m", m)]


# --- ir_datasets ------------------------------------------------------------------------------

@pytest.fixture
def irds_home(cranfield_dir: Path, tmp_path: Path) -> Path:
    """An ir_datasets home holding Cranfield where its loader looks (``cranfield/docs.txt``,
    ``queries.txt``, ``qrels.txt``: the files it would extract from the archive), so it never
    downloads. Its parser wants each file to open on a record (no blank line before the first
    ``.I``) and the qrels without blank lines."""
    pytest.importorskip("ir_datasets")
    home = tmp_path / "irds"
    (home / "cranfield").mkdir(parents=True)
    for name, ours in (("docs.txt", "cran.all.1400"), ("queries.txt", "cran.qry"),
                       ("qrels.txt", "cranqrel")):
        lines = (cranfield_dir / ours).read_text(encoding="utf-8").splitlines()
        if name == "qrels.txt":
            lines = [line for line in lines if line.strip()]
        while lines and not lines[0].strip():
            lines.pop(0)
        (home / "cranfield" / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return home


def _qrels_file(cranfield_dir: Path, tmp_path: Path) -> Path:
    """cranqrel as a TREC qrels file, grades as written (as ir_datasets gives them)."""
    rows = [line.split() for line in (cranfield_dir / "cranqrel").read_text().splitlines()
            if line.strip()]
    path = tmp_path / "cranfield.qrels"
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows), encoding="utf-8")
    return path


def _run_file(tmp_path: Path) -> Path:
    """A run over the 225 queries: each query's first judged documents mixed with others."""
    qrels = {}
    for q, d, _ in (line.split() for line in
                    (ROOT.parent / "shared/data/cranfield/cranqrel").read_text().splitlines()
                    if line.strip()):
        qrels.setdefault(q, []).append(d)
    lines = []
    for q, docs in qrels.items():
        ranked = [docs[i // 2] if i % 2 and i // 2 < len(docs) else str(1 + (int(q) * 7 + i) % 1400)
                  for i in range(20)]
        ranked = list(dict.fromkeys(ranked))
        lines += [f"{q} Q0 {d} {r} {100 - r} t" for r, d in enumerate(ranked, 1)]
    path = tmp_path / "cranfield.run"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _with_home(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A fresh Python with ``IR_DATASETS_HOME`` set (ir_datasets reads it on import)."""
    env = {**os.environ, "IR_DATASETS_HOME": str(home), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=300, check=False)


def test_irds_cranfield_evaluates_as_its_qrels_file(irds_home: Path, cranfield_dir: Path,
                                                    tmp_path: Path) -> None:
    run = _run_file(tmp_path)
    want = rw.evaluate(_qrels_file(cranfield_dir, tmp_path), run, MEASURES).to_dict()
    assert want["queries"]["evaluated"] == 225
    done = _with_home(irds_home, "-m", "recallwatch", "eval", "irds:cranfield", str(run),
                      *MEASURE_FLAGS, "--format", "json", "--per-query")
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["aggregate"] == want["aggregate"] and got["per_query"] == want["per_query"]
    code = ("import json, sys, recallwatch as rw\n"
            "from recallwatch.formats.corpus import read_corpus\n"
            f"res = rw.evaluate('irds:cranfield', sys.argv[1], {MEASURES!r})\n"
            "golden = rw.load_golden('irds:cranfield')\n"
            "corpus = read_corpus('irds:cranfield', on_error='collect')\n"
            "print(json.dumps({'aggregate': res.to_dict()['aggregate'],\n"
            "    'golden': [len(golden.queries), list(golden.queries[0].expected)],\n"
            "    'chunks': len(corpus.chunks), 'first': corpus.chunks[0].text[:46],\n"
            "    'rejected': [r.reason for r in corpus.rejected]}))\n")
    done = _with_home(irds_home, "-c", code, str(run))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["aggregate"] == want["aggregate"]
    # every query has relevant documents; query 1 expects those cranqrel lists for it
    first = [d for q, d, g in (line.split() for line in (cranfield_dir / "cranqrel")
                               .read_text().splitlines() if line.strip())
             if q == "1" and int(g) >= 1]
    assert out["golden"] == [225, first]
    # 1,400 documents, two of them empty in the distribution: named, not silently dropped
    assert out["chunks"] == 1398
    assert out["first"] == "experimental investigation of the aerodynamics"
    assert [r.split(": field")[0] for r in out["rejected"]] == [
        "irds:cranfield:471: record '471'", "irds:cranfield:995: record '995'"]


def test_an_unknown_irds_id_suggests_the_nearest(irds_home: Path, tmp_path: Path) -> None:
    done = _with_home(irds_home, "-m", "recallwatch", "eval", "irds:cranfeld",
                      str(_run_file(tmp_path)), "-m", "P@5")
    assert done.returncode == 2
    assert done.stderr.strip() == ("Error: irds:cranfeld: no ir_datasets dataset 'cranfeld' "
                                   "(did you mean 'cranfield'?) (the ids are listed at "
                                   "https://ir-datasets.com)")


# --- BEIR -------------------------------------------------------------------------------------

DOCS = {"d1": ("Vacaciones", "Veintidós días laborables al año."),
        "d2": ("", "La cuota de autónomos depende de los rendimientos."),
        "d3": ("Retenciones", "El tipo general es del 15 %."),
        "d4": ("Otro", "Nada que ver.")}
QUERIES = {"q1": "¿Cuántos días de vacaciones?", "q2": "Cuota de autónomos",
           "q3": "¿Qué retención aplico?"}
QRELS = {"test": {"q1": {"d1": 1, "d4": 0}, "q2": {"d2": 2}, "q3": {"d4": 0}},
         "dev": {"q3": {"d3": 1}}}


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    folder = tmp_path / "mini-beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(
        json.dumps({"_id": d, "title": t, "text": x, "metadata": {}}, ensure_ascii=False) + "\n"
        for d, (t, x) in DOCS.items()), encoding="utf-8")
    (folder / "queries.jsonl").write_text("".join(
        json.dumps({"_id": q, "text": t, "metadata": {}}, ensure_ascii=False) + "\n"
        for q, t in QUERIES.items()), encoding="utf-8")
    for split, judged in QRELS.items():
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n" + "".join(
                f"{q}\t{d}\t{g}\n" for q, docs in judged.items() for d, g in docs.items()),
            encoding="utf-8")
    return folder


RUN = {"q1": {"d4": 0.9, "d1": 0.8}, "q2": {"d2": 0.7}, "q3": {"d1": 0.5, "d3": 0.4}}


def test_a_beir_folder_evaluates_as_its_judgments(beir: Path) -> None:
    for spec, split in ((f"beir:{beir}", "test"), (f"beir:{beir}#dev", "dev")):
        assert (rw.evaluate(spec, RUN, MEASURES).to_dict()
                == rw.evaluate(QRELS[split], RUN, MEASURES).to_dict())
    run = beir / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} {r} {s} t\n" for q, docs in RUN.items()
                           for r, (d, s) in enumerate(docs.items(), 1)), encoding="utf-8")
    code, out, err = cli("eval", f"beir:{beir}", str(run), *MEASURE_FLAGS, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["aggregate"] == rw.evaluate(QRELS["test"], RUN,
                                                       MEASURES).to_dict()["aggregate"]


def test_a_beir_folder_is_a_golden_set_and_a_corpus(beir: Path) -> None:
    golden = load_golden(f"beir:{beir}")
    assert [(q.id, q.text, q.expected) for q in golden.queries] == [
        ("q1", QUERIES["q1"], ("d1",)), ("q2", QUERIES["q2"], ("d2",))]  # q3: nothing relevant
    corpus = read_corpus(f"beir:{beir}")
    assert [(c.id, c.doc_id, c.text) for c in corpus][:2] == [
        ("d1", "d1", "Vacaciones\nVeintidós días laborables al año."),
        ("d2", "d2", "La cuota de autónomos depende de los rendimientos.")]
    # gated on the collection's own queries and documents, from Python and from the CLI
    result = rw.gate(f"beir:{beir}", RUN, corpus=f"beir:{beir}")
    assert [(q.id, q.recall) for q in result.queries] == [("q1", 1.0), ("q2", 1.0)]
    results = beir / "results.jsonl"
    results.write_text("".join(json.dumps({"query_id": q, "results": [
        {"id": d, "score": s} for d, s in docs.items()]}) + "\n" for q, docs in RUN.items()))
    code, out, err = cli("gate", f"beir:{beir}", "--results", str(results), "--corpus",
                         f"beir:{beir}", "--no-history", "--format", "json")
    assert code == result.exit_code, err
    assert [q["recall"] for q in json.loads(out)["queries"]] == [1.0, 1.0]


@pytest.mark.parametrize(("spec", "message"), [
    ("beir:{dir}/nowhere", "beir:{dir}/nowhere: expected beir:DIR, a folder holding "
     "corpus.jsonl, queries.jsonl and qrels/<split>.tsv, found '{dir}/nowhere'"),
    ("beir:{dir}#train", "beir:{dir}#train: expected a file {dir}/qrels/train.tsv, found "
     "<none> (splits in this folder: dev, test)"),
])
def test_a_bad_beir_spec_says_what_is_expected(beir: Path, spec: str, message: str) -> None:
    with pytest.raises(InputError) as raised:
        rw.evaluate(spec.format(dir=beir), RUN, ["P@5"])
    assert str(raised.value) == message.format(dir=beir)


def test_a_beir_folder_is_ingested_and_gated_in_one_line_each(beir: Path, tmp_path: Path) -> None:
    uri = f"lancedb://{tmp_path}/store?table=chunks"
    code, out, err = cli("ingest", f"beir:{beir}", "--store", uri)
    assert code == 0, err
    assert "read 4: accepted 4 (added 4, updated 0, unchanged 0), rejected 0" in out
    code, out, err = cli("gate", f"beir:{beir}", "--store", uri, "--no-history", "--format",
                         "json")
    assert code in (0, 1), err
    report = json.loads(out)
    assert report["dataset"]["name"] == f"beir:{beir}"
    assert [q["id"] for q in report["queries"]] == ["q1", "q2"]
