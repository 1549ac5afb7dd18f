"""No-result threshold (curve, choice, fingerprint binding) and noise-ceiling calibration, on data
whose answer is known."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallwatch.acceptance.gate import run_gate
from recallwatch.acceptance.model import GateResult
from recallwatch.embedders.base import FINGERPRINT_META_KEY, Embedder, fingerprint_of
from recallwatch.embedders.function import CallableEmbedder
from recallwatch.errors import EmbedderMismatchError, InputError, UsageError
from recallwatch.formats.golden import GoldenSet, load_golden
from recallwatch.formats.policy import Policy, load_policy
from recallwatch.formats.results import RankedList
from recallwatch.ops.calibrate import (
    THRESHOLD_META_KEY,
    ThresholdCalibration,
    calibrate_noise,
    calibrate_threshold,
    choose,
    default_unanswerable,
    read_threshold,
    search_excluding,
    store_threshold,
    threshold_curve,
)
from recallwatch.stores.base import Chunk
from recallwatch.stores.lancedb.store import LanceStore

KB = Path(__file__).resolve().parents[2] / "examples" / "kb"


def test_curve_and_choice_on_known_scores() -> None:
    tops = [0.9, 0.8, 0.7]
    curve = threshold_curve(tops, tops, [0.75, 0.5])  # every answer holds its expected chunk
    expected = [(0.5, 3 / 5, 1.0), (0.7, 3 / 4, 1.0), (0.75, 2 / 3, 2 / 3), (0.8, 1.0, 2 / 3),
                (0.9, 1.0, 1 / 3)]
    assert np.asarray(curve) == pytest.approx(np.asarray(expected))
    (t, precision, coverage), reached = choose(curve, "precision", 0.95)
    assert (t, precision, reached) == (0.8, 1.0, True) and coverage == pytest.approx(2 / 3)
    assert choose(curve, "precision", 0.75)[0][0] == 0.7  # the lowest t: most coverage
    assert choose(curve, "coverage", 1.0)[0][0] == 0.7  # the highest t keeping coverage 1
    assert choose(curve, "coverage", 0.5)[0][0] == 0.8


def test_an_answer_without_an_expected_chunk_is_a_wrong_answer() -> None:
    # q1's top hit (0.9) is expected; q2's top hit (0.8) is not, its expected chunk scores 0.6
    # inside the top K; q3 has no expected chunk in its top K at all.
    curve = {t: (p, c) for t, p, c in threshold_curve([0.9, 0.8, 0.7], [0.9, 0.6, None], [])}
    assert curve[0.6] == pytest.approx((2 / 3, 1.0))  # q2's answer reaches down to its chunk
    assert curve[0.7] == pytest.approx((1 / 3, 1.0))  # q2 answered without it: wrong; q3 wrong
    assert curve[0.8] == pytest.approx((1 / 2, 2 / 3))
    assert curve[0.9] == pytest.approx((1.0, 1 / 3))


def test_an_unreachable_target_gives_the_closest_point_and_says_so() -> None:
    curve = threshold_curve([0.5, 0.6], [0.5, 0.6], [0.9])  # every answered set holds the negative
    point, reached = choose(curve, "precision", 0.99)
    assert not reached and point[0] == 0.5  # the best precision there is: 2/3 at t = 0.5


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1, 1), st.one_of(st.none(), st.floats(0, 1))),
                min_size=1, max_size=30),
       st.lists(st.one_of(st.none(), st.floats(-1, 1)), max_size=30))
def test_curve_matches_a_direct_count(pos: list[tuple[float, float | None]],
                                      neg: list[float | None]) -> None:
    # an expected chunk scores at most the top score: hit = top - gap
    tops = [top for top, _ in pos]
    hits = [None if gap is None else top - gap for top, gap in pos]
    for t, precision, coverage in threshold_curve(tops, hits, neg):
        answered = sum(1 for s in tops if s >= t)
        right = sum(1 for s in hits if s is not None and s >= t)
        wrong = sum(1 for s in neg if s is not None and s >= t)
        assert coverage == pytest.approx(answered / len(pos))
        given = answered + wrong
        assert precision == pytest.approx(right / given if given else 1.0)


def test_shipped_unanswerable_list_is_clean() -> None:
    queries = default_unanswerable()
    assert len(queries) >= 30 and len(set(queries)) == len(queries)
    assert not any(q.startswith("#") for q in queries)


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True), dtype=np.float32)


Toy = tuple[LanceStore, CallableEmbedder, GoldenSet, list[str]]


def _golden(expected: dict[str, list[str]], top_k: int = 10) -> GoldenSet:
    return GoldenSet.from_dict({"name": "toy", "top_k": top_k, "queries": [
        {"id": t.replace(" ", ""), "text": t, "expected": e} for t, e in expected.items()]})


@pytest.fixture
def kb(tmp_path: Path) -> Toy:
    """Answerable query i sits next to stored chunk d{i}; off-domain ones point elsewhere."""
    rng = np.random.default_rng(3)
    dim = 24
    docs = _unit(rng.standard_normal((200, dim)))
    # the documents live in the first 20 dimensions; off-domain queries point along the others
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
    return store, emb, _golden({t: [f"d{i}"] for i, t in enumerate(pos_texts)}), neg_texts


def test_threshold_on_separable_data_is_the_lowest_answerable_score(kb: Toy) -> None:
    store, emb, golden, neg = kb
    texts = [q.text for q in golden.queries]
    cal = calibrate_threshold(store, emb, golden, neg, negatives="off-domain",
                              target="precision", value=1.0)
    pos_top = [h.scores[0] for h in store.search(emb.embed_queries(texts), 1, exact=True)]
    neg_top = [h.scores[0] for h in store.search(emb.embed_queries(neg), 1, exact=True)]
    assert max(neg_top) < min(pos_top)  # the construction separates them
    assert cal.threshold == pytest.approx(float(min(pos_top)))
    assert (cal.precision, cal.coverage, cal.reached) == (1.0, 1.0, True)
    assert cal.fingerprint == fingerprint_of(emb).to_dict()
    assert (cal.answerable, cal.unanswerable, cal.negatives) == (40, 40, "off-domain")
    assert cal.unanswerable_source == "40 off-domain: given"


def test_a_top_hit_that_is_not_expected_is_not_a_correct_answer(kb: Toy) -> None:
    store, emb, _, _ = kb
    # "pos 0" lands on d0; expecting d1 instead makes its answer hold no expected chunk
    golden = _golden({"pos 0": ["d1"], "pos 1": ["d1"]}, top_k=1)
    cal = calibrate_threshold(store, emb, golden, negatives="in-domain", value=1.0)
    wrong, right = (s for s in cal.samples if s.kind == "answerable")
    assert (wrong.top_id, wrong.hit_score, right.top_id) == ("d0", None, "d1")
    assert right.hit_score == right.top_score and wrong.top_score is not None
    assert all(p <= 0.5 for t, p, c in cal.curve if t <= wrong.top_score)  # 1 right of ≥ 2
    assert cal.threshold > wrong.top_score and cal.coverage == 0.5


def test_in_domain_negatives_search_without_the_expected_chunks(kb: Toy) -> None:
    store, emb, golden, _ = kb
    vectors = emb.embed_queries([q.text for q in golden.queries])
    excluded = [set(q.expected) | {"d100"} for q in golden.queries]
    full = store.search(vectors, 12)
    for h, f, ex in zip(search_excluding(store, vectors, 10, excluded), full, excluded,
                        strict=True):
        assert len(h.ids) == 10 and not ex & set(h.ids)
        assert h.ids == [c for c in f.ids if c not in ex][:10]  # the ranking, less the excluded
    cal = calibrate_threshold(store, emb, golden)
    negatives = [s for s in cal.samples if s.kind == "in-domain"]
    assert [s.query for s in negatives] == [q.id for q in golden.queries]
    assert all(s.top_id not in q.expected for s, q in zip(negatives, golden.queries))
    with pytest.raises(UsageError, match="off-domain negatives"):
        calibrate_threshold(store, emb, golden, ["neg 0"], negatives="in-domain")
    with pytest.raises(InputError, match="one id set per query"):
        search_excluding(store, vectors, 1, [])


def test_threshold_is_bound_to_the_embedder_fingerprint(kb: Toy) -> None:
    store, emb, golden, _ = kb
    assert read_threshold(store, fingerprint_of(emb)) is None  # none calibrated yet
    cal = calibrate_threshold(store, emb, golden)
    store_threshold(store, cal)
    assert read_threshold(store, fingerprint_of(emb)) == pytest.approx(cal.threshold)
    (stored,) = store.get_meta(THRESHOLD_META_KEY).values()
    assert "samples" not in stored and "curve" not in stored  # the figures, not the workings
    other = CallableEmbedder(lambda t: np.ones((len(t), 24)), name="other", dimension=24)
    with pytest.raises(EmbedderMismatchError, match=r"calibrated for toy@0 .* not portable"):
        read_threshold(store, fingerprint_of(other))
    with pytest.raises(EmbedderMismatchError, match="was built with toy"):
        calibrate_threshold(store, other, golden)


# -- the example knowledge base, real embedder --------------------------------------------------
@pytest.fixture(scope="module")
def example_kb(tmp_path_factory: pytest.TempPathFactory) -> tuple[LanceStore, Embedder]:
    """Version 1 of the example knowledge base (three tables without a description, so some
    queries miss their expected chunks) in LanceDB, embedded with the default model."""
    from recallwatch.embedders import get_embedder
    from recallwatch.ops.ingest import ingest

    store = LanceStore(tmp_path_factory.mktemp("example") / "kb", create=True)
    emb = get_embedder()
    ingest(KB / "corpus_v1.jsonl", store, emb, embedder_spec="use-multilingual")
    return store, emb


@pytest.mark.slow
def test_example_kb_answers_without_an_expected_chunk_are_wrong(
        example_kb: tuple[LanceStore, Embedder]) -> None:
    store, emb = example_kb
    golden = load_golden(KB / "golden.yaml")
    cal = calibrate_threshold(store, emb, golden)
    pos = {s.query: s for s in cal.samples if s.kind == "answerable"}
    # the real gate on the same store: a query with recall 0 has no expected chunk in its top K
    gate = run_gate(golden, store=store, embedder=emb)
    missed = {q.id for q in gate.queries if q.recall == 0}
    assert "cuota_autonomos_2000" in missed  # its table has no description in version 1
    assert {q for q, s in pos.items() if s.hit_score is None} == missed
    top_not_expected = [s for s in pos.values() if s.top_id not in
                        next(q.expected for q in golden.queries if q.id == s.query)]
    assert len(top_not_expected) > len(missed)  # some still hold an expected chunk lower down
    lowest, precision, coverage = cal.curve[0]
    answered_negatives = sum(1 for s in cal.samples if s.kind == "in-domain"
                             and s.top_score is not None and s.top_score >= lowest)
    assert coverage == 1.0
    assert precision == pytest.approx((len(pos) - len(missed)) / (len(pos) + answered_negatives))


@pytest.mark.slow
def test_example_kb_in_domain_negatives_exclude_the_answer_and_raise_the_threshold(
        example_kb: tuple[LanceStore, Embedder]) -> None:
    store, emb = example_kb
    golden = load_golden(KB / "golden.yaml")
    vectors = emb.embed_queries([q.text for q in golden.queries])
    excluded = [set(q.expected) for q in golden.queries]
    for h, ex in zip(search_excluding(store, vectors, 10, excluded), excluded, strict=True):
        assert len(h.ids) == 10 and not ex & set(h.ids)
    hard = calibrate_threshold(store, emb, golden)
    easy = calibrate_threshold(store, emb, golden, negatives="off-domain")
    in_domain = [s for s in hard.samples if s.kind == "in-domain"]
    assert len(in_domain) == len(golden.queries) == hard.unanswerable
    assert all(s.top_id not in ex for s, ex in zip(in_domain, excluded, strict=True))
    off_domain = [float(s.top_score or 0) for s in easy.samples if s.kind == "off-domain"]
    # with its answer absent, a question of the domain still finds an on-topic chunk: its best
    # score is far above an unrelated question's, so the threshold must rise to reject it
    assert np.median([float(s.top_score or 0) for s in in_domain]) > max(off_domain)
    assert hard.threshold > easy.threshold
    assert hard.coverage < easy.coverage
    assert easy.unanswerable_source.startswith("40 off-domain: shipped unrelated-domain list")


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


STRICT = Policy(noise_unlisted="irrelevant")  # every unlisted result counts as noise


def _run(ranks: dict[str, tuple[str, int | None]], policy: Policy = STRICT,
         judgments: dict[tuple[str, str], int] | None = None) -> GateResult:
    golden, results = _case(ranks)
    return run_gate(golden, results=results, policy=policy, judgments=judgments)


def test_noise_ceiling_per_domain_on_known_noise(tmp_path: Path) -> None:
    # one expected chunk at rank r of K=10 → noise = 10 - r
    ranks: dict[str, tuple[str, int | None]] = {
        "a1": ("A", 8), "a2": ("A", 9), "a3": ("A", 10), "b1": ("B", 1), "b2": ("B", 2),
        "lost": ("B", None)}
    cal = calibrate_noise(_run(ranks), min_healthy=2)
    a, b = cal.domains
    assert (a.domain, a.healthy, a.noise, a.baseline, a.suggested) == ("A", 3, (0, 1, 2), 2, 0.3)
    assert (b.domain, b.healthy, b.noise, b.baseline) == ("B", 2, (8, 9), 9)
    assert b.suggested == 0.9 and b.capped  # (9 + 1) / 10 would be 1.0: capped at (K-1)/K
    assert cal.overall is not None and cal.overall.healthy == 5  # `lost` is not healthy
    snippet = tmp_path / "policy.yaml"
    snippet.write_text(cal.policy_yaml())
    policy = load_policy(snippet)  # the snippet is a valid policy
    assert policy.noise_ceiling_per_domain == {"A": 0.3, "B": 0.9}
    assert policy.noise_ceiling == cal.overall.suggested
    # the cap is said in words, with the reason
    assert "B: capped at 0.90 (9 of 10): its healthy queries already reach noise 9, so at this " \
        "ceiling the noise rule cannot fail a query there" in cal.summary()
    # under the default ceiling (0.30) the healthy B queries fail the noise rule; under the
    # calibrated one no healthy query does
    before = _run(ranks)
    golden, results = _case(ranks)
    after = run_gate(golden, results=results, policy=replace(policy, noise_unlisted="irrelevant"))
    noisy = {q.id for q in before.queries if "noise" in q.failed_rules}
    assert noisy == {"b1", "b2"}
    assert not any("noise" in q.failed_rules for q in after.queries)


def test_a_domain_with_too_few_healthy_queries_keeps_the_default_and_is_named() -> None:
    ranks: dict[str, tuple[str, int | None]] = {
        **{f"a{i}": ("A", 7 + i % 4) for i in range(6)}, "b1": ("B", 1), "b2": ("B", 2)}
    cal = calibrate_noise(_run(ranks))
    assert [d.domain for d in cal.domains] == ["A"] and cal.domains[0].healthy == 6
    assert cal.too_few == {"B": 2}
    summary = cal.summary()
    assert "used: A 6 (6 queries)" in summary
    # B takes the snippet's default, calibrated from all 8 healthy queries: the line says
    # which value that is, the value the snippet then prints
    assert cal.overall is not None and cal.default_ceiling == cal.overall.suggested
    assert ("too few healthy queries, not calibrated (they take the default ceiling below, "
            f"{cal.overall.suggested:.2f}): B 2" in summary)
    assert f"  default: {cal.overall.suggested:.2f}\n" in cal.policy_yaml()
    assert "B:" not in cal.policy_yaml().split("per_domain:")[1]
    # with fewer healthy queries in all than needed, the default is not calibrated either
    small = calibrate_noise(_run({"b1": ("B", 1), "b2": ("B", 2)}))
    assert small.overall is None and small.domains == ()
    assert "default: 2 healthy queries in all, fewer than 5: the default stays 0.30" \
        in small.summary()
    assert "default: 0.30  # not calibrated: too few healthy queries" in small.policy_yaml()


def test_sparse_labels_are_left_out_unless_judged() -> None:
    # one expected chunk at rank 1 or 2 of 10: without judgments the other results are unknown,
    # the rule cannot measure these queries and the calibration leaves them out, saying so
    ranks: dict[str, tuple[str, int | None]] = {f"q{i}": ("A", 1 + i % 2) for i in range(6)}
    plain = _run(ranks, Policy())
    assert all(not q.noise_measured and q.passed for q in plain.queries)
    cal = calibrate_noise(plain)
    assert cal.domains == () and cal.overall is None and len(cal.unmeasured) == 6
    assert any(line.startswith("left out: 6 healthy queries whose expected lists are too short")
               for line in cal.summary())
    # judged: every other result of each top 10 judged not relevant, except one judged relevant
    judged = {(q, f"{q}-x{i}"): 0 for q in ranks for i in range(20)}
    judged[("q0", "q0-x1")] = 2
    result = _run(ranks, Policy(), judged)
    q0 = result.query("q0")
    assert q0.noise == 8 and q0.noise_unjudged == 0 and q0.noise_measured  # x1 is not noise
    assert "noise" in q0.failed_rules
    cal = calibrate_noise(result)
    assert cal.unmeasured == () and cal.domains[0].healthy == 6
    assert cal.domains[0].noise == (8, 8, 8, 8, 9, 9)


def test_noise_calibration_needs_a_healthy_query() -> None:
    result = _run({"lost": ("B", None)})
    with pytest.raises(InputError, match="at least one healthy query"):
        calibrate_noise(result)
    with pytest.raises(InputError, match="margin"):
        calibrate_noise(_run({"a": ("A", 1)}), margin=-1)


def test_a_threshold_that_misses_its_target_or_covers_too_little_is_refused() -> None:
    def point(target: str, value: float, precision: float, coverage: float,
              reached: bool) -> ThresholdCalibration:
        return ThresholdCalibration(0.4, target, value, precision, coverage,  # type: ignore[arg-type]
                                    reached, 10, 10, ())

    assert point("precision", 0.95, 0.97, 0.8, True).refusal(0.5) is None
    missed = point("precision", 0.95, 0.436, 0.9, False).refusal(0.5)
    assert missed == ("NOT stored: precision 0.436 misses the target 0.95, and no threshold "
                      "reaches it on these queries; ask for what the search can reach "
                      "(--target-precision 0.436 or lower), or improve the search and calibrate "
                      "again")
    assert point("precision", 0.95, 0.436, 0.9, False).refusal(0.0) == missed  # not waived
    assert point("coverage", 0.9, 0.8, 0.6, False).refusal(0.5).startswith(  # type: ignore[union-attr]
        "NOT stored: coverage 0.600 misses the target 0.9")
    low = point("precision", 0.95, 0.97, 0.05, True).refusal(0.5)
    assert low is not None and low.startswith("NOT stored: coverage 0.050 is under "
                                              "--min-coverage 0.5")
    assert point("precision", 0.95, 0.97, 0.05, True).refusal(0.0) is None
