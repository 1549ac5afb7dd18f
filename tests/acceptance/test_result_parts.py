"""A gate result's configuration and timings are typed objects (``RunConfig``, ``RunTimings``)
whose JSON is the object the gate always wrote: the same keys in the same order with the same
values, ``config_hash`` over the configuration without its latency sample, and a record written
before (other or missing keys) read back and written out unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recallwatch._hashing import canonical_hash
from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult, RunConfig, RunTimings
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.formats.policy import SearchSettings
from recallwatch.stores.lancedb.store import LanceStore

from .helpers import DIM, golden, numbered_golden, numbered_store, random_vectors, ranked

EMBEDDER = CallableEmbedder(random_vectors, name="test-random", dimension=DIM)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LanceStore:
    return numbered_store(tmp_path_factory.mktemp("kb") / "db", 40)


def _results_run() -> GateResult:
    g = golden({"id": "q1", "text": "a", "expected": ["c1"]},
               {"id": "q2", "text": "b", "expected": ["c2"]})
    return run_gate(g, results={"q1": ranked({"c1": 1}), "q2": ranked({"c2": 12})})


@pytest.mark.parametrize("sample", [None, 0, 5])
def test_a_store_run_writes_its_config_as_before(store: LanceStore, sample: int | None) -> None:
    result = run_gate(numbered_golden(10), store=store, embedder=EMBEDDER,
                      latency_sample=sample)
    d = result.to_dict()
    assert list(d["config"]) == ["source", "embedder", "search", "latency_sample"]
    assert d["config"]["source"] == "store"
    assert d["config"]["search"] == SearchSettings().to_dict()
    assert d["config"]["embedder"]["name"] == "test-random"
    assert d["config"]["latency_sample"] == ("auto" if sample is None else sample)
    # the hash covers the configuration without the latency sample: runs sampled otherwise
    # still compare
    hashed = {k: v for k, v in d["config"].items() if k != "latency_sample"}
    assert d["config_hash"] == canonical_hash(hashed)
    assert list(d["timings"]) == ["embed", "search", "other", "total"]
    assert all(isinstance(v, float) for v in d["timings"].values())
    assert d["timings"]["total"] >= d["timings"]["embed"] + d["timings"]["search"]


def test_a_results_run_states_only_its_source() -> None:
    d = _results_run().to_dict()
    assert d["config"] == {"source": "results"}
    assert d["config_hash"] == canonical_hash({"source": "results"})


def test_the_result_round_trips_through_its_json(store: LanceStore) -> None:
    for result in (_results_run(), run_gate(numbered_golden(8), store=store, embedder=EMBEDDER,
                                            latency_sample=3)):
        text = json.dumps(result.to_dict(), ensure_ascii=False)
        again = GateResult.from_dict(json.loads(text))
        assert again.config == result.config and again.timings == result.timings
        assert json.dumps(again.to_dict(), ensure_ascii=False) == text


# A configuration as another (older or newer) writer might have stored it: a key none of the
# fields names, a null where a field expects an object, and no latency sample.
OLD_CONFIG: dict[str, Any] = {"source": "store", "retriever": {"kind": "legacy"},
                              "embedder": {"name": "e", "version": "1", "dimension": 4},
                              "search": None}


def test_a_config_of_another_shape_comes_back_whole() -> None:
    config = RunConfig.from_dict(OLD_CONFIG)
    assert config.source == "store" and config.embedder == OLD_CONFIG["embedder"]
    assert config.search is None and config.latency_sample is None
    assert config.to_dict() == OLD_CONFIG  # every key and value, nothing added
    assert RunConfig.from_dict({}).to_dict() == {}
    odd = {"source": 3, "latency_sample": True}  # wrong types are kept, not coerced
    assert RunConfig.from_dict(odd).to_dict() == odd


def test_an_old_record_loads_and_writes_out_unchanged(tmp_path: Path) -> None:
    d = json.loads(json.dumps(_results_run().to_dict()))
    d["config"] = OLD_CONFIG
    for key in ("freshness", "money", "answers", "golden_size", "chunk_texts", "checks"):
        del d[key]  # keys written only by later versions
    result = GateResult.from_dict(d)
    assert result.timings == RunTimings(**d["timings"])
    out = result.to_dict()
    assert out["config"] == OLD_CONFIG and out["timings"] == d["timings"]
    assert RunTimings.from_dict({"total": 1.5}) == RunTimings(0.0, 0.0, 0.0, 1.5)


def test_scripts_that_read_them_as_dicts_still_work() -> None:
    result = _results_run()
    assert result.config["source"] == "results"
    assert result.timings["total"] == result.timings.total
    with pytest.raises(KeyError):
        result.config["embedder"]  # absent, as in the JSON

