"""``bench --prices``: what serving 1,000 queries costs with each setting, computed by hand from
the figures the sweep measured (its CPU time one query at a time, its QPS-1, its index bytes),
and the cheapest setting at each recall target."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.clirun import wide_cli as cli

SWEEP = """\
name: tiny
dataset:
  synthetic: {n: 1000, dim: 8, topics: 5, queries: 20, seed: 1}
k: 10
timing: {warmup: 1, rounds: 2}
targets: [0.5, 1.0]
engines:
  - engine: faiss-flat
  - engine: hnswlib
    build: {M: 8, ef_construction: 40}
    query: {ef: [10, 100]}
"""
PRICES = "vcpu_hour: 0.04\nmemory_gb_month: 3.0\ndisk_gb_month: 0.1\n"


def test_each_setting_is_priced_from_what_the_sweep_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sweep.yaml").write_text(SWEEP, encoding="utf-8")
    Path("prices.yaml").write_text(PRICES, encoding="utf-8")
    code, out, err = cli("bench", "sweep.yaml", "--prices", "prices.yaml", "--format", "json",
                         "--quiet")
    assert code == 0, err
    doc = json.loads(out)
    money = doc["money"]
    for r, m in zip(doc["results"], money["per_1000_queries"], strict=True):
        hours = 1000 / r["qps_single"] / 3600  # the 1,000 queries, one at a time
        gb = r["index_bytes"] / 2**30
        by_hand = {"compute": r["cpu_s_per_1000_single"] / 3600 * 0.04,
                   "memory": gb * hours / 730 * 3.0, "disk": gb * hours / 730 * 0.1}
        costs = {i["item"]: i["cost"] for i in m["items"]}
        assert costs.keys() == by_hand.keys()
        for item, value in by_hand.items():
            assert math.isclose(costs[item], value, rel_tol=1e-9), item
        assert m["complete"] is True and set(m["not_part"]) == {"embedding tokens", "LLM tokens"}
    totals = [m["total"] for m in money["per_1000_queries"]]
    for target in (0.5, 1.0):
        reaching = [i for i, r in enumerate(doc["results"]) if r["recall"]["10"] >= target]
        assert money["cheapest_at"][str(target)] == min(reaching, key=lambda i: (totals[i], i))


def test_the_table_shows_the_frontiers_arithmetic(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sweep.yaml").write_text(SWEEP, encoding="utf-8")
    Path("prices.yaml").write_text(PRICES, encoding="utf-8")
    code, out, err = cli("bench", "sweep.yaml", "--prices", "prices.yaml", "--quiet")
    assert code == 0, err
    assert ("cost in money of each setting on the overall frontier, at your prices "
            "(prices.yaml), one query at a time on one thread") in out
    assert "    compute: 1,000 queries × " in out and "\ncheapest at R@10 >= 1: " in out


def test_a_bad_prices_file_fails_before_the_sweep(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("sweep.yaml").write_text(SWEEP, encoding="utf-8")
    Path("prices.yaml").write_text("vcpu_hour: free\n", encoding="utf-8")
    code, _, err = cli("bench", "sweep.yaml", "--prices", "prices.yaml", "--quiet")
    assert code == 2
    assert err == ("Error: prices.yaml:1: field 'vcpu_hour': expected a number in [0, 1000000], "
                   "found 'free'\n")
