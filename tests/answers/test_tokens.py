"""Tokens counted where a language model is called by the gate's answer step, from the
``usage`` field of an OpenAI-compatible reply (a local server, in a thread, playing the scripted
generator and judge), and priced: the cost of the generator's answers checked against the
tokens the server itself says it reported."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from recallwatch.answers import generate
from tests.answers.conftest import LABELS, chat_with_usage, golden_file
from tests.clirun import wide_cli as cli

QUESTIONS = ["smi_2025", "tarifa_plana", "modelo_190"]
PRICES = "currency: EUR\nllm_input_per_1k_tokens: 0.5\nllm_output_per_1k_tokens: 2.0\n"


def _gate(tmp_path: Path, kb: str, url: str, *extra: str) -> dict[str, Any]:
    (tmp_path / "prices.yaml").write_text(PRICES, encoding="utf-8")
    code, out, err = cli("gate", str(golden_file(tmp_path, QUESTIONS, top_k=2)), "--store", kb,
                         "--generator", f"{url}?model=scripted", "--answer-labels", str(LABELS),
                         "--prices", str(tmp_path / "prices.yaml"), "--no-history",
                         "--format", "json", *extra)
    assert code in (0, 1), err or out
    return dict(json.loads(out))


@pytest.mark.parametrize("judge", ["offline", "llm"])
def test_the_answers_tokens_are_what_the_server_reported_and_are_priced(
        kb_v1: str, tmp_path: Path, judge: str) -> None:
    log: list[tuple[str, int, int]] = []
    with chat_with_usage(log, usage=True) as url:
        extra = ("--answer-judge", f"{url}?model=judge") if judge == "llm" else ()
        res = _gate(tmp_path, kb_v1, url, *extra)
    # the generator answers each question from the retrieved chunks, then from the expected
    # ones: its requests come in pairs, the first of each pair the answer served
    asked = [(i, o) for system, i, o in log if system == generate.SYSTEM_PROMPT]
    served, oracle = asked[0::2], asked[1::2]
    assert len(served) == len(QUESTIONS)
    tokens = res["answers"]["tokens"]
    assert tokens["answers"] == {"requests": 3, "reported": 3,
                                 "input_tokens": sum(i for i, _ in served),
                                 "output_tokens": sum(o for _, o in served), "note": None}
    assert (tokens["oracle"]["input_tokens"], tokens["oracle"]["output_tokens"]) == (
        sum(i for i, _ in oracle), sum(o for _, o in oracle))
    judged = [(i, o) for system, i, o in log if system != generate.SYSTEM_PROMPT]
    if judge == "llm":
        assert tokens["judge"]["requests"] == len(judged)
        assert tokens["judge"]["input_tokens"] == sum(i for i, _ in judged)
    else:
        assert tokens["judge"] is None and judged == []
    # priced: 1,000 answers at the mean tokens of an answer served, per 1,000 tokens
    costs = {i["item"]: i["cost"] for i in res["money"]["items"]}
    assert math.isclose(costs["LLM input tokens"],
                        1000 * sum(i for i, _ in served) / 3 / 1000 * 0.5)
    assert math.isclose(costs["LLM output tokens"],
                        1000 * sum(o for _, o in served) / 3 / 1000 * 2.0)


def test_a_server_without_usage_is_not_reported_and_not_priced(kb_v1: str,
                                                               tmp_path: Path) -> None:
    with chat_with_usage([], usage=False) as url:
        res = _gate(tmp_path, kb_v1, url)
    assert res["answers"]["tokens"]["answers"]["note"] == (
        "not reported: none of the 3 replies had a usage field")
    assert res["money"]["not_priced"]["LLM input tokens"] == (
        "not reported: none of the 3 replies had a usage field")
    assert res["money"]["complete"] is False


def test_a_python_generator_does_not_report_tokens(kb_v1: str, tmp_path: Path) -> None:
    (tmp_path / "prices.yaml").write_text(PRICES, encoding="utf-8")
    code, out, err = cli("gate", str(golden_file(tmp_path, QUESTIONS, top_k=2)), "--store",
                         kb_v1, "--generator", "python:tests.answers.scripted:answer",
                         "--answer-labels", str(LABELS), "--prices",
                         str(tmp_path / "prices.yaml"), "--no-history", "--format", "json")
    assert code in (0, 1), err
    res = json.loads(out)
    why = "the generator is python code: what its model spends is not seen from here"
    assert res["answers"]["tokens"]["answers"] is None
    assert res["answers"]["tokens"]["answers_note"] == why
    assert res["money"]["not_priced"]["LLM output tokens"] == why
