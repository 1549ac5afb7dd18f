"""Two judges serving the same judgments file at once, each with their own `recallwatch label
serve` process: grades sent to both servers at the same time are all in the file."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from recallwatch.formats.judging import QueueItem, read_judgment_records, write_queue
from recallwatch.web.judge import TOKEN_HEADER
from tests.web.conftest import serving

PAIRS = 24
JUDGES = ("ana", "bea")


def grade_of(judge: str, i: int) -> int:
    return (i * 5 + len(judge) + ord(judge[0])) % 4


@pytest.fixture
def queue(tmp_path: Path) -> Path:
    path = tmp_path / "queue.jsonl"
    write_queue(path, [QueueItem(f"q{i // 4}", f"query {i // 4}", f"c{i}", f"chunk {i}", {},
                                 {"store": i % 4 + 1}) for i in range(PAIRS)])
    return path


@pytest.fixture
def servers(queue: Path) -> Iterator[dict[str, tuple[str, str]]]:
    """Both judges' servers on one --out file: judge -> (address, token)."""
    out = queue.with_name("shared.judgments.jsonl")
    with ExitStack() as stack:
        found = {}
        for judge in JUDGES:
            _, match = stack.enter_context(serving(
                ["label", "serve", str(queue), "--judge", judge, "--out", str(out), "--port", "0"],
                r"open (http://127\.0\.0\.1:\d+/)\?token=(\S+)"))
            found[judge] = (match.group(1), match.group(2))
        yield found


def test_two_judges_on_one_file_lose_nothing(queue: Path,
                                             servers: dict[str, tuple[str, str]]) -> None:
    out = queue.with_name("shared.judgments.jsonl")
    start = threading.Barrier(len(JUDGES))
    errors: list[str] = []

    def judge_all(judge: str) -> None:
        url, token = servers[judge]
        with httpx.Client(base_url=url, headers={TOKEN_HEADER: token}, timeout=30) as c:
            start.wait()
            for i in range(PAIRS):
                r = c.post("grade", json={"query_id": f"q{i // 4}", "id": f"c{i}",
                                          "grade": grade_of(judge, i)})
                if r.status_code != 200:
                    errors.append(f"{judge} {i}: {r.status_code} {r.text}")
            r = c.post("undo")  # take back the last one, then grade it again
            r = c.post("grade", json={"query_id": f"q{(PAIRS - 1) // 4}", "id": f"c{PAIRS - 1}",
                                      "grade": grade_of(judge, PAIRS - 1)})
            if r.status_code != 200:
                errors.append(f"{judge} regrade: {r.status_code}")

    threads = [threading.Thread(target=judge_all, args=(j,)) for j in JUDGES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    records = read_judgment_records(out)
    assert len(records) == PAIRS * len(JUDGES)
    assert {(r["judge"], r["id"]): r["grade"] for r in records} == {
        (j, f"c{i}"): grade_of(j, i) for j in JUDGES for i in range(PAIRS)}
    for judge in JUDGES:  # each page sees its own judge's grades, all of them
        url, token = servers[judge]
        state = httpx.get(url + "state", params={"token": token}, timeout=30).json()
        assert state["count"] == PAIRS
        for host in ("127.evil.example", "127.0.0.1.nip.io"):  # the real server's Host check
            r = httpx.get(url + "state", params={"token": token}, headers={"host": host},
                          timeout=30)
            assert r.status_code == 421 and "count" not in r.text
        r = httpx.post(url + "grade", content=b"{" * (65 * 1024), timeout=30,
                       headers={TOKEN_HEADER: token})
        assert r.status_code == 413
