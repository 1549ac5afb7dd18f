"""The judging page in-process: the token guards every read and write, only loopback host names
and same-origin writes are served, grades and undo reach the judgments file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from recallwatch.errors import UsageError
from recallwatch.formats.judging import QueueItem, read_judgment_records, write_queue
from recallwatch.web.judge import TOKEN_HEADER, create_judge_app, judge_csp

TOKEN = "t" * 24
HOSTILE = '</script><script>alert(1)</script><img src=x onerror=alert(2)>'


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    queue = tmp_path / "queue.jsonl"
    write_queue(queue, [QueueItem("q1", "first query", "c1", HOSTILE, {"doc_id": HOSTILE},
                                  {"bm25": 1}),
                        QueueItem("q1", "first query", "c2", "second chunk", {}, {"store": 2})])
    return queue, tmp_path / "judgments.jsonl"


def client(files: tuple[Path, Path]) -> TestClient:
    app = create_judge_app(files[0], files[1], judge="ana", token=TOKEN)
    return TestClient(app, base_url="http://127.0.0.1:8765")


def test_reads_and_writes_need_the_token(files: tuple[Path, Path]) -> None:
    c = client(files)
    assert c.get("/").status_code == 403
    assert c.get("/?token=wrong").status_code == 403
    assert c.post("/grade", json={"query_id": "q1", "id": "c1", "grade": 2}).status_code == 403
    assert c.post("/grade", json={"query_id": "q1", "id": "c1", "grade": 2},
                  headers={TOKEN_HEADER: "wrong"}).status_code == 403
    assert not files[1].exists()
    page = c.get(f"/?token={TOKEN}")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == judge_csp()
    assert "connect-src 'self'" in judge_csp() and "http" not in judge_csp()
    # the hostile chunk text is inert: only inside the escaped JSON data, never as markup
    assert HOSTILE not in page.text and "<img" not in page.text
    assert page.text.count("<script") == 2  # the data element and our own script


def test_foreign_hosts_and_origins_are_refused(files: tuple[Path, Path]) -> None:
    c = client(files)
    for host in ("evil.example:8765", "127.evil.example", "127.0.0.1.nip.io:8765"):
        r = c.get(f"/?token={TOKEN}", headers={"host": host})
        assert r.status_code == 421 and "the judging page refused the host name" in r.text
    r = c.post("/grade", json={"query_id": "q1", "id": "c1", "grade": 2},
               headers={TOKEN_HEADER: TOKEN, "origin": "http://evil.example"})
    assert r.status_code == 403 and not files[1].exists()


def test_grade_and_undo_are_saved(files: tuple[Path, Path]) -> None:
    c = client(files)
    h = {TOKEN_HEADER: TOKEN, "origin": "http://127.0.0.1:8765"}
    r = c.post("/grade", json={"query_id": "q1", "id": "c1", "grade": 3}, headers=h)
    assert r.status_code == 200 and r.json()["count"] == 1 and r.json()["total"] == 2
    r = c.post("/grade", json={"query_id": "q1", "id": "c2", "grade": 0}, headers=h)
    assert [(x["id"], x["grade"], x["judge"]) for x in read_judgment_records(files[1])] == [
        ("c1", 3, "ana"), ("c2", 0, "ana")]
    r = c.post("/undo", headers=h)
    assert r.json()["undone"] == {"query_id": "q1", "id": "c2"} and r.json()["count"] == 1
    assert len(read_judgment_records(files[1])) == 1
    for bad in ({"query_id": "q1", "id": "nope", "grade": 1},
                {"query_id": "q1", "id": "c1", "grade": 4},
                {"query_id": "q1", "id": "c1", "grade": True}, {"grade": 1}):
        assert c.post("/grade", json=bad, headers=h).status_code == 400
    assert c.post("/grade", content=b"{", headers=h).status_code == 400
    state = c.get(f"/state?token={TOKEN}").json()
    assert state["count"] == 1 and list(state["judged"].values()) == [3]
    # a new server over the same files resumes
    again = client(files).get(f"/state?token={TOKEN}").json()
    assert again == state
    assert json.loads(files[1].read_text().splitlines()[0])["source"] == "human"


def test_short_token_is_refused(files: tuple[Path, Path]) -> None:
    with pytest.raises(UsageError):
        create_judge_app(files[0], files[1], judge="ana", token="short")


@pytest.mark.parametrize("body", [
    b'{"query_id": "q1", "id": "c1", "grade": []}',
    b'{"query_id": "q1", "id": "c1", "grade": {}}',
    b'{"query_id": "q1", "id": "c1", "grade": "2"}',
    b'{"query_id": "q1", "id": "c1", "grade": 2.0}',
    b'{"query_id": "q1", "id": "c1", "grade": null}',
    b'{"query_id": ["q1"], "id": "c1", "grade": 1}',
    b'{"query_id": "q1", "id": 1, "grade": 1}', b"[]", b'"grade"', b"null", b"1e999",
    b"[" * 30_000 + b"]" * 30_000, b'{"a": ' * 9_000 + b"1" + b"}" * 9_000, b"\xff\xfe",
])
def test_malformed_grades_are_400_with_the_reason(files: tuple[Path, Path], body: bytes) -> None:
    c = client(files)
    h = {TOKEN_HEADER: TOKEN, "content-type": "application/json"}
    r = c.post("/grade", content=body, headers=h)
    assert r.status_code == 400, r.text
    assert r.json()["error"] in ("the body must be a JSON object {query_id, id, grade}",
                                 "query_id and id must be the strings of the pair shown",
                                 "a grade is 0, 1, 2 or 3")
    assert not files[1].exists()


def test_a_large_body_is_refused_unread(files: tuple[Path, Path]) -> None:
    c = client(files)
    r = c.post("/grade", content=b" " * (64 * 1024 + 1), headers={TOKEN_HEADER: TOKEN})
    assert r.status_code == 413 and "request body over 65,536 bytes" in r.text
    padded = json.dumps({"query_id": "q1", "id": "c1", "grade": 1}).encode() + b" " * 60_000
    assert c.post("/grade", content=padded, headers={TOKEN_HEADER: TOKEN}).status_code == 200


def test_a_grade_sent_twice_grades_the_pair_named_not_the_next(files: tuple[Path, Path]) -> None:
    c = client(files)
    h = {TOKEN_HEADER: TOKEN}
    for _ in range(2):  # a double key press: both requests name the pair that was shown
        r = c.post("/grade", json={"query_id": "q1", "id": "c1", "grade": 2}, headers=h)
        assert r.status_code == 200
    assert r.json()["count"] == 1 and r.json()["judged"] == {"q1\u0000c1": 2}
    assert [(x["id"], x["grade"]) for x in read_judgment_records(files[1])] == [("c1", 2)]
