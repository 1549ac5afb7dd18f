"""The cost in money of serving 1,000 queries: the arithmetic against a hand computation, the
gate's figures on a results file (no latency: compute and storage not priced), and bad prices
files refused with located errors."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.money import Serving, gate_serving, money_lines, price_serving
from recallwatch.formats.prices import Prices, load_prices
from recallwatch.report import md_escape
from recallwatch.report.html import to_html
from recallwatch.report.markdown import to_markdown
from recallwatch.report.terminal import print_report
from tests.clirun import cli

from .helpers import golden, ranked

PRICES = Prices(currency="EUR", vcpu_hour=0.04, memory_gb_month=3.0, disk_gb_month=0.1,
                embedding_per_1k_tokens=0.00002, llm_input_per_1k_tokens=0.00015,
                llm_output_per_1k_tokens=0.0006, source="prices.yaml")
# 2 ms of one vCPU per query, 1 GB (2^30 bytes) in memory and 2 GB on disk, 40 embedding tokens,
# 500 prompt and 100 completion tokens per query.
SERVING = Serving(seconds_per_query=0.002, vcpu_seconds_per_query=0.002, memory_bytes=2**30,
                  disk_bytes=2 * 2**30, embedding_tokens_per_query=40,
                  llm_input_tokens_per_query=500, llm_output_tokens_per_query=100)
# By hand: the 1,000 queries take 1000 × 0.002 s = 2 s = 2/3600 h.
HOURS = 2 / 3600
BY_HAND = {
    "compute": HOURS * 0.04,                     # 2.2222e-05
    "memory": 1 * HOURS / 730 * 3.0,             # 2.2831e-06
    "disk": 2 * HOURS / 730 * 0.1,               # 1.5221e-07
    "embedding tokens": 40_000 / 1000 * 0.00002,  # 0.0008
    "LLM input tokens": 500_000 / 1000 * 0.00015,  # 0.075
    "LLM output tokens": 100_000 / 1000 * 0.0006,  # 0.06
}


def test_each_item_and_the_total_match_a_hand_computation() -> None:
    money = price_serving(PRICES, SERVING)
    costs = {i["item"]: i["cost"] for i in money["items"]}
    assert costs.keys() == BY_HAND.keys()
    for item, expected in BY_HAND.items():
        assert math.isclose(costs[item], expected, rel_tol=1e-12), item
    assert math.isclose(money["total"], 0.13582466, rel_tol=1e-7)
    assert money["complete"] is True and money["not_priced"] == {}


def test_the_arithmetic_is_shown_step_by_step() -> None:
    lines = money_lines(price_serving(PRICES, SERVING))
    assert lines == [
        "cost of serving 1,000 queries at your prices (prices.yaml): 0.1358 EUR",
        "  compute: 1,000 queries × 2 vCPU-ms = 0.0005556 vCPU-hours × 0.04 = 2.222e-05",
        "  memory: 1 GB × 0.0005556 hours (1,000 queries × 2 ms) / 730 hours a month × 3 = "
        "2.283e-06",
        "  disk: 2 GB × 0.0005556 hours (1,000 queries × 2 ms) / 730 hours a month × 0.1 = "
        "1.522e-07",
        "  embedding tokens: 1,000 queries × 40 tokens = 4e+04 tokens / 1,000 × 2e-05 = 0.0008",
        "  LLM input tokens: 1,000 queries × 500 tokens = 5e+05 tokens / 1,000 × 0.00015 = "
        "0.075",
        "  LLM output tokens: 1,000 queries × 100 tokens = 1e+05 tokens / 1,000 × 0.0006 = 0.06",
    ]


def test_a_price_left_out_is_not_priced_and_the_total_says_partial() -> None:
    money = price_serving(Prices(vcpu_hour=0.04), SERVING)
    assert [i["item"] for i in money["items"]] == ["compute"]
    assert money["total"] == BY_HAND["compute"] and money["complete"] is False
    assert money["not_priced"]["memory"] == "no memory_gb_month price"
    assert money_lines(money)[0].endswith(": 2.222e-05 USD (partial: see not priced)")


def test_a_gate_on_a_results_file_prices_only_what_it_measured() -> None:
    g = golden({"id": "q1", "text": "one", "expected": ["a"]})
    result = run_gate(g, results={"q1": ranked({"a": 1}, n=3)})
    serving = gate_serving(result.cost, result.answers, {"recall": 1.0})
    money = price_serving(PRICES, serving)
    assert money["items"] == [] and money["total"] == 0 and money["complete"] is False
    assert money["not_priced"] == {
        "compute": "no search latency was measured (a results file carries none)",
        "memory": "no store was searched (a results file)",
        "disk": "no store was searched (a results file)"}
    assert set(money["not_part"]) == {"embedding tokens", "LLM tokens"}


def test_the_gate_command_adds_the_cost_with_its_arithmetic(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.chdir(tmp_path)
    Path("golden.json").write_text(json.dumps({"name": "g", "version": "1", "queries": [
        {"id": "q1", "text": "one", "expected": ["a"]}]}), encoding="utf-8")
    Path("results.jsonl").write_text(json.dumps({"query_id": "q1", "results": [
        {"id": "a", "score": 0.9}]}) + "\n", encoding="utf-8")
    Path("prices.yaml").write_text("vcpu_hour: 0.04\n", encoding="utf-8")
    code, out, err = cli("gate", "golden.json", "--results", "results.jsonl", "--prices",
                         "prices.yaml", "--no-history", "--format", "json")
    assert code == 0, err
    money = json.loads(out)["money"]
    assert money["prices"]["vcpu_hour"] == 0.04 and money["prices"]["source"] == "prices.yaml"
    assert money["not_priced"]["compute"].startswith("no search latency was measured")


@pytest.mark.parametrize(("text", "message"), [
    ("vcpu_hours: 0.04\n",
     "prices.yaml:1: field 'vcpu_hours': unknown key (did you mean 'vcpu_hour'?) (valid keys: "
     "currency, disk_gb_month, embedding_per_1k_tokens, llm_input_per_1k_tokens, "
     "llm_output_per_1k_tokens, memory_gb_month, vcpu_hour)"),
    ("vcpu_hour: -0.04\n",
     "prices.yaml:1: field 'vcpu_hour': expected a number in [0, 1000000], found -0.04"),
    ("memory_gb_month: cheap\n",
     "prices.yaml:1: field 'memory_gb_month': expected a number in [0, 1000000], found 'cheap'"),
    ("currency: USD\n",
     "prices.yaml:1: expected at least one price: vcpu_hour, memory_gb_month, disk_gb_month, "
     "embedding_per_1k_tokens, llm_input_per_1k_tokens, llm_output_per_1k_tokens, found "
     "<no price>"),
    ("currency: [USD]\nvcpu_hour: 1\n",
     "prices.yaml:1: field 'currency': expected a short name such as USD or EUR (at most 12 "
     "printable characters), found ['USD']"),
    ("- vcpu_hour: 1\n",
     "prices.yaml: expected a mapping of prices, e.g. {currency: USD, vcpu_hour: 0.04}, found "
     "[{'vcpu_hour': 1}]"),
    ("vcpu_hour: 0.04\nvcpu_hour: 0.05\n",
     "prices.yaml:2: invalid YAML (duplicate key 'vcpu_hour', first at line 1)"),
])
def test_a_bad_prices_file_is_located_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   text: str, message: str) -> None:
    monkeypatch.chdir(tmp_path)
    Path("golden.json").write_text(json.dumps({"name": "g", "version": "1", "queries": [
        {"id": "q1", "text": "one", "expected": ["a"]}]}), encoding="utf-8")
    Path("prices.yaml").write_text(text, encoding="utf-8")
    code, out, err = cli("gate", "golden.json", "--results", "results.jsonl", "--prices",
                         "prices.yaml", "--no-history")
    assert code == 2, out
    assert err.startswith(f"Error: {message}"), err


def test_the_example_prices_file_reads() -> None:
    prices = load_prices(Path(__file__).resolve().parents[2] / "examples" / "prices.yaml")
    assert prices.currency == "USD" and prices.vcpu_hour == 0.04
    assert prices.llm_output_per_1k_tokens == 0.0006


def test_every_report_shows_the_cost_lines() -> None:
    g = golden({"id": "q1", "text": "one", "expected": ["a"]})
    result = run_gate(g, results={"q1": ranked({"a": 1}, n=3)})
    result = replace(result, money=price_serving(PRICES, SERVING))
    head, first = money_lines(result.money or {})[:2]
    out = StringIO()
    print_report(result, Console(file=out, width=400))
    assert head in out.getvalue() and first in out.getvalue()
    assert md_escape(head) in to_markdown(result)
    assert "compute: 1,000 queries × 2 vCPU-ms" in to_html(result)
