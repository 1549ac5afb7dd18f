"""Hostile HTTP endpoints and settings against the commands that make requests (gate --pipeline
with an http: retriever, golden generate --llm, online judge, ingest with the openai-http
embedder, ops monitor --webhook): every one is refused with exit 2 and one located ``Error:``
line, never an internal error or a traceback; the key given for a host is in no output and never
reaches another host.

In-process (tests/clirun.py) against local servers, and small, so it runs in the default suite."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.clirun import cli
from tests.http_hosts import Host, json_answer, redirect, serving, stall, trickle

KEY = "sk-hostile-http-0451"
CORPUS = Path(__file__).resolve().parents[2] / "examples" / "first-hour" / "chunks.jsonl"


class World:
    """The servers and files the cases use: ``other`` must never receive a request."""

    def __init__(self, d: Path, other: Host, to_other: Host, to_localhost: Host, stalled: Host,
                 endless: Host, long_location: Host) -> None:
        self.dir, self.other, self.to_other, self.to_localhost = d, other, to_other, to_localhost
        self.stalled, self.endless, self.long_location = stalled, endless, long_location
        self.golden = d / "golden.yaml"
        self.golden.write_text(json.dumps({"name": "g", "queries": [
            {"id": "q1", "text": "where is my parcel", "expected": ["a"]}]}), encoding="utf-8")
        self.qrels, self.pairs = d / "h.qrels", d / "pairs.jsonl"
        self.qrels.write_text("q1 0 d1 2\n", encoding="utf-8")
        self.pairs.write_text(json.dumps({"query_id": "q1", "query": "q", "id": "d1",
                                          "text": "t"}) + "\n", encoding="utf-8")
        self.count = 0

    def gate(self, retriever: str) -> list[str]:
        """gate on a pipeline of one retriever (the YAML lines under its name)."""
        self.count += 1
        pipeline = self.dir / f"pipeline{self.count}.yaml"
        pipeline.write_text(f"retrievers:\n  api:\n{retriever}", encoding="utf-8")
        return ["gate", str(self.golden), "--pipeline", str(pipeline), "--no-history"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with serving(lambda s, h: json_answer({"hits": []})) as other, \
            serving(lambda s, h: redirect(302, other.url + s.path)) as to_other, \
            serving(lambda s, h: redirect(308, f"http://localhost:{h.port}{s.path}")) as to_lh, \
            serving(stall) as stalled, serving(trickle) as endless, \
            serving(lambda s, h: redirect(302, "/" + "x" * 10_000)) as long_location:
        yield World(tmp_path_factory.mktemp("hostile_http"), other, to_other, to_lh, stalled,
                    endless, long_location)


def _spec(url: str, *more: str) -> str:
    return f"    spec: {url}/search\n    api_key_env: RW_HOSTILE_KEY\n    retries: 0\n" + "".join(
        f"    {line}\n" for line in more)


CASES: dict[str, Callable[[World], list[str]]] = {
    # a redirect: to another port, to localhost for 127.0.0.1, asked or not, far too long
    "retriever 302 to another host": lambda w: w.gate(_spec(w.to_other.url)),
    "retriever same-host, 302 to another host": lambda w: w.gate(
        _spec(w.to_other.url, "redirects: same-host")),
    "retriever same-host, 308 to localhost": lambda w: w.gate(
        _spec(w.to_localhost.url, "redirects: same-host")),
    "retriever redirect to a 10 kB Location": lambda w: w.gate(_spec(w.long_location.url)),
    # an endpoint that never answers, or never ends its answer
    "retriever stalled": lambda w: w.gate(_spec(w.stalled.url, "timeout: 0.1")),
    "retriever endless answer": lambda w: w.gate(_spec(w.endless.url, "timeout: 0.2")),
    # settings that cannot work
    "retriever password with #": lambda w: w.gate(
        f"    spec: http://svc:{KEY}#x@127.0.0.1:9/search\n"),
    "retriever port 99999": lambda w: w.gate("    spec: http://127.0.0.1:99999/search\n"),
    "retriever broken IPv6": lambda w: w.gate("    spec: http://[::1/search\n"),
    "retriever redirects: always": lambda w: w.gate(_spec(w.other.url, "redirects: always")),
    "retriever timeout .nan": lambda w: w.gate(_spec(w.other.url, "timeout: .nan")),
    "retriever timeout .inf": lambda w: w.gate(_spec(w.other.url, "timeout: .inf")),
    "retriever retries 1e9": lambda w: w.gate(_spec(w.other.url).replace(
        "retries: 0", "retries: 1000000000")),
    "retriever concurrency 0.5": lambda w: w.gate(_spec(w.other.url, "concurrency: 0.5")),
    "retriever password_env, no user": lambda w: w.gate(
        f"    spec: {w.other.url}/search\n    password_env: RW_HOSTILE_KEY\n"),
    "retriever user:password and api_key_env": lambda w: w.gate(
        _spec(w.other.url.replace("://", "://u:p@"))),
    # the language model's endpoint
    "golden generate --llm 302 to another host": lambda w: [
        "golden", "generate", str(CORPUS), "--llm", f"{w.to_other.url}/v1", "--model", "m",
        "--out", str(w.dir / "g.yaml"), "--sample", "1", "--api-key-env", "RW_HOSTILE_KEY"],
    "golden generate --timeout nan": lambda w: [
        "golden", "generate", str(CORPUS), "--llm", f"{w.other.url}/v1", "--model", "m",
        "--out", str(w.dir / "g.yaml"), "--timeout", "nan"],
    "online judge --base-url 308 to localhost": lambda w: [
        "online", "judge", str(w.pairs), "--qrels", str(w.qrels), "--base-url",
        f"{w.to_localhost.url}/v1", "--model", "m", "--api-key-env", "RW_HOSTILE_KEY"],
    "online judge --timeout 0": lambda w: [
        "online", "judge", str(w.pairs), "--qrels", str(w.qrels), "--base-url",
        f"{w.other.url}/v1", "--model", "m", "--timeout", "0"],
    # the embedder and the webhook
    "ingest openai-http 302 to another host": lambda w: [
        "ingest", str(CORPUS), "--store", f"lancedb://{w.dir / 'kb'}?table=t", "--no-progress",
        "--embedder", f"openai-http?base_url={w.to_other.url}/v1&model=m"
        "&api_key_env=RW_HOSTILE_KEY"],
    "monitor --webhook port 99999": lambda w: [
        "ops", "monitor", "--store", f"lancedb://{w.dir / 'none'}?table=t", "--probes",
        str(w.dir / "p.npy"), "--webhook", f"http://hook:{KEY}@127.0.0.1:99999/x",
        "--no-history"],
}


@pytest.mark.parametrize("case", CASES)
def test_hostile_http_is_a_located_error(case: str, world: World,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RW_HOSTILE_KEY", KEY)
    code, out, err = cli(*CASES[case](world))
    assert "Internal error" not in err and "Traceback" not in err + out, err
    assert code == 2, (out, err)
    assert err.startswith("Error: ") and err.count("\n") == 1, err
    assert len(err) < 1_500, err  # a 10 kB Location is shown cut
    assert KEY not in out + err
    assert world.other.seen == []
    assert not [s for s in world.to_localhost.seen if s.host.startswith("localhost")]
