"""The LLM judge's protocol against a canned chat-completions server on 127.0.0.1: the request,
the key from the environment, strict parsing, refusal below the kappa floor, retries, provenance.
Nothing here says anything about any model's quality."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from recallwatch.errors import JudgeError, UsageError
from recallwatch.judgments.llm_judge import (
    PROMPT_VERSION,
    SYSTEM_PROMPT,
    JudgePair,
    LLMJudge,
    parse_reply,
    run_judge,
)

Reply = Callable[[dict[str, Any]], tuple[int, Any]]


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, Any]], list[Reply]]]:
    """A chat-completions endpoint answering with whatever the test puts in ``replies[0]``."""
    requests: list[dict[str, Any]] = []
    replies: list[Reply] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            requests.append({"path": self.path, "auth": self.headers.get("Authorization"),
                             "body": body})
            status, answer = replies[0](body)
            data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", requests, replies
    httpd.shutdown()
    httpd.server_close()


def completion(content: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}


def grade_from_passage(body: dict[str, Any]) -> tuple[int, Any]:
    """Canned: the passage text ends with the grade to answer (or a bad reply)."""
    text = body["messages"][1]["content"]
    return 200, completion(text.rsplit("ANSWER:", 1)[1])


PAIRS = [JudgePair("q1", "iva reducido", f"d{i}", f"passage {i} ANSWER:{g}")
         for i, g in enumerate(["3", "2", "0", "1", "3", "0", " 2\n", "1", "0", "3"])]
HUMAN = {("q1", f"d{i}"): g for i, g in enumerate([3, 2, 0, 1, 3, 0])}


def test_strict_parsing() -> None:
    assert parse_reply("2").grade == 2 and parse_reply(" 3\n").grade == 3
    for bad in ["", "4", "2.", "Grade: 2", "2 (partially)", "two", "12", "-1"]:
        reply = parse_reply(bad)
        assert reply.grade is None and reply.problem == "not a single digit 0-3", bad


def test_request_shape_and_key_from_the_environment(
        server: tuple[str, list[dict[str, Any]], list[Reply]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    url, requests, replies = server
    replies.append(grade_from_passage)
    monkeypatch.setenv("RW_TEST_JUDGE_KEY", "sk-test-123")
    judge = LLMJudge(url, "tiny-model", api_key_env="RW_TEST_JUDGE_KEY")
    assert judge.grade("iva", "text ANSWER:2").grade == 2
    sent = requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == "Bearer sk-test-123"
    body = sent["body"]
    assert body["model"] == "tiny-model" and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1]["content"] == "Query: iva\n\nPassage:\ntext ANSWER:2"
    spec = judge.spec()
    assert spec["api_key_env"] == "RW_TEST_JUDGE_KEY" and "sk-test" not in json.dumps(spec)
    assert spec["prompt_version"] == PROMPT_VERSION
    monkeypatch.delenv("RW_TEST_JUDGE_KEY")
    with pytest.raises(UsageError, match=r"read from \$RW_TEST_JUDGE_KEY, which is not set"):
        judge.grade("iva", "text ANSWER:2")


def test_agreeing_judge_labels_only_unjudged_pairs(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, requests, replies = server
    replies.append(grade_from_passage)
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN, min_kappa=0.6, min_pairs=5)
    assert run.accepted and run.calibration is not None and run.calibration.kappa == 1.0
    assert run.calibration_pairs == 6 and run.requests == 10 and run.bad_replies == 0
    assert [(j.id, j.grade, j.source) for j in run.judgments.judgments] == [
        ("d6", 2, "llm:m"), ("d7", 1, "llm:m"), ("d8", 0, "llm:m"), ("d9", 3, "llm:m")]
    assert len(requests) == 10


def test_disagreeing_judge_is_refused_before_labelling_anything(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, requests, replies = server
    replies.append(lambda body: (200, completion("3")))  # always 3
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN, min_kappa=0.6, min_pairs=5)
    assert not run.accepted and run.judgments.judgments == []
    assert "agreement with human judgments is too low" in run.reasons[0]
    assert run.calibration is not None and run.calibration.kappa < 0.6
    assert run.calibration.confusion[0] == [0, 0, 0, 2]  # both human 0s graded 3
    assert len(requests) == 6  # only the calibration pairs were sent


def test_bad_replies_are_counted_not_guessed(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, _, replies = server
    replies.append(lambda body: (200, completion("I think 2")))
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN)
    assert not run.accepted and run.bad_replies == 6
    assert "6 of 6 replies" in run.reasons[0]
    assert run.to_dict()["bad_reply_examples"][0]["reply"] == "I think 2"


def test_too_few_human_judged_pairs_means_no_use(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, _, replies = server
    replies.append(grade_from_passage)
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN)  # 6 pairs < the default 30
    assert not run.accepted and "only 6 human-judged pairs" in run.reasons[0]
    assert run.calibration is not None and run.calibration.kappa == 1.0


def test_no_human_labels_means_no_use(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, requests, replies = server
    replies.append(grade_from_passage)
    run = run_judge(LLMJudge(url, "m"), PAIRS, {})
    assert not run.accepted and "cannot be measured" in run.reasons[0] and requests == []


def test_retries_then_errors(server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, requests, replies = server
    calls = {"n": 0}

    def flaky(body: dict[str, Any]) -> tuple[int, Any]:
        calls["n"] += 1
        return (503, {"error": {"message": "busy"}}) if calls["n"] < 3 else (200, completion("1"))

    replies.append(flaky)
    judge = LLMJudge(url, "m", retry_wait=0.001)
    assert judge.grade("q", "t").grade == 1 and len(requests) == 3
    replies[0] = lambda body: (400, {"error": {"message": "unknown model m"}})
    with pytest.raises(JudgeError, match="answered HTTP 400 for model 'm': unknown model m"):
        judge.grade("q", "t")
    replies[0] = lambda body: (200, {"data": []})
    with pytest.raises(JudgeError, match=r"did not answer with a chat completion"):
        judge.grade("q", "t")
    replies[0] = lambda body: (200, b"<html>")
    with pytest.raises(JudgeError, match="not JSON"):
        judge.grade("q", "t")


def test_the_prompt_in_the_docs_is_the_prompt_in_the_code() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "online.md").read_text()
    for line in SYSTEM_PROMPT.splitlines():
        assert line in docs, line
    assert PROMPT_VERSION in docs


def test_tokens_are_summed_from_the_replies_usage_and_unreported_ones_are_said(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    """The server reports i + 10 prompt tokens and 1 completion token for its i-th request
    (0-based), but no usage at all on the 3rd: 10 requests, 9 reported, prompt tokens
    (10 + 11 + 13 + 14 + … + 19) = 145 - 12 = 133, completion tokens 9."""
    url, requests, replies = server

    def with_usage(body: dict[str, Any]) -> tuple[int, Any]:
        status, answer = grade_from_passage(body)
        i = len(requests) - 1
        if i != 2:
            answer["usage"] = {"prompt_tokens": i + 10, "completion_tokens": 1,
                               "total_tokens": i + 11}
        return status, answer

    replies.append(with_usage)
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN, min_kappa=0.6, min_pairs=5)
    assert run.tokens.to_dict() == {
        "requests": 10, "reported": 9, "input_tokens": 133, "output_tokens": 9,
        "note": "1 of 10 replies did not report their tokens (no usage field): the counts cover "
                "the others"}
    assert run.to_dict()["tokens"]["input_tokens"] == 133


def test_tokens_without_any_usage_are_not_reported(
        server: tuple[str, list[dict[str, Any]], list[Reply]]) -> None:
    url, _, replies = server
    replies.append(grade_from_passage)
    run = run_judge(LLMJudge(url, "m"), PAIRS, HUMAN, min_kappa=0.6, min_pairs=5)
    assert run.tokens.line() == "not reported: none of the 10 replies had a usage field"
    assert run.to_dict()["tokens"]["input_tokens"] is None
