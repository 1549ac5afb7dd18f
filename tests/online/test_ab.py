"""A/B readouts: per-unit sums, clustered intervals that hold their level, SRM, power, verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from recallwatch.errors import InputError, UsageError
from recallwatch.online import ABConfig, InteractionLog, aggregate_units, readout
from recallwatch.online.ab import UnitTable
from recallwatch.online.simulate import make_collection, simulate_ab_log


def _log(tmp_path: Path, records: list[dict[str, Any]], name: str = "ab.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _imp(user: str, variant: str, clicks: list[float] | None = None, **extra: Any
         ) -> dict[str, Any]:
    """An impression at 12:00:00 with a click `s` seconds later per entry of clicks."""
    clicks = clicks or []
    record = {"query_id": "q", "user": user, "session": f"{user}-1", "variant": variant,
              "ts": "2025-01-01T12:00:00Z", "shown": [{"id": f"d{i}"} for i in range(5)],
              "clicks": [{"id": f"d{i}", "ts": f"2025-01-01T12:00:{int(s):02d}Z"}
                         for i, s in enumerate(clicks)]}
    record.update(extra)
    return record


def test_per_unit_sums_are_exact(tmp_path: Path) -> None:
    path = _log(tmp_path, [
        _imp("u1", "A", [3, 8], conversion=True),
        _imp("u1", "A", [], conversion=False),
        _imp("u2", "B", [5], conversion=False),
        _imp("u3", "B", [], conversion=False),
        _imp("u3", "A", [2], conversion=True),  # u3 in both variants: left out, counted
    ])
    metrics = ("ctr", "abandonment", "time-to-click", "conversion")
    t = aggregate_units(InteractionLog(path), metrics=metrics)  # type: ignore[arg-type]
    assert t.variants == ["A", "B"] and t.mixed_units == 1
    assert t.variant.tolist() == [0, 1]  # u1 (A), u2 (B)
    # rows: metrics; columns: units u1, u2
    assert t.num.tolist() == [[2, 1], [1, 0], [3, 5], [1, 0]]
    assert t.den.tolist() == [[2, 1], [2, 1], [1, 1], [2, 1]]
    assert t.impressions == {"A": 3, "B": 2}


def _table(rng: np.random.Generator, n_units: int, lift: float = 0.0) -> UnitTable:
    """Units with their own click propensity (strongly clustered), 1-20 impressions each."""
    variant = rng.integers(0, 2, n_units)
    impressions = rng.integers(1, 21, n_units).astype(float)
    propensity = rng.beta(0.5, 1.5, n_units) * (1 + lift * variant)
    clicks = rng.binomial(impressions.astype(int), np.clip(propensity, 0, 1)).astype(float)
    return UnitTable(["A", "B"], ("ctr",), variant, clicks[None, :], impressions[None, :])


def test_clustered_intervals_hold_their_level_on_a_a_tests() -> None:
    """With strongly clustered units, an A/A test must reject about 5 % of the time; treating
    impressions as independent would reject far more often."""
    rng = np.random.default_rng(11)
    config = ABConfig(min_units=10)
    ours, naive = [], []
    for _ in range(400):
        t = _table(rng, 300)
        ours.append(readout(t, config).metrics["ctr"].p_value < 0.05)
        # the naive test: every impression an independent Bernoulli trial
        a, b = (t.variant == 0), (t.variant == 1)
        p = [t.num[0][m].sum() / t.den[0][m].sum() for m in (a, b)]
        n = [t.den[0][m].sum() for m in (a, b)]
        pooled = (t.num[0].sum()) / t.den[0].sum()
        z = (p[1] - p[0]) / np.sqrt(pooled * (1 - pooled) * (1 / n[0] + 1 / n[1]))
        naive.append(2 * stats.norm.sf(abs(z)) < 0.05)
    assert 0.025 <= np.mean(ours) <= 0.08, np.mean(ours)
    assert np.mean(naive) > 0.2  # why clustering by unit matters


def test_power_and_sample_size_are_consistent() -> None:
    rng = np.random.default_rng(3)
    t = _table(rng, 2000, lift=0.1)
    config = ABConfig(min_units=10, min_effect=0.1)
    m = readout(t, config).metrics["ctr"]
    z = stats.norm.isf(0.025) + stats.norm.ppf(0.8)
    assert m.mde == pytest.approx(z * m.std_error)
    assert m.ci[0] == pytest.approx(m.delta - stats.norm.isf(0.025) * m.std_error)
    # at the units needed, the predicted MDE is the target effect
    per_unit_var = m.std_error**2 * (m.units["A"] * m.units["B"]) / (m.units["A"] + m.units["B"])
    assert m.units_needed is not None
    predicted = z * np.sqrt(2 * per_unit_var / m.units_needed)
    assert predicted == pytest.approx(0.1 * m.values["A"], rel=0.15)


def test_sample_ratio_mismatch_blocks_the_readout() -> None:
    rng = np.random.default_rng(5)
    t = _table(rng, 1000)
    keep = (t.variant == 0) | (rng.random(1000) < 0.7)  # lose 30 % of B's units
    skewed = UnitTable(["A", "B"], ("ctr",), t.variant[keep], t.num[:, keep], t.den[:, keep])
    r = readout(skewed, ABConfig(min_units=10))
    assert r.blocked and not r.srm_ok and r.srm_p_value < 0.001
    assert any("sample-ratio mismatch" in reason for reason in r.reasons)
    # the same counts are fine when the experiment intended that split
    share = {"A": float((skewed.variant == 0).mean()), "B": float((skewed.variant == 1).mean())}
    assert readout(skewed, ABConfig(min_units=10, split=share)).srm_ok


def test_too_few_units_blocks() -> None:
    t = _table(np.random.default_rng(6), 60)
    r = readout(t, ABConfig())
    assert r.blocked and any("too few units" in reason for reason in r.reasons)


def test_a_better_ranker_reads_as_better(tmp_path: Path) -> None:
    col = make_collection(200, 20, seed=3, bias_scale=1.0)
    weak, strong = col.ranking(2.5, seed=1), col.ranking(0.3, seed=2)
    path = _log(tmp_path, list(simulate_ab_log(col, weak, strong, 3000, seed=5)))
    config = ABConfig(metrics=("ctr", "abandonment", "time-to-click", "conversion"))
    r = readout(aggregate_units(InteractionLog(path), metrics=config.metrics), config)
    assert r.srm_ok and not r.blocked
    assert r.metrics["abandonment"].verdict == "better"
    assert r.metrics["abandonment"].delta < 0
    assert r.verdict in ("better", "mixed")
    d = r.to_dict()
    assert set(d["metrics"]["ctr"]) >= {"variants", "delta", "ci", "p_value"}
    assert set(d["srm"]) >= {"p_value", "ok"}
    json.dumps(d, allow_nan=False)  # strict JSON: no NaN anywhere


def test_bad_input_is_located(tmp_path: Path) -> None:
    no_user = _log(tmp_path, [_imp("u1", "A"), {**_imp("u2", "B"), "user": None}], "nu.jsonl")
    with pytest.raises(InputError, match=r"nu\.jsonl:2: record 'q': field 'user': expected the "
                                         r"user of every impression \(--unit user\)"):
        aggregate_units(InteractionLog(no_user), source=str(no_user))
    no_ts = _log(tmp_path, [_imp("u1", "A", [2], ts=None)], "nt.jsonl")
    with pytest.raises(InputError, match=r"nt\.jsonl:1: record 'q': field 'ts': expected the "
                                         r"impression's timestamp"):
        aggregate_units(InteractionLog(no_ts), metrics=("time-to-click",), source=str(no_ts))
    early = _log(tmp_path, [_imp("u1", "A", [2], ts="2025-01-01T12:00:05Z")], "early.jsonl")
    with pytest.raises(InputError, match=r"early\.jsonl:1: .*clicks at or after the impression"):
        aggregate_units(InteractionLog(early), metrics=("time-to-click",), source=str(early))
    no_conv = _log(tmp_path, [_imp("u1", "A")], "nc.jsonl")
    with pytest.raises(InputError, match=r"nc\.jsonl:1: .*field 'conversion'"):
        aggregate_units(InteractionLog(no_conv), metrics=("conversion",), source=str(no_conv))
    three = _log(tmp_path, [_imp("u1", "A"), _imp("u2", "B"), _imp("u3", "C")], "3.jsonl")
    with pytest.raises(InputError, match=r"expected exactly two variants in an A/B log, found "
                                         r"<3: A, B, C>"):
        readout(aggregate_units(InteractionLog(three)), ABConfig())
    with pytest.raises(UsageError, match="unknown metric 'ndcg'"):
        ABConfig(metrics=("ndcg",))  # type: ignore[arg-type]
