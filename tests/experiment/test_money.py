"""``experiment --prices``: each variant's cost in money of serving 1,000 queries, its memory
and disk items checked by hand against the store bytes the experiment measured."""

from __future__ import annotations

import json
import math
from pathlib import Path

from tests.clirun import wide_cli as cli
from tests.experiment.conftest import small_kb


def test_each_variant_is_priced_with_its_own_figures(tmp_path: Path) -> None:
    small_kb(tmp_path, split=False)
    (tmp_path / "plan.yaml").write_text(
        "golden: golden.yaml\ncorpus: corpus.jsonl\npolicy: policy.yaml\n"
        "base: {name: dense}\nvariants:\n  - {name: bm25, retrieval: bm25}\n", encoding="utf-8")
    (tmp_path / "prices.yaml").write_text("vcpu_hour: 0.04\nmemory_gb_month: 3.0\n"
                                          "disk_gb_month: 0.1\n", encoding="utf-8")
    code, stdout, stderr = cli("experiment", str(tmp_path / "plan.yaml"), "--out-dir",
                               str(tmp_path / "out"), "--timing-rounds", "0", "--prices",
                               str(tmp_path / "prices.yaml"))
    assert code == 0, stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    by_name = {v["name"]: v for v in results["variants"]}
    dense = by_name["dense"]["money"]
    costs = {i["item"]: i["cost"] for i in dense["items"]}
    assert set(costs) == {"compute", "memory", "disk"} and dense["complete"] is True
    hours = costs["compute"] / 0.04  # one vCPU busy for each query's time
    store = by_name["dense"]["cost"]["store_bytes"]
    assert math.isclose(costs["disk"], store / 2**30 * hours / 730 * 0.1, rel_tol=1e-9)
    assert math.isclose(costs["memory"], store / 2**30 * hours / 730 * 3.0, rel_tol=1e-9)
    assert math.isclose(dense["total"], sum(costs.values()), rel_tol=1e-12)
    bm25 = by_name["bm25"]["money"]
    assert bm25["not_priced"]["disk"] == ("no dense index: the store's bytes were not measured "
                                          "(BM25's index is not measured)")
    assert set(bm25["not_part"]) == {"embedding tokens", "LLM tokens"}
    assert "cost of serving 1,000 queries with dense (on the all queries) at your prices" in stdout
