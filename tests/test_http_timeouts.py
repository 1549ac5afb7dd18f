"""An endpoint that does not answer: the message names the request, the retriever, the pipeline
file and the setting to raise; an answer that trickles without end is abandoned; ``golden
generate`` and ``online judge`` take ``--timeout``. Against real local servers that stall (they
answer only when the test ends), so no assertion depends on how fast the machine is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from recallwatch.errors import RetrieverError
from recallwatch.retrievers import open_retriever
from tests.clirun import cli
from tests.http_hosts import Host, serving, stall, trickle

CORPUS = Path(__file__).resolve().parents[1] / "examples" / "first-hour" / "chunks.jsonl"


@pytest.fixture
def stalled() -> Iterator[Host]:
    with serving(stall) as host:
        yield host


def test_a_retriever_timeout_names_the_retriever_the_file_and_the_setting(
        stalled: Host, tmp_path: Path) -> None:
    golden = tmp_path / "golden.yaml"
    golden.write_text(json.dumps({"name": "g", "queries": [
        {"id": "q1", "text": "where is my parcel", "expected": ["a"]}]}), encoding="utf-8")
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(f"retrievers:\n  shop:\n    spec: {stalled.url}/search\n"
                        "    timeout: 0.2\n    retries: 1\n    backoff: 0\n", encoding="utf-8")
    code, out, err = cli("gate", str(golden), "--pipeline", str(pipeline), "--no-history")
    assert (code, out) == (2, "")
    assert err == (f"Error: pipeline {pipeline}: cannot reach {stalled.url}/search after 2 "
                   "attempts: timed out (no answer within 0.2 s), for query 'where is my "
                   "parcel' (retriever 'shop'); if the service is only slow, raise the "
                   "retriever's timeout: (seconds, now 0.2)\n")
    assert len(stalled.seen) == 2


def test_an_answer_that_never_ends_is_abandoned() -> None:
    with serving(trickle) as host:
        r = open_retriever(f"{host.url}/search", name="api",
                           options={"timeout": 0.3, "retries": 0})
        with pytest.raises(RetrieverError) as err:
            r.search(["q"], 3)
    assert str(err.value) == (f"cannot reach {host.url}/search after 1 attempt: timed out (no "
                              "answer within 0.3 s), for query 'q' (retriever 'api'); if the "
                              "service is only slow, raise the retriever's timeout: (seconds, "
                              "now 0.3)")


def test_golden_generate_waits_as_long_as_timeout_says(stalled: Host, tmp_path: Path) -> None:
    out = tmp_path / "g.yaml"
    code, _, err = cli("golden", "generate", str(CORPUS), "--llm", f"{stalled.url}/v1",
                       "--model", "m", "--out", str(out), "--sample", "1", "--timeout", "0.1")
    assert code == 2 and not out.exists()
    assert err == (f"Error: cannot reach {stalled.url}/v1/chat/completions after 4 attempts: "
                   "timed out (no answer within 0.1 s), for model 'm'; if the endpoint is only "
                   "slow, raise --timeout (seconds, now 0.1)\n")
    assert len(stalled.seen) == 4  # the first request and 3 retries, each given up after 0.1 s


@pytest.mark.parametrize("value", ["nan", "0", "-1", "inf", "1e9"])
@pytest.mark.parametrize("command", ["golden generate", "online judge"])
def test_a_timeout_that_cannot_work_is_refused(command: str, value: str,
                                               tmp_path: Path) -> None:
    qrels, pairs = tmp_path / "h.qrels", tmp_path / "pairs.jsonl"
    qrels.write_text("q1 0 d1 2\n", encoding="utf-8")
    pairs.write_text(json.dumps({"query_id": "q1", "query": "q", "id": "d1", "text": "t"})
                     + "\n", encoding="utf-8")
    args = {"golden generate": ["golden", "generate", str(CORPUS), "--llm",
                                "http://127.0.0.1:9/v1", "--out", str(tmp_path / "g.yaml")],
            "online judge": ["online", "judge", str(pairs), "--qrels", str(qrels),
                             "--base-url", "http://127.0.0.1:9/v1"]}[command]
    code, out, err = cli(*args, "--model", "m", "--timeout", value)
    assert (code, out) == (2, "")
    assert err == (f"Error: --timeout must be a number of seconds from 0.001 to 3600, found "
                   f"{float(value)!r}\n")
