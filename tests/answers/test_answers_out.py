"""`gate --generator SPEC --answers-out FILE`, end to end on the example knowledge base: the
generator's answers written in the answers format (also without labelled answers, judged by no
one), labelled on `label answers`' page, and judged again by `gate --answers FILE` exactly as the
generator's own run judged them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from recallwatch.answers.gate import chunk_reader
from recallwatch.formats.answers import read_answers, read_labelled_answers
from recallwatch.formats.golden import load_golden
from recallwatch.web.answer_labels import TOKEN_HEADER, create_answers_app
from tests.answers import scripted
from tests.answers.conftest import KB, LABELS, golden_file
from tests.answers.test_gate_answers import FIVE, by_id
from tests.clirun import wide_cli as cli

GENERATOR = "python:tests.answers.scripted:answer"
TOKEN = "t" * 24


def gate(*args: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli("gate", *args, "--no-history", "--format", "json")
    assert code in (0, 1), err or out
    return code, json.loads(out), err


def test_the_generator_s_answers_are_written_labelled_and_judged_again(
        kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, FIVE, top_k=2)
    written = tmp_path / "generated.jsonl"
    # 1. no labelled answers yet: the answers are generated and written, judged by no one
    code, res, err = gate(str(golden), "--store", kb_v1, "--generator", GENERATOR,
                          "--answers-out", str(written))
    assert code == 1  # retencion_alquiler_local's chunk is not in its top 2: a retrieval STOP
    assert err.endswith(f"wrote 5 answers of the generator to {written}\n")
    answers = res["answers"]
    assert answers["answers_out"] == {"path": str(written), "answers": 5}
    assert answers["faithfulness"] is None and not answers["judge"]["accepted"]
    assert any("answers were written to" in w and "recallwatch label answers" in w
               for w in res["warnings"])
    records = read_answers(written)
    q = by_id(res)
    assert list(records) == [query["id"] for query in res["queries"]]
    for qid, record in records.items():
        # the answer the generator gave from exactly the retrieved top K, by chunk id
        assert [c.id for c in record.contexts or ()] == [t["id"] for t in q[qid]["top"]]
        script = scripted.SCRIPT[q[qid]["text"]]
        assert record.answer in (script.right, script.wrong)
    rent = q["retencion_alquiler_local"]["text"]
    assert records["retencion_alquiler_local"].answer == scripted.SCRIPT[rent].wrong

    # 2. labelled on the page of `label answers FILE --golden GOLDEN --corpus CORPUS`
    labels = tmp_path / "generated.ana.labels.jsonl"
    app = create_answers_app(written, labels, judge="ana", token=TOKEN,
                             golden=load_golden(golden),
                             chunks=chunk_reader(None, KB / "corpus_v1.jsonl"))
    page = TestClient(app, base_url="http://127.0.0.1:8765")
    for qid in records:
        right = records[qid].answer == scripted.SCRIPT[q[qid]["text"]].right
        r = page.post("/label", json={"id": qid, "faithful": right, "relevant": True,
                                      "correct": right},
                      headers={TOKEN_HEADER: TOKEN, "origin": "http://127.0.0.1:8765"})
        assert r.status_code == 200, r.text
    labelled = {a.id: a for a in read_labelled_answers(labels)}
    assert list(labelled) == list(records)
    assert labelled["retencion_alquiler_local"].answer == records[
        "retencion_alquiler_local"].answer
    assert len(labelled["retencion_alquiler_local"].contexts) == 2  # the chunks' texts

    # 3. judged again from the file: as the generator's own run judged them
    _, direct, _ = gate(str(golden), "--store", kb_v1, "--generator", GENERATOR,
                        "--answer-labels", str(LABELS))
    _, again, _ = gate(str(golden), "--store", kb_v1, "--answers", str(written),
                       "--generator", GENERATOR, "--answer-labels", str(LABELS))
    measures = ("text", "contexts", "faithfulness", "relevance", "correctness", "hallucinated",
                "failure")
    for qid in records:
        a, b = by_id(direct)[qid]["answer"], by_id(again)[qid]["answer"]
        assert {k: a[k] for k in measures} == {k: b[k] for k in measures}, qid
        assert (a["from"], b["from"]) == ("generator", "answers file")
    assert again["answers"]["failures"] == {"retrieval": 1, "generation": 1, "both": 0}


def test_answers_out_needs_a_generator_and_no_answers_file(kb_v1: str, tmp_path: Path) -> None:
    golden = golden_file(tmp_path, FIVE)
    out = tmp_path / "out.jsonl"
    code, _, err = cli("gate", str(golden), "--store", kb_v1, "--no-history",
                       "--answers-out", str(out))
    assert code == 2
    assert err == ("Error: --answers-out writes the answers --generator SPEC gives from the "
                   "retrieved chunks: give --generator\n")
    answers = tmp_path / "given.jsonl"
    answers.write_text('{"query_id": "modelo_190", "answer": "x"}\n', encoding="utf-8")
    code, _, err = cli("gate", str(golden), "--store", kb_v1, "--no-history",
                       "--answers", str(answers), "--generator", GENERATOR,
                       "--answer-labels", str(LABELS), "--answers-out", str(out))
    assert code == 2
    assert err == (f"Error: --answers-out has nothing to write with --answers {answers}: the "
                   "answers judged are that file's already (drop --answers to have the "
                   "generator answer from the retrieved chunks)\n")
    code, _, err = cli("gate", str(golden), "--store", kb_v1, "--no-history",
                       "--generator", GENERATOR)
    assert code == 2
    assert err == ("Error: answers are judged only by a judge measured against answers people "
                   "labelled: give --answer-labels FILE (JSON Lines of {question, answer, "
                   "contexts, faithful, relevant}; docs/answers.md), or --answers-out FILE to "
                   "write the generator's answers, to label them first\n")
    code, _, err = cli("gate", str(golden), "--store", kb_v1, "--no-history",
                       "--generator", GENERATOR, "--answers-out", str(tmp_path))
    assert code == 2 and "--answers-out names the file to write" in err
    assert not out.exists()
