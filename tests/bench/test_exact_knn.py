from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from recallwatch.bench.datasets import Dataset
from recallwatch.bench.exact_knn import (
    ground_truth,
    id_recall,
    prepare,
    tie_aware_recall,
)
from recallwatch.errors import InputError
from recallwatch.formats.ann import Metric
from recallwatch.vectors import normalise


def _brute(base: np.ndarray, queries: np.ndarray, k: int, metric: str) -> np.ndarray:
    b, q = base.astype(np.float64), queries.astype(np.float64)
    if metric == "l2":
        d = ((q[:, None, :] - b[None, :, :]) ** 2).sum(2)
    elif metric == "cosine":
        d = -(q / np.linalg.norm(q, axis=1, keepdims=True)) @ (
            b / np.linalg.norm(b, axis=1, keepdims=True)).T
    else:
        d = -(q @ b.T)
    return np.argsort(d, axis=1, kind="stable")[:, :k]


@pytest.mark.parametrize("metric", ["ip", "l2", "cosine"])
def test_ground_truth_equals_numpy_brute_force(metric: str) -> None:
    rng = np.random.default_rng(3)
    base = rng.standard_normal((700, 16)).astype(np.float32) * rng.uniform(0.5, 2, (700, 1))
    queries = rng.standard_normal((23, 16)).astype(np.float32)
    truth = ground_truth(base, queries, 10, metric, block=5)  # type: ignore[arg-type]
    np.testing.assert_array_equal(truth.ids, _brute(base, queries, 10, metric))
    assert np.all(np.diff(truth.distances, axis=1) >= -1e-6)  # ascending: smaller is closer


def test_ground_truth_distances_follow_ann_benchmarks_convention() -> None:
    rng = np.random.default_rng(4)
    base = rng.standard_normal((100, 8)).astype(np.float32)
    q = rng.standard_normal((3, 8)).astype(np.float32)
    l2 = ground_truth(base, q, 5, "l2")
    expected = np.linalg.norm(q[:, None, :] - base[l2.ids], axis=2)
    np.testing.assert_allclose(l2.distances, expected, rtol=1e-4, atol=1e-4)
    cos = ground_truth(base, q, 5, "cosine")
    sims = np.einsum("qd,qkd->qk", normalise(q), normalise(base)[cos.ids])
    np.testing.assert_allclose(cos.distances, 1 - sims, atol=1e-5)


def test_ground_truth_is_cached_by_content(tmp_path: Path, small: Dataset) -> None:
    first = ground_truth(small.base, small.queries, 10, "ip", cache_dir=tmp_path)
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and first.hash[:40] in files[0].name
    again = ground_truth(small.base, small.queries, 10, "ip", cache_dir=tmp_path)
    np.testing.assert_array_equal(again.ids, first.ids)
    other = ground_truth(small.base, small.queries, 5, "ip", cache_dir=tmp_path)
    assert other.hash != first.hash and len(list(tmp_path.iterdir())) == 2


def test_ground_truth_rejects_k_beyond_the_base() -> None:
    with pytest.raises(InputError, match=r"field 'k': expected 1 ≤ k ≤ 4"):
        ground_truth(np.ones((4, 2), np.float32), np.ones((1, 2), np.float32), 5)


def test_id_recall_matches_the_chapters_set_definition() -> None:
    rng = np.random.default_rng(5)
    truth = np.stack([rng.permutation(50)[:10] for _ in range(40)])
    found = np.stack([rng.permutation(50)[:10] for _ in range(40)])
    found[0, 3:] = -1  # a short answer, padded
    expected = [len(set(a[a >= 0]) & set(e)) / len(e) for a, e in zip(found, truth, strict=True)]
    np.testing.assert_allclose(id_recall(found, truth, 10), expected)


def test_id_recall_does_not_count_a_repeated_id_twice() -> None:
    assert id_recall(np.array([[1, 1, 2]]), np.array([[1, 3, 4]]), 3)[0] == pytest.approx(1 / 3)


def test_tie_aware_recall_counts_an_equidistant_neighbour() -> None:
    rng = np.random.default_rng(6)
    base = rng.standard_normal((200, 8)).astype(np.float32)
    base[100] = base[7]  # two identical vectors: exact search keeps one of them
    q = (base[7] + 0.01 * rng.standard_normal(8)).astype(np.float32)[None, :]
    truth = ground_truth(base, q, 1, "l2")
    twin = 100 if truth.ids[0, 0] == 7 else 7
    found = np.array([[twin]])
    assert id_recall(found, truth.ids, 1)[0] == 0.0
    xb, xq = prepare(base, "l2"), prepare(q, "l2")
    assert tie_aware_recall(found, truth, xb, xq, 1)[0] == 1.0
    far = int(np.argmax(np.linalg.norm(base - q, axis=1)))
    assert tie_aware_recall(np.array([[far]]), truth, xb, xq, 1)[0] == 0.0


def test_ground_truth_runs_on_the_threads_asked_and_restores_faiss_s_setting() -> None:
    faiss = pytest.importorskip("faiss")
    rng = np.random.default_rng(5)
    base = rng.standard_normal((500, 8)).astype(np.float32)
    queries = rng.standard_normal((40, 8)).astype(np.float32)
    before = faiss.omp_get_max_threads()
    for threads in (1, 2):
        truth = ground_truth(base, queries, 5, "l2", threads=threads)
        np.testing.assert_array_equal(truth.ids, _brute(base, queries, 5, "l2"))
        assert faiss.omp_get_max_threads() == before


def test_a_block_of_a_few_hundred_queries_is_computed_as_a_large_one() -> None:
    # faiss 1.15 takes its matrix-product (BLAS) path only from 128,000 queries × dimensions
    # (1,000 queries at d = 128); ground_truth takes it from 20 queries. The scores are computed
    # again from the vectors, so 500 queries get the bits of the first 500 of a 1,000-query block
    # on any CPU (faiss's own differ in the last bit on an AMD EPYC, not on an Intel Xeon).
    import faiss

    rng = np.random.default_rng(5)
    base = rng.standard_normal((3000, 128), dtype=np.float32)
    queries = rng.standard_normal((1000, 128), dtype=np.float32)
    before = faiss.cvar.distance_compute_blas_threshold
    large = ground_truth(base, queries, 10, "ip")
    part = ground_truth(base, queries[:500], 10, "ip")
    np.testing.assert_array_equal(part.ids, _brute(base, queries[:500], 10, "ip"))
    np.testing.assert_array_equal(part.ids, large.ids[:500])
    assert part.distances.tobytes() == large.distances[:500].tobytes()
    assert faiss.cvar.distance_compute_blas_threshold == before  # faiss's setting restored


def test_the_scores_are_the_vectors_own_whatever_the_cut() -> None:
    # a base cut in shards, another thread count, another memory address: the same bytes
    import faiss

    from recallwatch.bench.exact_knn import exact_scores, merge_topk, prepare

    rng = np.random.default_rng(3)
    base = rng.standard_normal((5000, 64), dtype=np.float32)
    queries = rng.standard_normal((200, 64), dtype=np.float32)
    threads = faiss.omp_get_max_threads()
    for metric in ("ip", "l2", "cosine"):
        xb = prepare(base, metric)
        whole = exact_scores(xb, queries, 50, metric)
        moved = exact_scores(np.array(xb[:, :], copy=True), queries, 50, metric)
        faiss.omp_set_num_threads(1)
        try:
            one_thread = exact_scores(xb, queries, 50, metric)
        finally:
            faiss.omp_set_num_threads(threads)
        shards = merge_topk([(s, np.where(i >= 0, i + at, -1)) for at in range(0, 5000, 700)
                             for s, i in [exact_scores(xb[at:at + 700], queries, 50, metric)]],
                            50, metric)
        for other in (moved, one_thread, shards):
            assert other[0].tobytes() == whole[0].tobytes(), metric
            assert other[1].tobytes() == whole[1].tobytes(), metric
        vecs = xb[whole[1]].astype(np.float64)
        q = prepare(queries, metric)[:, None, :].astype(np.float64)
        exact = ((vecs - q) ** 2).sum(axis=2) if metric == "l2" else (vecs * q).sum(axis=2)
        np.testing.assert_allclose(whole[0], exact, rtol=1e-6, atol=1e-6)


def test_threads_computing_truth_at_once_get_one_thread_s_answers() -> None:
    # faiss's BLAS threshold is one global: lowered for an inner-product block, it must never be
    # seen by a search of another thread (an l2 one would change path) nor left lowered after
    from concurrent.futures import ThreadPoolExecutor

    import faiss

    rng = np.random.default_rng(9)
    base = rng.standard_normal((2000, 64), dtype=np.float32)
    queries = rng.standard_normal((60, 64), dtype=np.float32)
    before = faiss.cvar.distance_compute_blas_threshold
    metrics: list[Metric] = ["ip", "l2", "cosine"] * 6
    alone = {m: ground_truth(base, queries, 10, m) for m in set(metrics)}
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda m: ground_truth(base, queries, 10, m), metrics))
    for metric, truth in zip(metrics, together, strict=True):
        np.testing.assert_array_equal(truth.ids, alone[metric].ids)
        assert truth.distances.tobytes() == alone[metric].distances.tobytes()
    assert faiss.cvar.distance_compute_blas_threshold == before
