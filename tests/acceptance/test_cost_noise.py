"""The cost rule under noise, with injected latencies: a fake clock that only the fakes advance,
never the wall clock, so no assertion depends on the machine.

The noise model the tests draw from (the one docs/gate.md documents): one search call takes a
median of 2 ms times a log-normal factor (sigma 0.35: the slowest call in a hundred about 2.3
times the median); a run on a loaded machine is the same distribution scaled by its load, here
1.8× on every other run (within the default load factor of 2), embedding included. An index
made 3× slower scales every search call by 3. Ranked lists come from a real LanceDB store; the
timed single-query calls only advance the clock (their answers are unused by the gate, by
design)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recallwatch.acceptance.cost import compare_figure, cost_line
from recallwatch.acceptance.gate import Gate
from recallwatch.acceptance.model import GateResult
from recallwatch.acceptance.retrieve import StoreSource
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.formats.policy import Policy, parse_policy
from recallwatch.history import History, latency_baseline, record_gate_run
from recallwatch.stores.base import Hits, VectorStore
from recallwatch.stores.lancedb.store import LanceStore
from tests.machine import Machine

from .helpers import DIM, numbered_golden, numbered_store, random_vectors

LOADED = 1.8  # every other run: a busy machine


class TimedStore:
    """A real store whose single-query calls cost injected time on the machine's clock."""

    def __init__(self, inner: VectorStore, machine: Machine, speed: float = 1.0) -> None:
        self.inner, self.machine, self.speed = inner, machine, speed

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def search(self, vectors: np.ndarray, k: int, **kw: Any) -> list[Hits]:
        if len(vectors) == 1:  # a timed call: its answer is not used
            self.machine.spend(self.speed)
            return [Hits([], np.zeros(0, dtype=np.float32))]
        return self.inner.search(vectors, k, **kw)

    def checkout(self, version: str) -> TimedStore:
        # the baseline's index: its own speed (the reference), the same machine and load
        return TimedStore(self.inner.checkout(version), self.machine, 1.0)


def _embedder(machine: Machine) -> CallableEmbedder:
    def embed(texts: Sequence[str]) -> np.ndarray:
        if len(texts) == 1:
            machine.spend(1.0)
        return random_vectors(texts)

    return CallableEmbedder(embed, name="test-random", dimension=DIM)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> LanceStore:
    return numbered_store(tmp_path_factory.mktemp("kb") / "db", 200)


GOLDEN = numbered_golden(40)


def _policy(tmp_path: Path) -> Policy:
    return parse_policy({"noise_ceiling": 0.9, "max_cost_increase": 0.25},
                        tmp_path / "policy.yaml")


def _gate(store: VectorStore, machine: Machine, policy: Policy, history: Path, *,
          speed: float = 1.0, interleaved: bool = False,
          sample: int | None = None) -> GateResult:
    """One gate run as the CLI makes it, on the injected clock, recorded in ``history``."""
    timed = TimedStore(store, machine, speed)
    baseline = (latency_baseline(history)(timed, GOLDEN.hash, policy.hash)  # type: ignore[arg-type]
                if interleaved else None)
    source = StoreSource(timed, _embedder(machine), policy.search,  # type: ignore[arg-type]
                         latency_sample=sample, judge_cost=True, baseline=baseline,
                         clock=machine)
    return record_gate_run(Gate(GOLDEN, policy).run(source), history)


def _cost_checks(result: GateResult) -> list[tuple[str, str, str]]:
    return [(c.subject, c.status, c.message) for c in result.checks if c.rule == "cost_increase"]


@pytest.mark.parametrize("interleaved", [False, True])
def test_ten_gates_on_an_unchanged_store_under_alternating_load_never_stop(
        store: LanceStore, tmp_path: Path, interleaved: bool) -> None:
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    first = _gate(store, Machine(seed=100), policy, history)
    assert first.verdict == "ACCEPT"
    assert first.cost is not None and first.cost["calls"] == 368  # a p99's worth of calls
    outcomes = []
    for run in range(10):
        machine = Machine(seed=run, load=LOADED if run % 2 == 0 else 1.0)
        result = _gate(store, machine, policy, history, interleaved=interleaved)
        outcomes.append(result.verdict)
        checks = _cost_checks(result)
        assert [s for _, s, _ in checks] and all(s != "stop" for _, s, _ in checks), checks
    assert outcomes == ["ACCEPT"] * 10
    # the loaded runs read well above +25 % on their own, and are called noise, saying why
    loaded = _gate(store, Machine(seed=50, load=LOADED), policy, history,
                   interleaved=interleaved)
    (p99,) = [c for c in _cost_checks(loaded) if c[0] == "search latency p99 (ms)"]
    if interleaved:  # both indexes timed under the same load: no increase at all
        assert p99[1] == "pass"
        assert loaded.cost is not None and loaded.cost["baseline"]["calls"] == 368
    else:
        assert p99[1] == "within noise", p99
        assert "within noise (p99 now " in p99[2] and "ms, at the baseline " in p99[2]
        assert "(95 % intervals over 368 and 368 calls): ×" in p99[2]
        assert "timed apart; the median ×" in p99[2]
        assert "up to ×2 slower and its slowest calls slower still" in p99[2]
        assert "not blocking" in p99[2]
    # the embedder is the baseline's: the load slowed it, the deployment did not
    (embed,) = [c for c in _cost_checks(loaded) if c[0] == "query embedding alone p50 (ms)"]
    assert embed[1] == "within noise", embed
    assert "(the same fingerprint): its time changes with the machine, not with the " in embed[2]


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_store_made_three_times_slower_is_stopped_with_its_evidence(
        store: LanceStore, tmp_path: Path, interleaved: bool) -> None:
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    _gate(store, Machine(seed=1), policy, history)
    slow = _gate(store, Machine(seed=2), policy, history, speed=3.0, interleaved=interleaved)
    assert slow.verdict == "STOP"
    (reason,) = [r for r in slow.reasons if r.rule == "cost_increase"]
    assert reason.message.startswith("search latency p99 (ms) rose +")
    assert "above max_cost_increase 25%; beyond noise (p99 now " in reason.message
    assert "(95 % intervals over 368 and 368 calls): ×" in reason.message
    how = "timed interleaved in this run" if interleaved else "timed apart; the median ×"
    assert how in reason.message
    (check,) = [c for c in slow.checks if c.rule == "cost_increase" and c.status == "stop"]
    low, high = check.figures["evidence_interval"]
    assert check.figures["evidence_quantile"] == (0.99 if interleaved else 0.5)
    assert check.figures["bound"] == (1.0 if interleaved else 2.0)
    assert check.figures["bound"] < low < 3.0 < high
    assert check.figures["paired"] is interleaved


def test_a_small_increase_stops_only_when_timed_interleaved(store: LanceStore,
                                                            tmp_path: Path) -> None:
    """+60 %: beyond the cap; timed beside the baseline it is real, timed apart it cannot be
    told from load."""
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    _gate(store, Machine(seed=3), policy, history)
    apart = _gate(store, Machine(seed=4), policy, history, speed=1.6)
    assert apart.verdict == "ACCEPT"
    statuses = {s: st for s, st, _ in _cost_checks(apart)}
    assert statuses["search latency p99 (ms)"] == "within noise"
    (note,) = [m for s, _, m in _cost_checks(apart) if s == "search latency p99 (ms)"]
    assert "timing the baseline's index in the same run" in note
    beside = _gate(store, Machine(seed=5), policy, history, speed=1.6, interleaved=True)
    assert beside.verdict == "STOP"
    assert [r.rule for r in beside.reasons] == ["cost_increase"]


def test_too_few_calls_for_a_p99_judge_the_median_and_say_so(store: LanceStore,
                                                            tmp_path: Path) -> None:
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    first = _gate(store, Machine(seed=6), policy, history, sample=100)
    assert first.cost is not None and first.cost["search_p99_ms"] is None
    assert first.cost["search_p99_missing"] == "not enough calls for a p99: 100 of 368 needed"
    assert "not enough calls for a p99: 100 of 368 needed over 100 calls" in cost_line(
        first.cost)
    slow = _gate(store, Machine(seed=7), policy, history, sample=100, speed=3.0)
    (check,) = [c for c in slow.checks if c.rule == "cost_increase"
                and c.figures.get("figure") == "search_p99_ms"]
    assert check.subject == "search latency p50 (ms)" and check.status == "stop"
    assert check.message.endswith("not enough calls for a p99: 100 of 368 needed; judged by the "
                                  "median instead")
    few = _gate(store, Machine(seed=8), policy, history, sample=10)
    (check,) = [c for c in few.checks if c.rule == "cost_increase"
                and c.figures.get("figure") == "search_p99_ms"]
    assert check.status == "not applied"
    assert check.message == ("search latency p99 (ms): not enough search calls to tell an "
                             "increase from noise: 10 of 20 needed on each side (raise "
                             "--latency-sample)")


def test_the_per_call_timings_are_kept_in_the_history(store: LanceStore, tmp_path: Path) -> None:
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    _gate(store, Machine(seed=9), policy, history)
    second = _gate(store, Machine(seed=10), policy, history, interleaved=True)
    with History(history) as h:
        loaded = h.load(second.run_id)
    assert loaded.cost == second.cost  # samples and the baseline's interleaved calls
    assert second.cost is not None and len(second.cost["samples"]["search_ms"]) == 368
    assert len(second.cost["samples"]["embed_ms"]) == 100
    assert len(second.cost["baseline"]["search_ms"]) == 368


def test_a_baseline_without_per_call_timings_is_not_judged(store: LanceStore,
                                                          tmp_path: Path) -> None:
    """A run recorded before the timings were kept: its p99 is not compared with a new one."""
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    base = _gate(store, Machine(seed=11), policy, history)
    assert base.cost is not None
    old = {k: v for k, v in base.cost.items() if k not in ("samples", "calls")}
    current = _gate(store, Machine(seed=12), policy, history, speed=3.0).cost
    assert current is not None
    change = compare_figure("search_p99_ms", old, current, base_run="r1")
    assert change.old is None and change.note == (
        "run r1 kept no per-call timings (recorded before they were kept), so an increase "
        "cannot be told from noise; the next accepted run will serve")


def test_the_baseline_on_another_store_is_timed_interleaved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blue/green: the candidate is a new store; the accepted run searched the old one, which is
    still there and was built with the same embedder, so it is opened and timed beside it."""
    import recallwatch.stores
    from recallwatch.embedders.base import FINGERPRINT_META_KEY, fingerprint_of

    machine = Machine(seed=13)
    built = fingerprint_of(_embedder(machine)).to_dict()
    blue, green = (numbered_store(tmp_path / name, 60) for name in ("blue", "green"))
    for s in (blue, green):
        s.set_meta(FINGERPRINT_META_KEY, built)
    real_open = recallwatch.stores.open_store
    monkeypatch.setattr(recallwatch.stores, "open_store",
                        lambda uri, **kw: TimedStore(real_open(uri, **kw), machine))
    policy, history = _policy(tmp_path), tmp_path / "h.db"
    first = _gate(blue, machine, policy, history)
    assert first.verdict == "ACCEPT"
    slow = _gate(green, machine, policy, history, speed=3.0, interleaved=True)
    assert slow.cost is not None and slow.cost["baseline"]["run_id"] == first.run_id
    assert slow.verdict == "STOP"
    (reason,) = slow.reasons
    assert "timed interleaved in this run" in reason.message
    # a store built with another embedder is not timed with these query vectors
    green.set_meta(FINGERPRINT_META_KEY, {**built, "name": "another"})
    assert latency_baseline(history)(green, GOLDEN.hash, policy.hash) is None
    # a baseline whose recorded URI lost its password cannot be reopened: not even tried
    with History(history) as h:
        h.record(replace(first, run_id="r-pg", store={
            "uri": "postgresql://app:***@db.internal/kb?table=chunks", "version": "3"}))
    monkeypatch.setattr(recallwatch.stores, "open_store", None)  # any call would fail
    assert latency_baseline(history)(blue, GOLDEN.hash, policy.hash) is None


def test_the_load_factor_is_a_policy_setting(store: LanceStore, tmp_path: Path) -> None:
    from recallwatch.errors import InputError

    assert "cost_load_factor" not in _policy(tmp_path).rules_dict()  # the hash stays as it was
    with pytest.raises(InputError, match=r"cost_load_factor.*a number in \[1, 100\].*0\.5"):
        parse_policy({"cost_load_factor": 0.5}, tmp_path / "p.yaml")
    wide = parse_policy({"noise_ceiling": 0.9, "max_cost_increase": 0.25,
                         "cost_load_factor": 4}, tmp_path / "wide.yaml")
    assert wide.rules_dict()["cost_load_factor"] == 4.0
    history = tmp_path / "h.db"
    _gate(store, Machine(seed=14), wide, history)
    slow = _gate(store, Machine(seed=15), wide, history, speed=3.0)
    # timed apart, 3x is within what this policy says load alone can do
    assert slow.verdict == "ACCEPT"
    (p99,) = [c for c in _cost_checks(slow) if c[0] == "search latency p99 (ms)"]
    assert p99[1] == "within noise" and "median up to ×4 slower" in p99[2]
