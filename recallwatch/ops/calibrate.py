"""Calibrations: the no-result score threshold, and the noise ceiling per domain (SPEC §2).

**No-result threshold.** A system answers a query only when its best result scores at least ``t``.
Over a set of *answerable* queries (the golden set) and *unanswerable* ones (given, or the
unrelated-domain list shipped in ``recallwatch/ops/data/unanswerable.txt``), at each threshold:

* ``coverage(t)``  = answerable queries answered ÷ answerable queries;
* ``precision(t)`` = answerable queries answered ÷ all queries answered (1 when none is).

The chosen point is the lowest ``t`` whose precision reaches the target (most coverage at that
precision), or the highest ``t`` whose coverage reaches the target. Scores are cosine
similarities of one embedder: the threshold is stored in the store's metadata *under that
embedder's fingerprint*, and reading it with another embedder is an error.

**Noise ceiling.** From a full gate run, the noise of the *healthy* queries (recall 1) per domain:
its distribution, a baseline (the 95th percentile, an observed value) and a suggested ceiling one
margin (in chunks) above it, printed as the policy's ``noise_ceiling`` section.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from recallwatch.errors import EmbedderMismatchError, InputError, UsageError

if TYPE_CHECKING:
    from recallwatch.embedders.base import Embedder, Fingerprint
    from recallwatch.stores.base import VectorStore
    from recallwatch.suite.model import GateResult

__all__ = [
    "THRESHOLD_META_KEY",
    "UNANSWERABLE_FILE",
    "DomainNoise",
    "NoiseCalibration",
    "Target",
    "ThresholdCalibration",
    "calibrate_noise",
    "calibrate_threshold",
    "choose",
    "default_unanswerable",
    "read_threshold",
    "store_threshold",
    "threshold_curve",
]

THRESHOLD_META_KEY = "no_result_thresholds"  # {fingerprint probe_hash: calibration dict}
UNANSWERABLE_FILE = Path(__file__).parent / "data" / "unanswerable.txt"
Target = Literal["precision", "coverage"]


def default_unanswerable() -> list[str]:
    lines = UNANSWERABLE_FILE.read_text(encoding="utf-8").splitlines()
    return [t.strip() for t in lines if t.strip() and not t.startswith("#")]


@dataclass(frozen=True)
class ThresholdCalibration:
    threshold: float
    target: Target
    target_value: float
    precision: float
    coverage: float
    reached: bool  # False: no threshold reaches the target; the closest point is given
    answerable: int
    unanswerable: int
    curve: tuple[tuple[float, float, float], ...]  # (threshold, precision, coverage), ascending t
    fingerprint: dict[str, Any] | None = None
    unanswerable_source: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["curve"] = [{"threshold": t, "precision": p, "coverage": c} for t, p, c in self.curve]
        return d


def threshold_curve(answerable: Sequence[float] | np.ndarray,
                    unanswerable: Sequence[float] | np.ndarray) -> list[tuple[float, float, float]]:
    """(t, precision, coverage) at every distinct top score t, ascending (answer when score ≥ t)."""
    a = np.sort(np.asarray(answerable, dtype=np.float64))
    u = np.sort(np.asarray(unanswerable, dtype=np.float64))
    if a.size == 0:
        raise InputError(field="answerable", expected="at least one answerable query", found=0)
    out = []
    for t in np.unique(np.concatenate([a, u])):
        tp = a.size - int(np.searchsorted(a, t, side="left"))
        fp = u.size - int(np.searchsorted(u, t, side="left"))
        out.append((float(t), tp / (tp + fp) if tp + fp else 1.0, tp / a.size))
    return out


def choose(curve: list[tuple[float, float, float]], target: Target, value: float
           ) -> tuple[tuple[float, float, float], bool]:
    """The point for a target precision (lowest t reaching it) or coverage (highest t)."""
    if not 0.0 <= value <= 1.0:
        raise InputError(field=f"target {target}", expected="a share in [0, 1]", found=value)
    if target == "precision":
        ok = [p for p in curve if p[1] >= value]
        return (ok[0], True) if ok else (max(curve, key=lambda p: (p[1], p[2])), False)
    ok = [p for p in curve if p[2] >= value]
    return (ok[-1], True) if ok else (curve[0], False)


def top_scores(store: VectorStore, vectors: np.ndarray) -> np.ndarray:
    """The best score of each query (−1, the lowest cosine, when the store returns nothing)."""
    hits = store.search(vectors, 1)
    return np.array([float(h.scores[0]) if len(h.ids) else -1.0 for h in hits])


def calibrate_threshold(
    store: VectorStore, embedder: Embedder, answerable: Sequence[str],
    unanswerable: Sequence[str] | None = None, *, target: Target = "precision",
    value: float = 0.95, unanswerable_source: str | None = None,
) -> ThresholdCalibration:
    from recallwatch.embedders.base import (
        FINGERPRINT_META_KEY,
        Fingerprint,
        check_fingerprint,
        fingerprint_of,
    )

    fp = fingerprint_of(embedder)
    stored = store.get_meta(FINGERPRINT_META_KEY)
    check_fingerprint(Fingerprint.from_dict(stored) if isinstance(stored, dict) else None, fp,
                      index=store.uri)
    negatives = list(unanswerable) if unanswerable is not None else default_unanswerable()
    if not negatives:
        raise InputError(field="unanswerable", expected="at least one query", found=0)
    pos = top_scores(store, np.asarray(embedder.embed_queries(list(answerable)), np.float32))
    neg = top_scores(store, np.asarray(embedder.embed_queries(negatives), np.float32))
    curve = threshold_curve(pos, neg)
    (t, p, c), reached = choose(curve, target, value)
    return ThresholdCalibration(
        t, target, value, p, c, reached, len(pos), len(neg), tuple(curve), fp.to_dict(),
        unanswerable_source or ("given" if unanswerable is not None else
                                f"shipped unrelated-domain list ({UNANSWERABLE_FILE.name})"))


def store_threshold(store: VectorStore, calibration: ThresholdCalibration) -> None:
    if calibration.fingerprint is None:
        raise UsageError("a threshold without an embedder fingerprint cannot be stored")
    entries = dict(store.get_meta(THRESHOLD_META_KEY) or {})
    record = {k: v for k, v in calibration.to_dict().items() if k != "curve"}
    record["calibrated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    entries[calibration.fingerprint["probe_hash"]] = record
    store.set_meta(THRESHOLD_META_KEY, entries)


def read_threshold(store: VectorStore, fingerprint: Fingerprint) -> float | None:
    """The threshold calibrated for this embedder; None when none was calibrated at all. A
    threshold calibrated only for other embedders is an error: scores are not comparable."""
    from recallwatch.embedders.base import Fingerprint

    entries = store.get_meta(THRESHOLD_META_KEY) or {}
    if not entries:
        return None
    if fingerprint.probe_hash in entries:
        return float(entries[fingerprint.probe_hash]["threshold"])
    others = ", ".join(Fingerprint.from_dict(e["fingerprint"]).short() for e in entries.values())
    raise EmbedderMismatchError(
        f"the no-result threshold stored in {store.uri} was calibrated for {others}, not for "
        f"{fingerprint.short()}: a threshold is not portable across embedders; run "
        "`recallwatch calibrate-threshold` with this embedder")


# -- noise ceiling -----------------------------------------------------------------------------
@dataclass(frozen=True)
class DomainNoise:
    domain: str
    healthy: int  # queries with recall 1
    top_k: int  # the domain's most common K
    noise: tuple[int, ...]  # sorted noise counts of the healthy queries
    baseline: int  # 95th percentile (an observed value)
    suggested: float  # ceiling = (baseline + margin) / K, capped at (K - 1) / K
    capped: bool


@dataclass(frozen=True)
class NoiseCalibration:
    overall: DomainNoise
    domains: tuple[DomainNoise, ...]
    margin: int
    run_id: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def policy_yaml(self) -> str:
        lines = [f"# noise ceiling calibrated from run {self.run_id}: healthy queries (recall 1),",
                 f"# baseline = 95th percentile of their noise, ceiling = baseline + {self.margin} "
                 "chunk(s), over K",
                 "noise_ceiling:", f"  default: {self.overall.suggested:.2f}", "  per_domain:"]
        for d in self.domains:
            note = "  # capped: the rule cannot fail a query here" if d.capped else ""
            lines.append(f"    {d.domain}: {d.suggested:.2f}  # n={d.healthy}, baseline "
                         f"{d.baseline}/{d.top_k}{note}")
        if not self.domains:
            lines[-1] = "  per_domain: {}"
        return "\n".join(lines) + "\n"


def _domain_noise(name: str, noise: list[int], ks: list[int], margin: int) -> DomainNoise:
    k = max(set(ks), key=ks.count)
    base = int(np.quantile(np.asarray(noise), 0.95, method="higher"))
    ceiling = (base + margin) / k
    capped = ceiling > (k - 1) / k
    return DomainNoise(name, len(noise), k, tuple(sorted(noise)), base,
                       round(min(ceiling, (k - 1) / k), 4), capped)


def calibrate_noise(result: GateResult, *, margin: int = 1) -> NoiseCalibration:
    """Suggested noise ceilings from the healthy queries of one full gate run."""
    if margin < 0:
        raise InputError(field="margin", expected="a non-negative number of chunks", found=margin)
    healthy = [q for q in result.queries if q.recall >= 1.0 - 1e-12]
    if not healthy:
        raise InputError(field="queries", expected="at least one healthy query (recall 1) in the "
                         f"run {result.run_id}", found=0)
    by: dict[str, list[Any]] = {}
    for q in healthy:
        by.setdefault(q.domain or "(none)", []).append(q)
    domains = tuple(_domain_noise(d, [q.noise for q in qs], [q.top_k for q in qs], margin)
                    for d, qs in sorted(by.items()) if d != "(none)")
    overall = _domain_noise("(all)", [q.noise for q in healthy], [q.top_k for q in healthy],
                            margin)
    return NoiseCalibration(overall, domains, margin, result.run_id)
