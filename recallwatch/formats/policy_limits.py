"""The policy's run-level limits: ranking-quality targets, the largest drop allowed against the
baseline, and cost caps.

    targets:                 # minimum mean of any rank measure (nDCG@10, RR, P@5, AP, R@20 …)
      nDCG@10: 0.80
      RR: 0.6
      per_domain:
        legal: {nDCG@10: 0.85}
    max_drop:                # largest fall of a measure's mean against the last accepted run
      nDCG@10: 0.02
    max_latency_p99_ms: 50   # search latency cap, 99th percentile over the golden queries
    max_cost_increase: 0.25  # relative increase allowed in latency, embedding time, index bytes
    cost_load_factor: 2.0    # how much slower machine load alone may make a run timed apart
                             # from its baseline (an increase within it is noise)
    min_freshness: 0.9       # share of queries on dated versions of a fact whose top K ranks
                             # the newest valid version above the older ones

Measure names are checked against the measure catalog by the gate (this layer sits below the
metrics), with the line of the mapping that names them kept here for the error.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recallwatch.errors import InputError
from recallwatch.formats.fields import bounded, line_of, shown
from recallwatch.formats.structured import LINE_KEY

__all__ = ["LIMIT_KEYS", "Limits", "parse_limits"]

LIMIT_KEYS = {"targets", "max_drop", "max_latency_p99_ms", "max_cost_increase",
              "cost_load_factor", "min_freshness"}
# A p99 cap above ten minutes is a typo in the unit.
_MAX_LATENCY_MS = 600_000.0
# +10 000 %: anything larger is a typo of a fraction (0.25 means +25 %).
_MAX_INCREASE = 100.0
# A load factor is a ratio of speeds: 1 (no load effect) to 100.
_MAX_LOAD_FACTOR = 100.0


@dataclass(frozen=True)
class Limits:
    targets: dict[str, float] = field(default_factory=dict)  # measure as written -> minimum mean
    targets_per_domain: dict[str, dict[str, float]] = field(default_factory=dict)
    max_drop: dict[str, float] = field(default_factory=dict)  # measure -> largest mean drop
    max_latency_p99_ms: float | None = None
    max_cost_increase: float | None = None  # a fraction: 0.25 allows +25 %
    # A run timed apart from its baseline may be this many times slower from load alone (None:
    # the default, recallwatch.acceptance.cost.LOAD_FACTOR).
    cost_load_factor: float | None = None
    # The least share of queries whose top K ranks the newest valid version of their facts
    # above the older ones (recallwatch.acceptance.freshness); None: no rule.
    min_freshness: float | None = None
    # Where each measure name was written ("targets", "targets.per_domain.legal", "max_drop"),
    # so that the gate can locate an unknown measure name.
    lines: dict[str, int | None] = field(default_factory=dict, compare=False)

    def measures(self) -> list[tuple[str, str]]:
        """(where, measure name) of every measure the limits name."""
        out = [("targets", m) for m in self.targets]
        out += [(f"targets.per_domain.{d}", m) for d, t in self.targets_per_domain.items()
                for m in t]
        out += [("max_drop", m) for m in self.max_drop]
        return out

    def rules_dict(self) -> dict[str, Any]:
        """Only the limits that are set: a policy without them keeps the hash it always had."""
        out: dict[str, Any] = {}
        if self.targets or self.targets_per_domain:
            out["targets"] = {**dict(sorted(self.targets.items())),
                              **({"per_domain": {d: dict(sorted(t.items())) for d, t in
                                                 sorted(self.targets_per_domain.items())}}
                                 if self.targets_per_domain else {})}
        if self.max_drop:
            out["max_drop"] = dict(sorted(self.max_drop.items()))
        if self.max_latency_p99_ms is not None:
            out["max_latency_p99_ms"] = self.max_latency_p99_ms
        if self.max_cost_increase is not None:
            out["max_cost_increase"] = self.max_cost_increase
        if self.cost_load_factor is not None:
            out["cost_load_factor"] = self.cost_load_factor
        if self.min_freshness is not None:
            out["min_freshness"] = self.min_freshness
        return out


def parse_limits(data: dict[str, Any], source: Path, line: int | None) -> Limits:
    lines: dict[str, int | None] = {}
    targets: dict[str, float] = {}
    per_domain: dict[str, dict[str, float]] = {}
    raw = data.get("targets")
    if raw is not None:
        table = _mapping(raw, source, line, "targets")
        lines["targets"] = line_of(raw) or line
        for name, value in table.items():
            if name == "per_domain":
                domains = _mapping(value, source, line_of(raw) or line, "targets.per_domain")
                for domain, sub in domains.items():
                    where = f"targets.per_domain.{domain}"
                    lines[where] = line_of(sub) or line_of(value) or line
                    per_domain[str(domain)] = _measures(
                        _mapping(sub, source, lines[where], where), source, lines[where], where)
            else:
                targets.update(_measures({name: value}, source, lines["targets"], "targets"))
    drops: dict[str, float] = {}
    if data.get("max_drop") is not None:
        raw = data["max_drop"]
        lines["max_drop"] = line_of(raw) or line
        drops = _measures(_mapping(raw, source, line, "max_drop"), source, lines["max_drop"],
                          "max_drop")
    latency = data.get("max_latency_p99_ms")
    increase = data.get("max_cost_increase")
    load = data.get("cost_load_factor")
    fresh = data.get("min_freshness")
    return Limits(
        targets=targets, targets_per_domain=per_domain, max_drop=drops,
        max_latency_p99_ms=None if latency is None else float(bounded(
            latency, 0.0, _MAX_LATENCY_MS, source=source, line=line, field="max_latency_p99_ms",
            integer=False)),
        max_cost_increase=None if increase is None else float(bounded(
            increase, 0.0, _MAX_INCREASE, source=source, line=line, field="max_cost_increase",
            integer=False)),
        cost_load_factor=None if load is None else float(bounded(
            load, 1.0, _MAX_LOAD_FACTOR, source=source, line=line, field="cost_load_factor",
            integer=False)),
        min_freshness=None if fresh is None else float(bounded(
            fresh, 0.0, 1.0, source=source, line=line, field="min_freshness", integer=False)),
        lines=lines,
    )


def _mapping(value: Any, source: Path, line: int | None, fld: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(source=source, line=line, field=fld,
                         expected="a mapping {measure: value}, e.g. {nDCG@10: 0.8}",
                         found=shown(value))
    return {str(k): v for k, v in value.items() if k != LINE_KEY}


def _measures(table: dict[str, Any], source: Path, line: int | None,
              where: str) -> dict[str, float]:
    """Rank measures of 0/1 relevance all lie in [0, 1], and so do their targets and drops."""
    return {name: float(bounded(value, 0.0, 1.0, source=source, line=line,
                                field=f"{where}.{name}", integer=False))
            for name, value in table.items()}
