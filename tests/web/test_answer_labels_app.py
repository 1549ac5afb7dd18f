"""The answers page of `label answers` in-process: the labels it writes are read back by
the judge's agreement check and counted; it resumes, takes back, refuses what it cannot write,
and bad input files are located errors. The safety is the judging page's: token, Host, origin,
CSP, escaped text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from recallwatch.answers.judges import open_judge
from recallwatch.answers.trust import measure_judge
from recallwatch.errors import InputError, UsageError
from recallwatch.formats.answers import read_labelled_answers
from recallwatch.formats.golden import load_golden
from recallwatch.web.answer_labels import TOKEN_HEADER, answers_csp, create_answers_app
from tests.answers.conftest import KB, LABELS, write_jsonl

TOKEN = "t" * 24
HOSTILE = '</script><script>alert(1)</script><img src=x onerror=alert(2)>'
LABEL_KEYS = ("faithful", "relevant", "correct")
H = {TOKEN_HEADER: TOKEN, "origin": "http://127.0.0.1:8765"}


def unlabelled(path: Path, rows: list[dict[str, Any]]) -> Path:
    """``rows`` (labelled answers) as answers to label: without their labels."""
    return write_jsonl(path, [{k: v for k, v in r.items() if k not in LABEL_KEYS} for r in rows])


def example_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]


def client(answers: Path, labels: Path, judge: str = "ana", **kw: Any) -> TestClient:
    app = create_answers_app(answers, labels, judge=judge, token=TOKEN, **kw)
    return TestClient(app, base_url="http://127.0.0.1:8765")


def labels_of(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], **{k: row.get(k) for k in LABEL_KEYS}}


def test_labels_written_are_read_by_the_judges_agreement_check(tmp_path: Path) -> None:
    """The example's 28 labelled answers, shown without their labels and labelled again on the
    page as people labelled them: the file written reads as the original does, and the judge's
    agreement measured on it is the agreement measured on the original, on all 28."""
    rows = example_rows()
    answers, out = unlabelled(tmp_path / "answers.jsonl", rows), tmp_path / "labels.jsonl"
    c = client(answers, out)
    for row in rows:
        r = c.post("/label", json=labels_of(row), headers=H)
        assert r.status_code == 200, r.text
    assert r.json()["count"] == r.json()["total"] == len(rows)
    written, original = read_labelled_answers(out), read_labelled_answers(LABELS)
    strip = ("line",)
    assert [{k: v for k, v in vars(a).items() if k not in strip} for a in written] == [
        {k: v for k, v in vars(a).items() if k not in strip} for a in original]
    lines = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert {x["judge"] for x in lines} == {"ana"} and all(x["at"].endswith("Z") for x in lines)
    judge = "offline?support=0.5&relevance=0.3&correct=0.6"
    mine, theirs = (measure_judge(open_judge(judge), labelled)
                    for labelled in (written, original))
    assert mine.labelled == len(rows) and mine.to_dict() == theirs.to_dict()


def test_it_resumes_skipping_what_is_labelled_and_takes_back(tmp_path: Path) -> None:
    rows = example_rows()[:4]
    answers, out = unlabelled(tmp_path / "answers.jsonl", rows), tmp_path / "labels.jsonl"
    c = client(answers, out)
    for row in rows[:2]:
        assert c.post("/label", json=labels_of(row), headers=H).status_code == 200
    again = client(answers, out)  # a new server over the same files
    state = again.get(f"/state?token={TOKEN}").json()
    assert sorted(state["labelled"]) == [rows[0]["id"], rows[1]["id"]] and state["count"] == 2
    # another person's label of an answer of the file is kept when ana takes back hers
    bea = client(answers, out, judge="bea")
    assert bea.post("/label", json=labels_of(rows[2]), headers=H).status_code == 200
    r = again.post("/undo", headers=H)
    assert r.json()["undone"] == rows[1]["id"] and r.json()["count"] == 2
    assert [a.id for a in read_labelled_answers(out)] == [rows[0]["id"], rows[2]["id"]]
    r = again.post("/undo", headers=H)
    assert r.json()["undone"] == rows[0]["id"]
    assert again.post("/undo", headers=H).json()["undone"] is None
    assert [a.id for a in read_labelled_answers(out)] == [rows[2]["id"]]
    # a label sent twice (a double key press) is one record
    for _ in range(2):
        assert again.post("/label", json=labels_of(rows[3]), headers=H).status_code == 200
    assert [a.id for a in read_labelled_answers(out)] == [rows[2]["id"], rows[3]["id"]]


def test_reads_and_writes_need_the_token_and_text_is_inert(tmp_path: Path) -> None:
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"id": "h1", "question": HOSTILE, "answer": HOSTILE, "contexts": [HOSTILE],
         "reference": HOSTILE}])
    out = tmp_path / "labels.jsonl"
    c = client(answers, out)
    assert c.get("/").status_code == 403
    body = {"id": "h1", "faithful": True, "relevant": True, "correct": True}
    assert c.post("/label", json=body).status_code == 403
    assert c.post("/label", json=body, headers={TOKEN_HEADER: "wrong"}).status_code == 403
    r = c.post("/label", json=body, headers={TOKEN_HEADER: TOKEN,
                                             "origin": "http://evil.example"})
    assert r.status_code == 403 and not out.exists()
    r = c.get(f"/?token={TOKEN}", headers={"host": "127.0.0.1.nip.io:8765"})
    assert r.status_code == 421 and "the answers page refused the host name" in r.text
    page = c.get(f"/?token={TOKEN}")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == answers_csp()
    assert "connect-src 'self'" in answers_csp() and "frame-ancestors 'none'" in answers_csp()
    assert HOSTILE not in page.text and "<img" not in page.text
    assert page.text.count("<script") == 2  # the data element and our own script
    r = c.post("/label", content=b" " * (64 * 1024 + 1), headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 413 and not out.exists()


@pytest.mark.parametrize(("body", "error"), [
    (b"[]", "the body must be a JSON object {id, faithful, relevant, correct}"),
    (b"{", "the body must be a JSON object {id, faithful, relevant, correct}"),
    (b'{"id": "nope", "faithful": true, "relevant": true, "correct": true}',
     "id must be the id of the answer shown"),
    (b'{"id": ["r1"], "faithful": true, "relevant": true}',
     "id must be the id of the answer shown"),
    (b'{"id": "r1", "faithful": 1, "relevant": true, "correct": true}',
     "faithful and relevant must be true or false"),
    (b'{"id": "r1", "faithful": true, "relevant": true}',
     "answer 'r1' has a reference or facts: correct must be true or false"),
    (b'{"id": "f1", "faithful": true, "relevant": true, "correct": "yes"}',
     "answer 'f1' has a reference or facts: correct must be true or false"),
    (b'{"id": "n1", "faithful": true, "relevant": false, "correct": false}',
     "answer 'n1' has no reference and no facts to judge correctness against: correct must be "
     "null"),
])
def test_malformed_labels_are_400_with_the_reason(tmp_path: Path, body: bytes,
                                                   error: str) -> None:
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"id": "r1", "question": "q", "answer": "a", "contexts": ["c"], "reference": "ref"},
        {"id": "f1", "question": "q", "answer": "a", "contexts": ["c"], "facts": ["f"]},
        {"id": "n1", "question": "q", "answer": "a", "contexts": ["c"]}])
    out = tmp_path / "labels.jsonl"
    r = client(answers, out).post("/label", content=body, headers=H)
    assert r.status_code == 400 and r.json()["error"] == error
    assert not out.exists()


def test_an_answer_without_truth_is_labelled_without_correct(tmp_path: Path) -> None:
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"question": "q", "answer": "a", "contexts": ["c"]}])
    out = tmp_path / "labels.jsonl"
    c = client(answers, out)
    items = c.get(f"/state?token={TOKEN}").json()
    assert items["total"] == 1
    r = c.post("/label", json={"id": "line 1", "faithful": False, "relevant": True,
                               "correct": None}, headers=H)
    assert r.json()["labelled"] == {"line 1": {"faithful": False, "relevant": True,
                                               "correct": None}}
    (labelled,) = read_labelled_answers(out)
    assert (labelled.id, labelled.faithful, labelled.relevant, labelled.correct) == (
        "line 1", False, True, None)


def test_bad_input_files_are_located_errors(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    write_jsonl(answers, [{"id": "a", "question": "q", "answer": "x", "contexts": "passage"}])
    with pytest.raises(InputError) as exc:
        client(answers, tmp_path / "l.jsonl")
    assert str(exc.value) == (f"{answers}:1: record 'a': field 'contexts': expected a non-empty "
                              "list of the passages' texts, found 'passage'")
    write_jsonl(answers, [{"query_id": "modelo_190", "answer": "x"}])
    with pytest.raises(InputError) as exc:
        client(answers, tmp_path / "l.jsonl")
    assert str(exc.value) == (
        f"{answers}:1: field 'query_id': expected an answer to label: {{id, question, answer, "
        "contexts: [the passages' texts]}, found <an answer of the gate's answers file> (to label "
        "the answers of a gate answers file, give its golden set with --golden (and --store or "
        "--corpus for the chunks it names))")
    # a labels file that holds another answer under an id of the answers to label
    rows = example_rows()[:2]
    unlabelled(answers, rows)
    other = tmp_path / "other.jsonl"
    write_jsonl(other, [{**rows[1], "answer": "Otra respuesta."}])
    with pytest.raises(InputError) as exc:
        client(answers, other)
    assert str(exc.value).startswith(
        f"{other}:1: record 'a02': field 'answer': expected the answer {answers} gives for 'a02' "
        "(line 2): this file labels another answer under the same id, found 'Otra respuesta.'")
    broken = tmp_path / "broken.jsonl"
    write_jsonl(broken, [{**rows[0], "faithful": "yes"}])
    with pytest.raises(InputError) as exc:
        client(answers, broken)
    assert str(exc.value) == (f"{broken}:1: record 'a01': field 'faithful': expected true or "
                              "false, found 'yes'")
    with pytest.raises(UsageError, match="the answers page's token must be at least 16"):
        create_answers_app(answers, other, judge="ana", token="short")


def corpus_chunks(ids: list[str]) -> dict[str, Any]:
    from recallwatch.answers.gate import chunk_reader

    reader = chunk_reader(None, KB / "corpus_v1.jsonl")
    assert reader is not None
    return dict(reader(ids))


def test_a_gate_answers_file_is_labelled_with_its_golden_set(tmp_path: Path) -> None:
    """The gate's answers file: questions and references from the golden set, the chunks' texts
    from the corpus; an answer without contexts, or naming a chunk the corpus lacks, is a
    located error."""
    from recallwatch.answers.gate import chunk_reader

    golden = load_golden(KB / "golden_answers.yaml")
    reader = chunk_reader(None, KB / "corpus_v1.jsonl")
    answers = write_jsonl(tmp_path / "answers.jsonl", [
        {"query_id": "modelo_390", "answer": "Del 1 al 30 de enero.",
         "contexts": ["silver_finanzas_117", {"text": "Un pasaje que no es un chunk."}]}])
    out = tmp_path / "labels.jsonl"
    c = client(answers, out, golden=golden, chunks=reader)
    r = c.post("/label", json={"id": "modelo_390", "faithful": True, "relevant": True,
                               "correct": False}, headers=H)
    assert r.status_code == 200, r.text
    (labelled,) = read_labelled_answers(out)
    query = next(q for q in golden.queries if q.id == "modelo_390")
    assert labelled.question == query.text and labelled.reference == query.reference
    assert labelled.contexts == (corpus_chunks(["silver_finanzas_117"])[
        "silver_finanzas_117"].text, "Un pasaje que no es un chunk.")
    write_jsonl(answers, [{"query_id": "modelo_390", "answer": "x"}])
    with pytest.raises(InputError) as exc:
        client(answers, out, golden=golden, chunks=reader)
    assert str(exc.value) == (
        f"{answers}:1: record 'modelo_390': field 'contexts': expected the passages the answer "
        "was given (chunk ids or {\"text\": …}): its labels are about them, and label answers "
        "searches nothing to find the retrieved ones, found <none>")
    write_jsonl(answers, [{"query_id": "modelo_390", "answer": "x", "contexts": ["nope_1"]}])
    with pytest.raises(InputError) as exc:
        client(answers, out, golden=golden, chunks=reader)
    assert str(exc.value) == (
        f"{answers}:1: record 'modelo_390': field 'contexts[0]': expected a chunk id of the "
        "index (or {\"text\": …} for a passage that is not one), found 'nope_1'")
    with pytest.raises(UsageError) as usage:
        client(answers, out, golden=golden)
    assert str(usage.value) == (f"{answers} names chunks by id ('nope_1' first): give --store "
                                "URI or --corpus FILE to read their texts")


def test_label_answers_serves_and_saves_beside_the_answers(tmp_path: Path) -> None:
    """`label answers FILE --golden G --corpus C`: a real server, the labels saved to FILE's
    name with .JUDGE.labels.jsonl, the address printed with its token."""
    import httpx

    from tests.web.conftest import serving

    answers = write_jsonl(tmp_path / "gate_answers.jsonl", [
        {"query_id": "modelo_390", "answer": "Del 1 al 30 de enero.",
         "contexts": ["silver_finanzas_117"]}])
    args = ["label", "answers", str(answers), "--judge", "ana", "--golden",
            str(KB / "golden_answers.yaml"), "--corpus", str(KB / "corpus_v1.jsonl"), "--port",
            "0"]
    with serving(args, r"open (http://127\.0\.0\.1:\d+/)\?token=(\S+)") as (_, m):
        r = httpx.post(m.group(1) + "label", headers={TOKEN_HEADER: m.group(2)}, timeout=30,
                       json={"id": "modelo_390", "faithful": True, "relevant": True,
                             "correct": True})
        assert r.status_code == 200, r.text
    (labelled,) = read_labelled_answers(tmp_path / "gate_answers.ana.labels.jsonl")
    assert (labelled.id, labelled.faithful, labelled.relevant, labelled.correct) == (
        "modelo_390", True, True, True)


def test_label_answers_options_are_checked(tmp_path: Path) -> None:
    from tests.clirun import cli

    answers = unlabelled(tmp_path / "answers.jsonl", example_rows()[:1])
    code, _, err = cli("label", "answers", str(answers), "--corpus", str(KB / "corpus_v1.jsonl"))
    assert code == 2 and err == ("Error: --store and --corpus read the chunks a gate answers "
                                 "file names: give its golden set with --golden too\n")
    code, _, err = cli("label", "answers", str(answers), "--golden", str(KB / "golden.yaml"),
                       "--store", "bm25:" + str(KB / "corpus_v1.jsonl"))
    assert code == 2 and "`recallwatch label answers` needs a vector store" in err
    code, _, err = cli("label", "answers", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("Error: ") and err.count("\n") == 1
