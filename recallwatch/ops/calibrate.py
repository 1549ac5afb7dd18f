"""Calibrations: the no-result score threshold, and the noise ceiling per domain.

**No-result threshold.** Results scoring below the threshold ``t`` are dropped; when nothing
remains the system answers "no result". *The answer* to a query is therefore its top K results
(K: the golden set's ``top_k``, or the query's own) that score at least ``t``; a query is
*answered* when its best result scores at least ``t``, and *answered correctly* when the answer
holds at least one of its expected chunks. Over the golden set's queries (answerable: their
answer is in the corpus) and unanswerable ones, at each threshold:

* ``coverage(t)``  = answerable queries answered ÷ answerable queries (what ``monitor`` measures
  live on its probes);
* ``precision(t)`` = answers holding an expected chunk ÷ all answers given, answerable and
  unanswerable queries alike (1 when none is given). An answerable query answered without any of
  its expected chunks is a wrong answer, like an unanswerable query answered at all.

The unanswerable queries (``negatives``):

* ``in-domain`` (default): each golden query again, with its expected chunks removed from the
  results, so its answer is absent from the corpus. This is the hard case the threshold exists
  for: a question of the domain whose answer the knowledge base does not hold, where the best
  remaining chunk is on topic and scores high. (A chunk that also answers the question but is not
  in its expected list makes that negative look answerable: list such chunks as expected.)
* ``off-domain``: questions about other subjects (given, or the list shipped in
  ``recallwatch/ops/data/unanswerable.txt``). They score low against any corpus and are easy to
  reject, so alone they give a threshold that is too low for in-domain questions.
* ``both``.

Precision depends on the mix: with in-domain negatives alone, half the questions asked have no
answer in the corpus.

The chosen point is the lowest ``t`` whose precision reaches the target (most coverage at that
precision), or the highest ``t`` whose coverage reaches the target. Scores are cosine
similarities of one embedder: the threshold is stored in the store's metadata *under that
embedder's fingerprint*, and reading it with another embedder is an error.

**Noise ceiling.** From a full gate run, the noise of the *healthy* queries (recall 1, noise
measurable: see ``recallwatch.acceptance.noise``) per domain: its distribution, a baseline (the 95th
percentile, an observed value) and a suggested ceiling one margin (in chunks) above it, printed as
the policy's ``noise_ceiling`` section. A domain with fewer than ``MIN_HEALTHY`` healthy queries is
named and keeps the default.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from recallwatch.errors import EmbedderMismatchError, InputError, UsageError
from recallwatch.stores.base import Hits, search_all, update_meta

if TYPE_CHECKING:
    from recallwatch.acceptance.model import GateResult
    from recallwatch.embedders.base import Embedder, Fingerprint
    from recallwatch.formats.golden import GoldenQuery, GoldenSet
    from recallwatch.stores.base import VectorStore

__all__ = [
    "MIN_HEALTHY",
    "THRESHOLD_META_KEY",
    "UNANSWERABLE_FILE",
    "DomainNoise",
    "Negatives",
    "NoiseCalibration",
    "Sample",
    "Target",
    "ThresholdCalibration",
    "calibrate_noise",
    "calibrate_threshold",
    "choose",
    "default_unanswerable",
    "read_threshold",
    "refuse_test_calibration",
    "search_excluding",
    "store_threshold",
    "threshold_curve",
    "tuning_part",
]

THRESHOLD_META_KEY = "no_result_thresholds"  # {fingerprint probe_hash: calibration dict}
UNANSWERABLE_FILE = Path(__file__).parent / "data" / "unanswerable.txt"
Target = Literal["precision", "coverage"]
Negatives = Literal["in-domain", "off-domain", "both"]
SampleKind = Literal["answerable", "in-domain", "off-domain"]


def default_unanswerable() -> list[str]:
    lines = UNANSWERABLE_FILE.read_text(encoding="utf-8").splitlines()
    return [t.strip() for t in lines if t.strip() and not t.startswith("#")]


@dataclass(frozen=True)
class Sample:
    """One query as the calibration searched it."""

    query: str  # the golden query's id, or the text of an off-domain query
    kind: SampleKind
    top_id: str | None  # the best result (in-domain: once the expected chunks are removed)
    top_score: float | None  # None: the store returned nothing
    hit_score: float | None = None  # answerable: best expected chunk in the top K; None: none


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
    negatives: Negatives = "in-domain"
    samples: tuple[Sample, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["curve"] = [{"threshold": t, "precision": p, "coverage": c} for t, p, c in self.curve]
        return d

    def refusal(self, min_coverage: float) -> str | None:
        """Why this threshold must not be stored, with what to change; None when it may be: it
        misses its target (no threshold reaches it on these queries), or its coverage is under
        ``min_coverage`` (it would leave most answerable questions without an answer)."""
        if not self.reached:
            got = self.precision if self.target == "precision" else self.coverage
            return (f"NOT stored: {self.target} {got:.3f} misses the target "
                    f"{self.target_value:g}, and no threshold reaches it on these queries; "
                    f"ask for what the search can reach (--target-{self.target} {got:.3f} "
                    "or lower), or improve the search and calibrate again")
        if self.coverage < min_coverage:
            return (f"NOT stored: coverage {self.coverage:.3f} is under --min-coverage "
                    f"{min_coverage:g} (the threshold would leave most answerable questions "
                    "without an answer); lower --target-precision, or ask for --target-coverage, "
                    "or pass --min-coverage 0 to store it anyway")
        return None


def _scores(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """Scores as floats, "nothing" (None) as −inf: never at or above any threshold."""
    return np.asarray([-np.inf if v is None else v for v in values], dtype=np.float64)


def threshold_curve(answered: Sequence[float | None] | np.ndarray,
                    correct: Sequence[float | None] | np.ndarray,
                    unanswerable: Sequence[float | None] | np.ndarray,
                    ) -> list[tuple[float, float, float]]:
    """(t, precision, coverage) at every distinct score t, ascending.

    Per answerable query, ``answered`` is its best score (answered when ≥ t) and ``correct`` the
    best score of an expected chunk in its top K (a correct answer when ≥ t; None: no expected
    chunk is returned); per unanswerable query, ``unanswerable`` is its best score."""
    top, hit, neg = (np.sort(_scores(v)) for v in (answered, correct, unanswerable))
    if top.size == 0:
        raise InputError(field="answerable", expected="at least one answerable query", found=0)
    if hit.size != top.size:
        raise InputError(field="correct", expected=f"one score per answerable query ({top.size})",
                         found=hit.size)
    every = np.concatenate([top, hit, neg])
    out = []
    for t in np.unique(every[np.isfinite(every)]):
        answered_n = top.size - int(np.searchsorted(top, t, side="left"))
        right = hit.size - int(np.searchsorted(hit, t, side="left"))
        wrong_neg = neg.size - int(np.searchsorted(neg, t, side="left"))
        given = answered_n + wrong_neg
        out.append((float(t), right / given if given else 1.0, answered_n / top.size))
    return out


def choose(curve: list[tuple[float, float, float]], target: Target, value: float
           ) -> tuple[tuple[float, float, float], bool]:
    """The point for a target precision (lowest t reaching it) or coverage (highest t)."""
    if not 0.0 <= value <= 1.0:
        raise InputError(field=f"target {target}", expected="a share in [0, 1]", found=value)
    if not curve:
        raise InputError(field="scores", expected="at least one query with a result", found=0)
    if target == "precision":
        ok = [p for p in curve if p[1] >= value]
        return (ok[0], True) if ok else (max(curve, key=lambda p: (p[1], p[2])), False)
    ok = [p for p in curve if p[2] >= value]
    return (ok[-1], True) if ok else (curve[0], False)


def search_excluding(store: VectorStore, vectors: np.ndarray, k: int,
                     exclude: Sequence[Collection[str]]) -> list[Hits]:
    """The top ``k`` of each query once the ids in its ``exclude`` set are removed. Store filters
    are equalities only, so the search goes ``k`` + the largest set deep: ``k`` always remain."""
    if len(exclude) != len(vectors):
        raise InputError(field="exclude", expected=f"one id set per query ({len(vectors)})",
                         found=len(exclude))
    depth = k + max((len(e) for e in exclude), default=0)
    out = []
    for h, ex in zip(search_all(store, vectors, depth), exclude, strict=True):
        keep = [i for i, cid in enumerate(h.ids) if cid not in ex][:k]
        out.append(Hits([h.ids[i] for i in keep], np.asarray(h.scores)[keep]))
    return out


def _top(h: Hits) -> tuple[str | None, float | None]:
    return (h.ids[0], float(h.scores[0])) if h.ids else (None, None)


def _with_anchor_chunks(store: VectorStore,
                        queries: Sequence[GoldenQuery]) -> Sequence[GoldenQuery]:
    """Each query with the chunks its content anchors resolve to in ``store`` added to its
    expected chunks, as the gate resolves them (any alternative of an anchor counts as an
    expected chunk in the answer, and all are removed for the in-domain negatives)."""
    if not any(q.anchors for q in queries):
        return queries
    from recallwatch.acceptance.anchors import resolve_queries

    resolved = resolve_queries(queries, lambda docs: store.chunks(doc_ids=list(docs)))
    return [replace(q, anchors=()) for q in resolved.candidates(queries)]


def calibrate_threshold(
    store: VectorStore, embedder: Embedder, golden: GoldenSet,
    unanswerable: Sequence[str] | None = None, *, negatives: Negatives = "in-domain",
    target: Target = "precision", value: float = 0.95, unanswerable_source: str | None = None,
    part: str = "tune",
) -> ThresholdCalibration:
    """The no-result threshold for ``golden``'s queries on ``store``. ``unanswerable`` are the
    off-domain queries (default: the shipped list), used when ``negatives`` includes them.
    With a tune/test split only the ``tune`` queries are used (``part="test"`` is refused)."""
    from recallwatch.embedders.base import (
        FINGERPRINT_META_KEY,
        Fingerprint,
        check_fingerprint,
        fingerprint_of,
    )

    if negatives == "in-domain" and unanswerable is not None:
        raise UsageError("the unanswerable queries given are off-domain negatives: use them with "
                         "negatives 'off-domain' or 'both' (--negatives)")
    golden = tuning_part(golden, part)
    fp = fingerprint_of(embedder)
    stored = store.get_meta(FINGERPRINT_META_KEY)
    check_fingerprint(Fingerprint.from_dict(stored) if isinstance(stored, dict) else None, fp,
                      index=store.uri)
    queries = _with_anchor_chunks(store, golden.queries)
    vectors = np.asarray(embedder.embed_queries([q.text for q in queries]), np.float32)
    ks = [q.top_k or golden.top_k for q in queries]
    samples = []
    for q, k, h in zip(queries, ks, search_all(store, vectors, max(ks)), strict=True):
        hits = [float(s) for cid, s in zip(h.ids[:k], h.scores[:k]) if cid in q.all_expected]
        samples.append(Sample(q.id, "answerable", *_top(h), max(hits) if hits else None))
    sources = []
    if negatives != "off-domain":
        absent = search_excluding(store, vectors, 1, [set(q.all_expected) for q in queries])
        samples += [Sample(q.id, "in-domain", *_top(h)) for q, h in zip(queries, absent)]
        sources.append(f"{len(queries)} in-domain: each golden query with its expected chunks "
                       "removed from the results")
    if negatives != "in-domain":
        off = list(unanswerable) if unanswerable is not None else default_unanswerable()
        if not off:
            raise InputError(field="unanswerable", expected="at least one query", found=0)
        off_vectors = np.asarray(embedder.embed_queries(off), np.float32)
        samples += [Sample(t, "off-domain", *_top(h))
                    for t, h in zip(off, store.search(off_vectors, 1))]
        shipped = f"shipped unrelated-domain list ({UNANSWERABLE_FILE.name})"
        source = unanswerable_source or ("given" if unanswerable is not None else shipped)
        sources.append(f"{len(off)} off-domain: {source}")
    pos = [s for s in samples if s.kind == "answerable"]
    neg = [s.top_score for s in samples if s.kind != "answerable"]
    curve = threshold_curve([s.top_score for s in pos], [s.hit_score for s in pos], neg)
    (t, p, c), reached = choose(curve, target, value)
    return ThresholdCalibration(
        t, target, value, p, c, reached, len(pos), len(neg), tuple(curve), fp.to_dict(),
        "; ".join(sources), negatives, tuple(samples))


def store_threshold(store: VectorStore, calibration: ThresholdCalibration) -> None:
    if calibration.fingerprint is None:
        raise UsageError("a threshold without an embedder fingerprint cannot be stored")
    record = {k: v for k, v in calibration.to_dict().items() if k not in ("curve", "samples")}
    record["calibrated_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    probe_hash = calibration.fingerprint["probe_hash"]
    update_meta(store, THRESHOLD_META_KEY,
                lambda entries: {**(entries or {}), probe_hash: record})


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
        "`recallwatch ops calibrate-threshold` with this embedder")


# -- the held-out test part -------------------------------------------------------------------
def refuse_test_calibration(part: str) -> None:
    """Calibrating on anything but ``tune`` is refused when the set has a split: the test
    queries must stay unseen by every threshold, or the gate's verdict on them is flattered."""
    raise UsageError(
        f"calibrating on the {part!r} queries is refused: the test queries are held out so that "
        "the gate's verdict is measured on queries no threshold was fitted to; calibrate on "
        "the tune queries (--split tune, the default)")


def tuning_part(golden: GoldenSet, part: str = "tune") -> GoldenSet:
    """The queries a calibration may use: the ``tune`` part when the set has a split, else all
    of them. Asking for ``test`` is refused."""
    if part != "tune":
        refuse_test_calibration(part)
    if not golden.has_split:
        return golden
    tune = golden.part("tune")
    if not tune.queries:
        raise InputError(source=golden.source, field="split",
                         expected="at least one query marked `split: tune` to calibrate on",
                         found=0, hint="`recallwatch golden split` assigns them")
    return tune


# -- noise ceiling -----------------------------------------------------------------------------
# A domain's ceiling is calibrated from at least this many healthy queries; with fewer, the 95th
# percentile is just the largest of one or two counts, and the domain keeps the default.
MIN_HEALTHY = 5


@dataclass(frozen=True)
class DomainNoise:
    domain: str
    healthy: int  # queries with recall 1 whose noise the rule could measure
    top_k: int  # the domain's most common K
    noise: tuple[int, ...]  # sorted noise counts of the healthy queries
    baseline: int  # 95th percentile (an observed value)
    suggested: float  # ceiling = (baseline + margin) / K, capped at (K - 1) / K
    capped: bool


@dataclass(frozen=True)
class NoiseCalibration:
    overall: DomainNoise | None  # None: fewer than ``min_healthy`` healthy queries in all
    domains: tuple[DomainNoise, ...]  # the domains with enough healthy queries
    margin: int
    run_id: str
    min_healthy: int = MIN_HEALTHY
    too_few: dict[str, int] = field(default_factory=dict)  # domain -> its healthy queries
    # healthy queries left out: their labels are too sparse for the noise rule (see the gate)
    unmeasured: tuple[str, ...] = ()
    default: float = 0.30  # the ceiling of the run's policy, kept where nothing is calibrated

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def default_ceiling(self) -> float:
        """The snippet's default: calibrated from all healthy queries when there are enough,
        else the run's policy's. The domains with too few queries take it."""
        return self.overall.suggested if self.overall else self.default

    def summary(self) -> list[str]:
        """What the calibration used and left out, one sentence each."""
        used = sum(d.healthy for d in self.domains)
        lines = [f"calibrated from run {self.run_id}: healthy queries (recall 1) whose noise "
                 f"the rule could measure; a domain needs at least {self.min_healthy}"]
        if self.domains:
            lines.append("used: " + ", ".join(f"{d.domain} {d.healthy}" for d in self.domains)
                         + f" ({used} queries)")
        if self.too_few:
            lines.append("too few healthy queries, not calibrated (they take the default "
                         f"ceiling below, {self.default_ceiling:.2f}): " + ", ".join(
                             f"{d} {n}" for d, n in sorted(self.too_few.items())))
        if self.unmeasured:
            lines.append(f"left out: {len(self.unmeasured)} healthy quer"
                         f"{'y' if len(self.unmeasured) == 1 else 'ies'} whose expected lists "
                         "are too short for the noise rule to measure anything (judge their top "
                         "K with `recallwatch label` and pass --judgments to use them)")
        if self.overall is not None:
            lines.append(f"default: from all {self.overall.healthy} healthy queries")
        else:
            total = sum(d.healthy for d in self.domains) + sum(self.too_few.values())
            lines.append(f"default: {total} healthy quer{'y' if total == 1 else 'ies'} in all, "
                         f"fewer than {self.min_healthy}: the default stays {self.default:.2f}")
        for d in (*self.domains, *([self.overall] if self.overall else [])):
            if d.capped:
                name = "default" if d is self.overall else d.domain
                lines.append(f"{name}: capped at {d.suggested:.2f} ({d.top_k - 1} of "
                             f"{d.top_k}): its healthy queries already reach noise {d.baseline}"
                             ", so at this ceiling the noise rule cannot fail a query there")
        return lines

    def policy_yaml(self) -> str:
        lines = [f"# {line}" for line in self.summary()]
        lines += [f"# baseline = 95th percentile of their noise, ceiling = baseline + "
                  f"{self.margin} chunk(s), over K",
                  "noise_ceiling:",
                  f"  default: {self.default_ceiling:.2f}"
                  + ("" if self.overall else "  # not calibrated: too few healthy queries"),
                  "  per_domain:"]
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


def calibrate_noise(result: GateResult, *, margin: int = 1,
                    min_healthy: int = MIN_HEALTHY) -> NoiseCalibration:
    """Suggested noise ceilings from the healthy queries of one full gate run (of the ``tune``
    queries when the set has a split: a run scored on ``test`` is refused). A domain with fewer
    than ``min_healthy`` healthy queries is named and keeps the default; healthy queries whose
    noise the rule could not measure (too few labels) are left out and counted."""
    if result.split and result.split.get("scored") != "tune":
        refuse_test_calibration(str(result.split.get("scored")))
    if margin < 0:
        raise InputError(field="margin", expected="a non-negative number of chunks", found=margin)
    if min_healthy < 1:
        raise InputError(field="min_healthy", expected="at least 1 query", found=min_healthy)
    recall_one = [q for q in result.queries if q.recall >= 1.0 - 1e-12]
    # Left out: a count that rests on results nobody listed or judged, on a query that lists too
    # few chunks for the rule (unless the policy says unlisted results are irrelevant).
    strict = result.policy.get("noise_unlisted") == "irrelevant"
    healthy = [q for q in recall_one if strict or not (q.labels_sparse and q.noise_unjudged)]
    unmeasured = tuple(q.id for q in recall_one if q not in healthy)
    if not recall_one:
        raise InputError(field="queries", expected="at least one healthy query (recall 1) in the "
                         f"run {result.run_id}", found=0)
    by: dict[str, list[Any]] = {}
    for q in healthy:
        by.setdefault(q.domain or "(none)", []).append(q)
    domains = tuple(_domain_noise(d, [q.noise for q in qs], [q.top_k for q in qs], margin)
                    for d, qs in sorted(by.items()) if d != "(none)" and len(qs) >= min_healthy)
    too_few = {d: len(qs) for d, qs in sorted(by.items())
               if d != "(none)" and len(qs) < min_healthy}
    overall = (_domain_noise("(all)", [q.noise for q in healthy], [q.top_k for q in healthy],
                             margin) if len(healthy) >= min_healthy else None)
    default = float((result.policy.get("noise_ceiling") or {}).get("default", 0.30))
    return NoiseCalibration(overall, domains, margin, result.run_id, min_healthy, too_few,
                            unmeasured, default)
