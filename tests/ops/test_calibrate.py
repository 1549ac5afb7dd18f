"""No-result threshold (curve, choice, fingerprint binding) and noise-ceiling calibration, on data
whose answer is known."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.embedders.base import FINGERPRINT_META_KEY, fingerprint_of
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.errors import EmbedderMismatchError, InputError
from recallwatch.formats.golden import GoldenSet
from recallwatch.formats.policy import load_policy
from recallwatch.formats.results import RankedList
from recallwatch.ops.calibrate import (
    calibrate_noise,
    calibrate_threshold,
    choose,
    default_unanswerable,
    read_threshold,
    store_threshold,
    threshold_curve,
)
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb import LanceStore
from recallwatch.suite.gate import run_gate
from recallwatch.suite.model import GateResult


def test_curve_and_choice_on_known_scores() -> None:
    curve = threshold_curve([0.9, 0.8, 0.7], [0.75, 0.5])
    expected = [(0.5, 3 / 5, 1.0), (0.7, 3 / 4, 1.0), (0.75, 2 / 3, 2 / 3), (0.8, 1.0, 2 / 3),
                (0.9, 1.0, 1 / 3)]
    assert np.asarray(curve) == pytest.approx(np.asarray(expected))
    (t, precision, coverage), reached = choose(curve, "precision", 0.95)
    assert (t, precision, reached) == (0.8, 1.0, True) and coverage == pytest.approx(2 / 3)
    assert choose(curve, "precision", 0.75)[0][0] == 0.7  # the lowest t: most coverage
    assert choose(curve, "coverage", 1.0)[0][0] == 0.7  # the highest t keeping coverage 1
    assert choose(curve, "coverage", 0.5)[0][0] == 0.8


def test_an_unreachable_target_gives_the_closest_point_and_says_so() -> None:
    curve = threshold_curve([0.5, 0.6], [0.9])  # every answered set holds the negative
    point, reached = choose(curve, "precision", 0.99)
    assert not reached and point[0] == 0.5  # the best precision there is: 2/3 at t = 0.5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=30),
       st.lists(st.floats(-1, 1), max_size=30))
def test_curve_matches_a_direct_count(pos: list[float], neg: list[float]) -> None:
    for t, precision, coverage in threshold_curve(pos, neg):
        tp = sum(1 for s in pos if s >= t)
        fp = sum(1 for s in neg if s >= t)
        assert coverage == pytest.approx(tp / len(pos))
        assert precision == pytest.approx(tp / (tp + fp) if tp + fp else 1.0)


def test_shipped_unanswerable_list_is_clean() -> None:
    queries = default_unanswerable()
    assert len(queries) >= 30 and len(set(queries)) == len(queries)
    assert not any(q.startswith("#") for q in queries)


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float32)


@pytest.fixture
def kb(tmp_path: Path) -> tuple[LanceStore, CallableEmbedder, list[str], list[str]]:
    """Answerable queries sit next to a stored chunk; unanswerable ones point elsewhere."""
    rng = np.random.default_rng(3)
    dim = 24
    docs = _unit(rng.standard_normal((200, dim)))
    # the documents live in the first 20 dimensions; unanswerable queries point along the others
    docs[:, 20:] = 0
    docs = _unit(docs)
    pos_texts = [f"pos {i}" for i in range(40)]
    neg_texts = [f"neg {i}" for i in range(40)]
    table = {t: _unit(docs[i][None, :] + 0.05 * rng.standard_normal((1, dim)))[0]
             for i, t in enumerate(pos_texts)}
    for t in neg_texts:
        v = np.zeros(dim)
        v[20:] = rng.standard_normal(4)
        v[:20] = 0.1 * rng.standard_normal(20)
        table[t] = _unit(v[None, :])[0]

    def fn(texts: Sequence[str]) -> np.ndarray:
        return np.stack([table.get(t, docs[0]) for t in texts])

    emb = CallableEmbedder(fn, name="toy", dimension=dim)
    store = LanceStore(tmp_path / "kb", "c", create=True)
    store.upsert([Chunk(id=f"d{i}", text="") for i in range(len(docs))], docs)
    store.set_meta(FINGERPRINT_META_KEY, fingerprint_of(emb).to_dict())
    return store, emb, pos_texts, neg_texts


def test_threshold_on_separable_data_is_the_lowest_answerable_score(kb: tuple) -> None:  # type: ignore[type-arg]
    store, emb, pos, neg = kb
    cal = calibrate_threshold(store, emb, pos, neg, target="precision", value=1.0)
    pos_top = [h.scores[0] for h in store.search(emb.embed_queries(pos), 1, exact=True)]
    neg_top = [h.scores[0] for h in store.search(emb.embed_queries(neg), 1, exact=True)]
    assert max(neg_top) < min(pos_top)  # the construction separates them
    assert cal.threshold == pytest.approx(float(min(pos_top)))
    assert (cal.precision, cal.coverage, cal.reached) == (1.0, 1.0, True)
    assert cal.fingerprint == fingerprint_of(emb).to_dict()


def test_threshold_is_bound_to_the_embedder_fingerprint(kb: tuple) -> None:  # type: ignore[type-arg]
    store, emb, pos, neg = kb
    assert read_threshold(store, fingerprint_of(emb)) is None  # none calibrated yet
    cal = calibrate_threshold(store, emb, pos, neg)
    store_threshold(store, cal)
    assert read_threshold(store, fingerprint_of(emb)) == pytest.approx(cal.threshold)
    other = CallableEmbedder(lambda t: np.ones((len(t), 24)), name="other", dimension=24)
    with pytest.raises(EmbedderMismatchError, match=r"calibrated for toy@0 .* not portable"):
        read_threshold(store, fingerprint_of(other))
    with pytest.raises(EmbedderMismatchError, match="was built with toy"):
        calibrate_threshold(store, other, pos, neg)


# -- noise ceiling ---------------------------------------------------------------------------
def _case(ranks: dict[str, tuple[str, int | None]]) -> tuple[GoldenSet, dict[str, RankedList]]:
    """One expected chunk per query at the given rank (None: not retrieved), distinct scores."""
    queries, results = [], {}
    for qid, (domain, rank) in ranks.items():
        ids = [f"{qid}-x{i}" for i in range(20)]
        if rank is not None:
            ids[rank - 1] = f"{qid}-hit"
        queries.append({"id": qid, "text": qid, "expected": [f"{qid}-hit"], "domain": domain})
        results[qid] = RankedList(ids, np.linspace(0.9, 0.5, 20))
    return GoldenSet.from_dict({"name": "g", "queries": queries}), results


def _run(ranks: dict[str, tuple[str, int | None]]) -> GateResult:
    golden, results = _case(ranks)
    return run_gate(golden, results=results)


def test_noise_ceiling_per_domain_on_known_noise(tmp_path: Path) -> None:
    # one expected chunk at rank r of K=10 → noise = 10 - r
    ranks: dict[str, tuple[str, int | None]] = {
        "a1": ("A", 8), "a2": ("A", 9), "a3": ("A", 10), "b1": ("B", 1), "b2": ("B", 2),
        "lost": ("B", None)}
    cal = calibrate_noise(_run(ranks))
    a, b = cal.domains
    assert (a.domain, a.healthy, a.noise, a.baseline, a.suggested) == ("A", 3, (0, 1, 2), 2, 0.3)
    assert (b.domain, b.healthy, b.noise, b.baseline) == ("B", 2, (8, 9), 9)
    assert b.suggested == 0.9 and b.capped  # (9 + 1) / 10 would be 1.0: capped at (K-1)/K
    assert cal.overall.healthy == 5  # the query that lost its chunk is not healthy
    snippet = tmp_path / "policy.yaml"
    snippet.write_text(cal.policy_yaml())
    policy = load_policy(snippet)  # the snippet is a valid policy
    assert policy.noise_ceiling_per_domain == {"A": 0.3, "B": 0.9}
    assert policy.noise_ceiling == cal.overall.suggested
    # under the default ceiling (0.30) the healthy B queries fail the noise rule; under the
    # calibrated one no healthy query does
    before = _run(ranks)
    golden, results = _case(ranks)
    after = run_gate(golden, results=results, policy=policy)
    noisy = {q.id for q in before.queries if "noise" in q.failed_rules}
    assert noisy == {"b1", "b2"}
    assert not any("noise" in q.failed_rules for q in after.queries)


def test_noise_calibration_needs_a_healthy_query() -> None:
    result = _run({"lost": ("B", None)})
    with pytest.raises(InputError, match="at least one healthy query"):
        calibrate_noise(result)
    with pytest.raises(InputError, match="margin"):
        calibrate_noise(_run({"a": ("A", 1)}), margin=-1)
