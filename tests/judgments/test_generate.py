"""`recallwatch golden generate` against a stand-in chat-completions server on 127.0.0.1 (real
HTTP, canned OpenAI-compatible answers): questions anchored to their chunk by content, marked
`source: generated`, bad replies counted and skipped, the key read from the environment and
never written, and the gate telling generated queries apart."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.gate import run_gate
from recallwatch.formats.corpus import read_corpus
from recallwatch.formats.golden import load_golden, normalise_quote
from recallwatch.formats.results import RankedList
from recallwatch.judgments.generate import (
    MAX_QUESTION_CHARS,
    QUOTE_CHARS,
    anchor_quote,
    parse_questions,
)
from tests.clirun import wide_cli as cli
from tests.judgments.test_llm_judge import Reply, completion, server  # noqa: F401 (the fixture)

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "first-hour" / "chunks.jsonl"
Server = tuple[str, list[dict[str, Any]], list[Reply]]


def questions_about_the_passage(body: dict[str, Any]) -> tuple[int, Any]:
    """Canned: as many questions as the system prompt asks for, each naming the passage's
    first word, so a test can tell which chunk a question came from."""
    passage = body["messages"][1]["content"]
    n = int(body["messages"][0]["content"].split("Write ", 1)[1].split(" ", 1)[0])
    word = passage.split()[0].rstrip(":")
    return 200, completion(json.dumps({"questions": [f"What about {word} ({i})?"
                                                     for i in range(1, n + 1)]}))


def test_questions_anchored_to_their_chunk_and_marked_generated(
        server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    url, requests, replies = server
    replies.append(questions_about_the_passage)
    monkeypatch.setenv("RW_TEST_LLM_KEY", "sk-secret-123")
    out = tmp_path / "candidates.yaml"
    code, stdout, err = cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m1",
                            "--out", str(out), "--sample", "4", "--per-chunk", "2",
                            "--api-key-env", "RW_TEST_LLM_KEY", "--seed", "3")
    assert code == 0, stdout + err
    assert f"wrote {out}: 8 candidate questions from 4 sampled chunks" in stdout
    assert len(requests) == 4
    assert all(r["path"] == "/v1/chat/completions" and r["auth"] == "Bearer sk-secret-123"
               and r["body"]["model"] == "m1" and r["body"]["temperature"] == 0
               for r in requests)
    text = out.read_text(encoding="utf-8")
    assert "sk-secret" not in text and "review every one" in text
    golden = load_golden(out)
    assert len(golden.queries) == 8
    chunks = {c.id: c for c in read_corpus(CORPUS)}
    for q in golden.queries:
        assert q.extra.get("source") == "generated" and q.expected == ()
        (anchor,) = q.anchors
        # the anchor resolves to the chunk the question was written from, and to no other
        holders = [c for c in chunks.values() if c.doc_id == anchor.doc_id
                   and normalise_quote(anchor.quote) in normalise_quote(c.text)]
        assert len(holders) == 1
        source = holders[0]
        assert q.id.startswith(f"gen_{source.id}_")
        assert q.text.startswith(f"What about {source.text.split()[0].rstrip(':')} (")
        assert q.domain == source.domain
    # the same seed draws the same chunks
    again = tmp_path / "again.yaml"
    assert cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m1", "--out",
               str(again), "--sample", "4", "--per-chunk", "2", "--api-key-env",
               "RW_TEST_LLM_KEY", "--seed", "3")[0] == 0
    assert [q.id for q in load_golden(again).queries] == [q.id for q in golden.queries]


def test_the_gate_counts_generated_queries_in_a_warning(
        server: Server, tmp_path: Path) -> None:  # noqa: F811
    url, _, replies = server
    replies.append(questions_about_the_passage)
    out = tmp_path / "g.yaml"
    assert cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m", "--out",
               str(out), "--sample", "3")[0] == 0
    golden = load_golden(out)
    corpus = {c.id: c for c in read_corpus(CORPUS)}
    ids = list(corpus)
    results = {q.id: RankedList(ids, np.linspace(0.9, 0.1, len(ids))) for q in golden.queries}
    result = run_gate(golden, results=results, corpus=corpus)
    assert any(w.startswith("3 of 3 queries were written by a language model "
                            "(`source: generated`)") for w in result.warnings)


def test_bad_replies_are_counted_and_skipped_and_none_at_all_writes_nothing(
        server: Server, tmp_path: Path) -> None:  # noqa: F811
    url, requests, replies = server

    def every_other(body: dict[str, Any]) -> tuple[int, Any]:
        if len(requests) % 2:
            return 200, completion("Sure! Here are some questions: 1. What?")
        return questions_about_the_passage(body)

    replies.append(every_other)
    out = tmp_path / "g.yaml"
    code, stdout, _ = cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m",
                          "--out", str(out), "--sample", "4")
    assert code == 0
    assert "2 candidate questions from 4 sampled chunks" in stdout
    assert "no usable reply for 2 chunk(s): " in stdout
    assert len(load_golden(out).queries) == 2
    replies[0] = lambda body: (200, completion("not json"))
    none = tmp_path / "none.yaml"
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m",
                       "--out", str(none), "--sample", "2")
    assert code == 2 and "no usable reply from model 'm'" in err and not none.exists()


def test_a_question_longer_than_the_cap_is_left_out_and_its_chunk_named(
        server: Server, tmp_path: Path) -> None:  # noqa: F811
    """A hostile endpoint's 8 MB "question" never reaches the golden file; a question of exactly
    the cap does."""
    url, requests, replies = server
    lengths = [8 * 1024 * 1024, MAX_QUESTION_CHARS, 30, MAX_QUESTION_CHARS + 1]

    def sized(body: dict[str, Any]) -> tuple[int, Any]:
        n = lengths[len(requests) - 1]
        return 200, completion(json.dumps({"questions": ["x" * (n - 1) + "?"]}))

    replies.append(sized)
    out = tmp_path / "g.yaml"
    code, stdout, err = cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m",
                            "--out", str(out), "--sample", "4")
    assert code == 0, err
    picked = [r["body"]["messages"][1]["content"] for r in requests]
    chunks = {c.text[:4000]: c.id for c in read_corpus(CORPUS)}
    first, last = chunks[picked[0]], chunks[picked[3]]
    assert stdout.splitlines()[1] == (
        "left out 2 question(s) longer than 1,000 characters: chunk "
        f"{first} (8,388,608 characters), chunk {last} (1,001 characters)")
    golden = load_golden(out)
    assert sorted(len(q.text) for q in golden.queries) == [30, MAX_QUESTION_CHARS]
    text = out.read_text(encoding="utf-8")
    assert len(text) < 10_000 and f"# left out 2 question(s) longer than 1,000 characters: " \
        f"chunk {first} (8,388,608 characters)" in text
    replies[0] = lambda body: (200, completion(json.dumps({"questions": ["y" * 5000]})))
    none = tmp_path / "none.yaml"
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", url, "--model", "m",
                       "--out", str(none), "--sample", "1")
    assert code == 2 and not none.exists()
    assert err.startswith("Error: no usable reply from model 'm' at ") and err.endswith(
        "nothing written; left out 1 question(s) longer than 1,000 characters: chunk "
        f"{chunks[requests[-1]['body']['messages'][1]['content']]} (5,000 characters)\n")


def test_an_unset_key_and_a_bad_url_are_usage_errors(tmp_path: Path) -> None:
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", "localhost:1", "--model",
                       "m", "--out", str(tmp_path / "g.yaml"))
    assert code == 2 and "must start with http:// or https://" in err
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", "http://127.0.0.1:9/v1",
                       "--model", "m", "--out", str(tmp_path / "g.yaml"), "--api-key-env",
                       "RW_TEST_UNSET_KEY_VAR")
    assert code == 2 and "$RW_TEST_UNSET_KEY_VAR, which is not set" in err


def test_parsing_and_quotes() -> None:
    assert parse_questions('{"questions": ["a  b?", "c?", "d?"]}', 2) == ["a b?", "c?"]
    assert parse_questions('```json\n{"questions": ["a?"]}\n```', 1) == ["a?"]
    for bad in [None, "", "a?", "[]", '{"questions": []}', '{"questions": [1]}',
                '{"q": ["a?"]}', '{"questions": ["  "]}']:
        assert parse_questions(bad, 1) is None, bad
    assert anchor_quote("First one.  Second one.") == "First one."
    long = "word " * 100
    quote = anchor_quote(long)
    assert len(quote) <= QUOTE_CHARS and quote.endswith("word") and long.startswith(quote)
