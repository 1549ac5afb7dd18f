"""Data drift: how far the rows written since the index was trained are from the rows it was
trained on.

Two signals, on a sample of each side: the cosine distance between their mean embeddings, and the
share of new vectors farther from every IVF centroid than 95 % of the trained rows are (the
baseline share is 5 % by construction). Centroids are the engine's own when it exposes them
(:class:`~recallwatch.stores.base.SupportsIndexInspection`: LanceDB); otherwise faiss k-means
centroids of the trained rows. Both need the stored vectors
(:class:`~recallwatch.stores.base.SupportsVectors`).

On the same samples, a two-sample statistical test (:mod:`recallwatch.ops.drift_stats`): MMD²
with a permutation p-value, and per-dimension KS and PSI summaries.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from recallwatch.errors import NotInstalledError
from recallwatch.ops.drift_stats import PERMUTATIONS, DriftTest, drift_test
from recallwatch.stores.base import SupportsContentHashes, SupportsIndexInspection, SupportsVectors
from recallwatch.vectors import cosine_scores, normalise

if TYPE_CHECKING:
    from recallwatch.stores.base import VectorStore

__all__ = ["DriftSignal", "drift_signal"]

_DRIFT_SAMPLE = 5000
_FAR_QUANTILE = 0.95


@dataclass(frozen=True)
class DriftSignal:
    trained_version: str
    new_rows: int
    trained_rows: int
    mean_cosine_distance: float  # 1 - cos(mean of new vectors, mean of trained vectors)
    share_far: float  # new vectors beyond the trained rows' 95th-percentile centroid distance
    baseline_share_far: float  # the same share among the trained rows (≈ 0.05)
    centroids: str  # "engine (N)" or "faiss k-means (N)"
    sampled: int
    test: DriftTest | None = None  # MMD² permutation test, per-dimension KS and PSI

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def drift_signal(store: VectorStore, trained_version: str, *, seed: int = 0,
                 permutations: int = PERMUTATIONS) -> DriftSignal | None:
    """Shift between rows written after ``trained_version`` and the rows the index was trained
    on; None when nothing was written since, or the store cannot return its vectors.
    ``permutations``: the two-sample test's shuffles
    (:func:`~recallwatch.ops.drift_stats.permutations_for` an alarm threshold)."""
    new = store.ids_since(trained_version)
    if not new:
        return None
    every = (list(store.content_hashes()) if isinstance(store, SupportsContentHashes)
             else [c.id for c in store.chunks()])
    fresh = set(new)
    old = [i for i in every if i not in fresh]
    if not old or not isinstance(store, SupportsVectors):
        return None
    rng = np.random.default_rng(seed)
    pick_new = sorted(rng.choice(len(new), min(len(new), _DRIFT_SAMPLE), replace=False))
    pick_old = sorted(rng.choice(len(old), min(len(old), _DRIFT_SAMPLE), replace=False))
    new_u = normalise(store.vectors([new[i] for i in pick_new]))
    old_u = normalise(store.vectors([old[i] for i in pick_old]))
    mean_dist = 1.0 - float(cosine_scores(new_u.mean(axis=0), old_u.mean(axis=0))[0, 0])
    centroids, how = _centroids(store, old_u, seed)
    dist_old = 1.0 - cosine_scores(old_u, centroids).max(axis=1)
    dist_new = 1.0 - cosine_scores(new_u, centroids).max(axis=1)
    cut = float(np.quantile(dist_old, _FAR_QUANTILE))
    return DriftSignal(
        trained_version=str(trained_version), new_rows=len(new), trained_rows=len(old),
        mean_cosine_distance=mean_dist, share_far=float((dist_new > cut).mean()),
        baseline_share_far=float((dist_old > cut).mean()), centroids=how,
        sampled=len(pick_new) + len(pick_old),
        test=(drift_test(old_u, new_u, seed=seed, permutations=permutations)
              if len(old_u) > 1 and len(new_u) > 1 else None),
    )


def _centroids(store: VectorStore, trained: np.ndarray, seed: int) -> tuple[np.ndarray, str]:
    if isinstance(store, SupportsIndexInspection):
        engine = store.index_centroids()
        # An index folded by optimize() may report one merged partition: no structure to use.
        if engine is not None and len(engine) > 1:
            return engine, f"engine ({len(engine)})"
    try:
        import faiss
    except ImportError as exc:
        raise NotInstalledError("faiss (k-means centroids for the drift signal)", "bench") from exc

    n = max(1, min(256, int(math.sqrt(len(trained))), len(trained) // 39))
    km = faiss.Kmeans(trained.shape[1], n, niter=20, seed=seed, spherical=True, verbose=False)
    km.train(np.ascontiguousarray(trained, dtype=np.float32))
    return np.asarray(km.centroids, dtype=np.float32), f"faiss k-means ({n})"
