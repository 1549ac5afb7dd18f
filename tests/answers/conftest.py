"""The example knowledge base, version 1 (examples/kb/corpus_v1.jsonl), ingested once into a
LanceDB store with the default embedder, as examples/demo.sh does; a local OpenAI-compatible chat
server playing the scripted generator and judge (tests/answers/scripted.py); and the files a gate
on answers reads."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.answers import scripted
from tests.clirun import cli
from tests.http_hosts import Answer, Host, Seen, json_answer, serving

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"
LABELS = KB / "answer_labels.jsonl"


@pytest.fixture(scope="session")
def kb_v1(tmp_path_factory: pytest.TempPathFactory) -> str:
    store = f"lancedb://{tmp_path_factory.mktemp('answers') / 'kb'}?table=chunks"
    code, _, err = cli("ingest", str(KB / "corpus_v1.jsonl"), "--store", store,
                         "--no-progress")
    assert code == 0, err
    return store


def golden_file(tmp: Path, ids: list[str], top_k: int = 10) -> Path:
    """The example's answer questions (examples/kb/golden_answers.yaml) named by ``ids``."""
    data = yaml.safe_load((KB / "golden_answers.yaml").read_text(encoding="utf-8"))
    data["queries"] = [q for q in data["queries"] if q["id"] in ids]
    data["top_k"] = top_k
    path = tmp / "golden.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def policy_file(tmp: Path, **rules: Any) -> Path:
    """The example's policy with answer rules added."""
    data = yaml.safe_load((KB / "policy.yaml").read_text(encoding="utf-8"))
    data.update(rules)
    path = tmp / "policy.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def completion(content: str) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}]}


Model = Callable[[str, str], str]


@pytest.fixture
def chat() -> Iterator[Callable[[Model], str]]:
    """``chat(model)`` serves ``model(system, user) -> reply`` as an OpenAI-compatible endpoint
    on 127.0.0.1 and returns its base URL."""
    with contextlib.ExitStack() as stack:
        def start(model: Model) -> str:
            def route(seen: Seen, host: Host) -> Answer:
                messages = {m["role"]: m["content"] for m in seen.json()["messages"]}
                return json_answer(completion(model(messages["system"], messages["user"])))

            return f"{stack.enter_context(serving(route)).url}/v1"

        yield start


@pytest.fixture
def scripted_chat(chat: Callable[[Model], str]) -> str:
    return chat(scripted.chat_reply)


@contextlib.contextmanager
def chat_with_usage(log: list[tuple[str, int, int]], usage: bool) -> Iterator[str]:
    """A chat endpoint; with ``usage`` each reply reports as prompt tokens the characters of its
    user message divided by 4 (whole) and as completion tokens its reply's words; ``log`` gets
    (system message, prompt tokens, completion tokens) for every request, in order."""
    def route(seen: Seen, host: Host) -> Answer:
        messages = {m["role"]: m["content"] for m in seen.json()["messages"]}
        reply = scripted.chat_reply(messages["system"], messages["user"])
        body: dict[str, Any] = completion(reply)
        counts = (len(messages["user"]) // 4, len(reply.split()))
        log.append((messages["system"], *counts))
        if usage:
            body["usage"] = {"prompt_tokens": counts[0], "completion_tokens": counts[1],
                             "total_tokens": sum(counts)}
        return json_answer(body)

    with serving(route) as host:
        yield f"{host.url}/v1"
